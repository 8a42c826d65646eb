"""Monitors through the HTTP API, in both modes, with the real scheduler of the worker: create,
the first runs, a change reported with its diff, old runs and the diff of two, pause, tenant
isolation, bad input, delete."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.harness import Service, ServiceFactory
from tests.support.changing_site import NOISE_SELECTORS, ChangingSiteServer, start_changing_site
from tests.support.patch import apply_patch

FAST = {"monitor_min_interval_seconds": 0.1, "monitor_poll_seconds": 0.05}


@pytest.fixture
def site() -> Iterator[ChangingSiteServer]:
    server = start_changing_site(seed=7, per_kind=1)
    try:
        yield server
    finally:
        server.close()


async def until(service: Service, path: str, done: Any, headers: dict[str, str]) -> Any:
    """Poll ``path`` until ``done(body)``: the scheduler runs on the real clock here."""
    deadline = time.monotonic() + 20
    while True:
        response = await service.client.get(path, headers=headers)
        assert response.status_code == 200, response.text
        body = response.json()
        if done(body):
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never got there: {body}")
        await asyncio.sleep(0.05)


async def runs_read(service: Service, job_id: str, run: int, headers: dict[str, str]) -> None:
    deadline = time.monotonic() + 20
    path = f"/api/v1/jobs/{job_id}/runs/{run}"
    while (await service.client.get(path, headers=headers)).status_code != 200:
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run} of {job_id} never read")
        await asyncio.sleep(0.05)


async def test_a_monitor_reports_a_change_with_its_diff(
    service_factory: ServiceFactory, site: ChangingSiteServer
) -> None:
    async with service_factory(**FAST) as service:
        alice, bob = await service.new_key("alice"), await service.new_key("bob")
        urls = [site.url("/etag/0"), site.url("/mixed/0")]
        created = await service.client.post(
            "/api/v1/monitors",
            json={
                "urls": urls,
                "interval_seconds": 0.3,
                "ignore_selectors": list(NOISE_SELECTORS),
                "formats": ["markdown"],
            },
            headers=alice,
        )
        assert created.status_code == 201, created.text
        monitor = created.json()
        assert monitor["status"] == "ACTIVE" and monitor["urls"] == urls
        jobs = {page["url"]: page["job_id"] for page in monitor["pages"]}
        etag_job = jobs[site.url("/etag/0")]
        path = f"/api/v1/monitors/{monitor['id']}"
        # The baseline run of each page, then a few rounds of nothing but noise.
        await runs_read(service, etag_job, 0, alice)
        await runs_read(service, jobs[site.url("/mixed/0")], 2, alice)
        assert (await service.client.get(f"{path}/changes", headers=alice)).json()["changes"] == []
        edit = site.site.change("/etag/0")
        body = await until(service, f"{path}/changes", lambda b: b["changes"], alice)
        [change] = body["changes"]
        assert (change["kind"], change["url"], change["job_id"]) == ("changed", urls[0], etag_job)
        old, new = change["previous_run"], change["run"]
        before = await service.client.get(f"/api/v1/jobs/{etag_job}/runs/{old}", headers=alice)
        after = await service.client.get(f"/api/v1/jobs/{etag_job}/runs/{new}", headers=alice)
        assert apply_patch(before.json()["markdown"], change["diff"]) == after.json()["markdown"]
        assert f"-{edit.old}" in change["diff"] and f"+{edit.new}" in change["diff"]
        diff = await service.client.get(
            f"/api/v1/jobs/{etag_job}/diff", params={"from": old, "to": new}, headers=alice
        )
        assert diff.status_code == 200
        assert diff.json()["diff"] == change["diff"]
        assert (diff.json()["from"], diff.json()["to"]) == (old, new)

        # Another tenant finds none of it.
        for method, other in [
            ("GET", path),
            ("PATCH", path),
            ("DELETE", path),
            ("GET", f"{path}/changes"),
            ("GET", f"/api/v1/jobs/{etag_job}/runs/{old}"),
            ("GET", f"/api/v1/jobs/{etag_job}/diff?from={old}&to={new}"),
        ]:
            kwargs: dict[str, Any] = {"json": {"paused": True}} if method == "PATCH" else {}
            response = await service.client.request(method, other, headers=bob, **kwargs)
            assert response.status_code == 404, (method, other)
        assert (await service.client.get("/api/v1/monitors", headers=bob)).json()["monitors"] == []
        listed = (await service.client.get("/api/v1/monitors", headers=alice)).json()
        assert [m["id"] for m in listed["monitors"]] == [monitor["id"]]

        paused = await service.client.patch(path, json={"paused": True}, headers=alice)
        assert paused.json()["status"] == "PAUSED" and paused.json()["next_run_at"] is None
        resumed = await service.client.patch(
            path, json={"paused": False, "interval_seconds": 60}, headers=alice
        )
        assert resumed.json()["status"] == "ACTIVE"
        assert resumed.json()["interval_seconds"] == 60

        assert (await service.client.delete(path, headers=alice)).status_code == 204
        assert (await service.client.get(path, headers=alice)).status_code == 404
        gone = await service.client.get(f"/api/v1/jobs/{etag_job}", headers=alice)
        assert gone.status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "http://a.test/", "interval_seconds": 0.01}, "interval_seconds"),
        ({"interval_seconds": 60}, "url"),
        ({"url": "ftp://a.test/", "interval_seconds": 60}, "url"),
        ({"url": "http://a.test/", "urls": ["http://b.test/"], "interval_seconds": 60}, "urls"),
        ({"url": "http://a.test/", "interval_seconds": 60, "ignore_selectors": ["p:has(a)"]}, None),
        ({"crawl": {"url": "http://a.test/", "limit": 0}, "interval_seconds": 60}, "limit"),
        ({"crawl": {"url": "http://a.test/", "depth": 2}, "interval_seconds": 60}, "depth"),
        ({"url": "http://a.test/", "interval_seconds": 60, "formats": ["pdf"]}, "formats"),
        (
            {
                "crawl": {"url": "http://a.test/", "options": {"frobnicate": 1}},
                "interval_seconds": 60,
            },
            "frobnicate",
        ),
        ({"crawl": {"url": "http://a.test/", "options": []}, "interval_seconds": 60}, "options"),
        (
            {"crawl": {"url": "http://a.test/", "include_paths": 5}, "interval_seconds": 60},
            "include_paths",
        ),
        (
            {"crawl": {"url": "http://a.test/", "exclude_paths": None}, "interval_seconds": 60},
            "exclude_paths",
        ),
        (
            {
                "crawl": {"url": "http://a.test/", "render_options": {"wait_seconds": 10**6}},
                "interval_seconds": 60,
            },
            "wait_seconds",
        ),
    ],
)
async def test_bad_monitors_are_refused(
    service: Service, body: dict[str, Any], field: str | None
) -> None:
    response = await service.client.post("/api/v1/monitors", json=body)
    assert response.status_code == 422, response.text
    if field is not None:
        assert field in str(response.json()["detail"])
    assert (await service.client.get("/api/v1/monitors")).json()["monitors"] == []


async def test_a_crawl_monitor_is_created_with_its_crawl(service: Service) -> None:
    body = {"crawl": {"url": "http://a.test/", "limit": 50}, "interval_seconds": 60}
    created = await service.client.post("/api/v1/monitors", json=body)
    assert created.status_code == 201, created.text
    monitor = created.json()
    assert monitor["urls"] == [] and monitor["pages"] == []
    assert monitor["crawl"]["url"] == "http://a.test/" and monitor["crawl"]["limit"] == 50
    again = await service.client.get(f"/api/v1/monitors/{monitor['id']}")
    assert again.json()["crawl"] == monitor["crawl"]


async def test_a_crawl_monitors_pages_are_read_with_the_options_it_gives(
    service: Service,
) -> None:
    """A crawl monitor's page options are read as a crawl request's are."""
    crawl = {
        "url": "http://a.test/",
        "render": "auto",
        "render_options": {"wait_seconds": 2},
        "options": {"only_main_content": False},
    }
    created = await service.client.post(
        "/api/v1/monitors", json={"crawl": crawl, "interval_seconds": 60}
    )
    assert created.status_code == 201, created.text
    kept = created.json()["crawl"]
    assert kept["render"] == "auto" and kept["render_options"]["wait_seconds"] == 2
    assert kept["options"]["only_main_content"] is False


async def test_a_crawl_monitor_shows_its_request_headers_by_name_only(service: Service) -> None:
    """A crawl monitor's request headers (cookies, tokens) reach its pages, never an answer:
    its crawl is shown with their names, as a crawl's options are."""
    crawl = {"url": "http://a.test/", "options": {"headers": {"Authorization": "Bearer s3cret"}}}
    created = await service.client.post(
        "/api/v1/monitors", json={"crawl": crawl, "interval_seconds": 60}
    )
    assert created.status_code == 201, created.text
    path = f"/api/v1/monitors/{created.json()['id']}"
    answers = [
        created,
        await service.client.get(path),
        await service.client.get("/api/v1/monitors"),
    ]
    for answer in answers:
        assert "s3cret" not in answer.text
    assert created.json()["crawl"]["options"]["headers"] == ["Authorization"]
    [kept], _ = await service.storage.monitors.list_monitors("", limit=1)
    assert kept.spec.crawl is not None  # the pages are still fetched with the values
    assert kept.spec.crawl.pages.options.headers == (("Authorization", "Bearer s3cret"),)
