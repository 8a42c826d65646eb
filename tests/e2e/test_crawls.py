"""``/api/v1/crawls`` and ``taskcrawler crawl`` end to end, in both modes (SQLite and the
in-process queue; PostgreSQL and Redis), against the generated site."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from taskcrawler.domain.urls import crawl_key
from taskcrawler.domain.webhooks import verify_signature
from tests.e2e.harness import Service, ServiceFactory, fast_settings, running
from tests.e2e.test_cli_client import cli
from tests.e2e.test_webhooks import FAST_HOOKS
from tests.support.processes import ProcessManager
from tests.support.served import serve
from tests.support.site import Site, SiteHosts, SiteServer
from tests.support.webhook_receiver import webhook_receiver

SITE_OPTIONS = {"seed": 5, "pages": 200, "hosts": SiteHosts.loopback()}
PATIENCE_SECONDS = 120.0
COUNTS = ("discovered", "pending", "processing", "completed", "failed", "cancelled")


async def until_finished(service: Service, crawl_id: str, **headers: str) -> dict[str, Any]:
    """The crawl once it is no longer RUNNING and no page of it is being fetched; its counts
    add up at every look."""
    async with asyncio.timeout(PATIENCE_SECONDS):
        while True:
            response = await service.client.get(f"/api/v1/crawls/{crawl_id}", headers=headers)
            assert response.status_code == 200, response.text
            crawl = response.json()
            assert crawl["discovered"] == sum(
                crawl[name] for name in ("pending", "completed", "failed", "cancelled")
            )
            if crawl["status"] != "RUNNING" and crawl["pending"] == 0:
                return dict(crawl)
            await asyncio.sleep(0.1)


async def all_jobs(service: Service, crawl_id: str, **params: str) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {"limit": "50", **params} | ({"cursor": cursor} if cursor else {})
        response = await service.client.get(f"/api/v1/crawls/{crawl_id}/jobs", params=query)
        assert response.status_code == 200, response.text
        body = response.json()
        jobs.extend(body["jobs"])
        cursor = body["next_cursor"]
        if cursor is None:
            return jobs


async def test_a_crawl_through_the_api(
    service_factory: ServiceFactory, site_server: SiteServer, site: Site
) -> None:
    truth = site.expected_crawl()
    async with service_factory(respect_robots=True) as service:
        response = await service.client.post("/api/v1/crawls", json={"url": site.start_url})
        assert response.status_code == 201, response.text
        started = response.json()
        assert started["status"] == "RUNNING" and started["discovered"] == 1
        assert started["limit"] == 10_000 and started["sitemap"] == "include"
        assert started["formats"] == ["metadata", "markdown"] and started["render"] == "never"
        crawl = await until_finished(service, started["id"])
        jobs = await all_jobs(service, started["id"])
        failed = await all_jobs(service, started["id"], status="FAILED")
        listed = (await service.client.get("/api/v1/crawls")).json()
    assert crawl["status"] == "COMPLETED" and crawl["finished_at"] is not None
    assert crawl["discovered"] == len(truth.pages) == len(jobs)
    assert {job["url"] for job in jobs} == set(truth.pages)
    assert {job["crawl_id"] for job in jobs} == {started["id"]}
    assert {job["url"] for job in failed} == truth.disallowed | truth.failing
    assert crawl["failed"] == len(failed) and crawl["pending"] == 0
    assert [c["id"] for c in listed["crawls"]] == [started["id"]]
    assert not any("/private/" in url for url in site_server.fetched)
    pages = [u for u in site_server.fetched if not u.endswith(("/robots.txt", ".xml", ".gz"))]
    assert {crawl_key(url) for url in pages} == truth.fetchable


async def test_cancel_and_tenants(service_factory: ServiceFactory, site: Site) -> None:
    async with service_factory(auth_required=True) as service:
        mine = await service.new_key("mine")
        theirs = await service.new_key("theirs")
        response = await service.client.post(
            "/api/v1/crawls", json={"url": site.start_url, "limit": 50}, headers=mine
        )
        crawl_id = response.json()["id"]
        for method, path in (
            ("GET", f"/api/v1/crawls/{crawl_id}"),
            ("GET", f"/api/v1/crawls/{crawl_id}/jobs"),
            ("DELETE", f"/api/v1/crawls/{crawl_id}"),
        ):
            other = await service.client.request(method, path, headers=theirs)
            assert other.status_code == 404, (method, path)
        assert (await service.client.get("/api/v1/crawls", headers=theirs)).json()["crawls"] == []
        cancelled = await service.client.delete(f"/api/v1/crawls/{crawl_id}", headers=mine)
        assert cancelled.status_code == 200
        assert cancelled.json()["status"] in ("CANCELLED", "COMPLETED")
        final = await until_finished(service, crawl_id, **mine)
        unknown = await service.client.get(
            "/api/v1/crawls/00000000-0000-0000-0000-000000000000", headers=mine
        )
    assert final["status"] == cancelled.json()["status"]
    assert final["pending"] == 0 and final["discovered"] <= 50
    assert unknown.status_code == 404


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"url": "ftp://example.com/"}, ["body", "url"]),
        ({"url": "https://example.com", "limit": 101}, ["body", "limit"]),
        ({"url": "https://example.com", "limit": 0}, ["body", "limit"]),
        ({"url": "https://example.com", "max_depth": -1}, ["body", "max_depth"]),
        (
            {"url": "https://example.com", "include_paths": ["ok", "(x"]},
            ["body", "include_paths", 1],
        ),
        ({"url": "https://example.com", "exclude_paths": ["(a)\\1"]}, ["body", "exclude_paths", 0]),
        ({"url": "https://example.com", "sitemap": "maybe"}, ["body", "sitemap"]),
        ({"url": "https://example.com", "formats": ["pdf"]}, ["body", "formats", 0]),
        ({"url": "https://example.com", "depth": 3}, ["body", "depth"]),
    ],
)
async def test_bad_input_is_a_422_naming_the_field(
    service_factory: ServiceFactory, body: dict[str, object], loc: list[object]
) -> None:
    async with service_factory(crawl_max_limit=100) as service:
        response = await service.client.post("/api/v1/crawls", json=body)
        listed = (await service.client.get("/api/v1/crawls")).json()
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == loc
    assert listed["crawls"] == []


async def test_the_command_line(
    processes: ProcessManager, tmp_path: Path, sqlite_url: str, site: Site
) -> None:
    served = await serve(processes, tmp_path, sqlite_url, TASKCRAWLER_RESPECT_ROBOTS="true")
    truth = site.expected_crawl(max_depth=1)
    result = await cli(
        "crawl", site.start_url, "--max-depth", "1", "--render", "auto", "--wait", "--json",
        api=served.base_url, cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 0, result
    crawl = json.loads(result.out)
    assert crawl["status"] == "COMPLETED"
    assert crawl["discovered"] == len(truth.pages)
    assert "pages done" in result.err  # no terminal: plain progress lines
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{served.base_url}/api/v1/crawls/{crawl['id']}/jobs") as listed,
    ):
        jobs = (await listed.json())["jobs"]
    assert jobs and {job["render"] for job in jobs} == {"auto"}

    status = await cli("crawl", "status", crawl["id"], api=served.base_url, cwd=tmp_path)
    assert status.code == 0 and "COMPLETED" in status.out
    for name in COUNTS:
        assert name in status.out

    started = await cli("crawl", site.start_url, "--json", api=served.base_url, cwd=tmp_path)
    assert started.code == 0, started
    cancelled = await cli(
        "crawl", "cancel", json.loads(started.out)["id"], "--json",
        api=served.base_url, cwd=tmp_path,
    )  # fmt: skip
    assert cancelled.code == 0 and json.loads(cancelled.out)["status"] in ("CANCELLED", "COMPLETED")

    refused = await cli(
        "crawl", site.start_url, "--include", "(x", api=served.base_url, cwd=tmp_path
    )
    assert refused.code == 2 and "include_paths" in refused.err


async def test_a_completed_crawl_posts_its_signed_document(
    service_factory: ServiceFactory, site: Site
) -> None:
    async with (
        webhook_receiver() as receiver,
        service_factory(respect_robots=True, **FAST_HOOKS) as service,
    ):
        created, key = await service.services.keys.create("hooked", callback_url=receiver.url("k"))
        headers = {"Authorization": f"Bearer {created.token}"}
        response = await service.client.post(
            "/api/v1/crawls", json={"url": site.start_url, "limit": 3}, headers=headers
        )
        crawl_id = response.json()["id"]
        [got] = await receiver.wait_for("k", within=PATIENCE_SECONDS)
        crawl = await until_finished(service, crawl_id, **headers)
    assert key.webhook_secret
    assert verify_signature(
        key.webhook_secret,
        got.body,
        got.headers["X-TaskCrawler-Timestamp"],
        got.headers["X-TaskCrawler-Signature"],
    )
    assert got.headers["X-TaskCrawler-Event"] == "crawl.completed"
    assert json.loads(got.body) == crawl  # the crawl exactly as the API shows it
    assert crawl["status"] == "COMPLETED" and crawl["discovered"] == 3


async def test_a_crawl_waits_for_room_among_the_unfinished_jobs(
    sqlite_url: str, site: Site
) -> None:
    """The API without a worker: jobs stay unfinished, and at the limit a crawl is a 429."""
    settings = fast_settings(database_url=sqlite_url, max_pending_jobs=2)
    async with running("api", settings) as service:
        first = await service.client.post("/api/v1/jobs", json={"url": site.main("/docs/0")})
        crawl = await service.client.post("/api/v1/crawls", json={"url": site.start_url})
        refused = await service.client.post("/api/v1/crawls", json={"url": site.start_url})
        listed = (await service.client.get("/api/v1/crawls")).json()
    assert (first.status_code, crawl.status_code) == (201, 201)
    assert refused.status_code == 429 and "Retry-After" in refused.headers
    assert [c["id"] for c in listed["crawls"]] == [crawl.json()["id"]]
