"""A crawl's per-page webhooks (``webhook_events``) and its ``max_age``, end to end in both modes
(SQLite and the in-process queue; PostgreSQL and Redis), against a small local site that counts
the requests it answers."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from taskcrawler.domain.webhooks import verify_signature
from tests.e2e.harness import Service, ServiceFactory
from tests.e2e.test_crawls import until_finished
from tests.e2e.test_webhooks import FAST_HOOKS
from tests.support.services import free_port
from tests.support.webhook_receiver import webhook_receiver

#: path -> (status, the paths it links to): four pages that answer and one that is missing.
PAGES: dict[str, tuple[int, tuple[str, ...]]] = {
    "/": (200, ("/a", "/b", "/missing")),
    "/a": (200, ("/c", "/")),
    "/b": (200, ("/a",)),
    "/c": (200, ()),
    "/missing": (404, ()),
}
ANSWERED = {path for path, (code, _) in PAGES.items() if code == 200}


class Site:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.hits: Counter[str] = Counter()

    @property
    def start(self) -> str:
        return self.base_url + "/"


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    found: Site | None = None

    async def handle(request: web.Request) -> web.Response:
        assert found is not None
        found.hits[request.path] += 1
        if request.path not in PAGES:
            return web.Response(status=404, text="no such page")
        code, links = PAGES[request.path]
        anchors = "".join(f"<a href='{link}'>{link}</a> " for link in links)
        body = (
            f"<html><head><title>Page {request.path}</title></head>"
            f"<body><h1>Page {request.path}</h1><p>{anchors}</p></body></html>"
        )
        return web.Response(status=code, text=body, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{path:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    found = Site(f"http://127.0.0.1:{port}")
    try:
        yield found
    finally:
        await runner.cleanup()


async def start_crawl(service: Service, body: dict[str, Any], **headers: str) -> str:
    # Sitemaps are read afresh by every crawl: skipped here, so every request is a page's.
    response = await service.client.post(
        "/api/v1/crawls", json={"sitemap": "skip", **body}, headers=headers
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def crawl_jobs(service: Service, crawl_id: str, **headers: str) -> list[dict[str, Any]]:
    response = await service.client.get(
        f"/api/v1/crawls/{crawl_id}/jobs", params={"limit": "500"}, headers=headers
    )
    assert response.status_code == 200, response.text
    return list(response.json()["jobs"])


async def settled_deliveries(service: Service, job_id: str) -> list[dict[str, Any]]:
    """A job's deliveries once none is PENDING."""
    async with asyncio.timeout(30):
        while True:
            response = await service.client.get(f"/api/v1/jobs/{job_id}/deliveries")
            assert response.status_code == 200, response.text
            found: list[dict[str, Any]] = response.json()
            if all(d["status"] != "PENDING" for d in found):
                return found
            await asyncio.sleep(0.05)


def path_of(url: str, site: Site) -> str:
    return url.removeprefix(site.base_url)


# --- crawl.page -----------------------------------------------------------------------------


async def test_every_finished_page_is_announced_once_and_signed(
    service_factory: ServiceFactory, site: Site
) -> None:
    async with webhook_receiver() as receiver, service_factory(**FAST_HOOKS) as service:
        crawl_id = await start_crawl(
            service,
            {
                "url": site.start,
                "callback_url": receiver.url("crawl"),
                "webhook_events": ["crawl.page", "crawl.completed"],
            },
        )
        # five pages, then the crawl
        await receiver.wait_for("crawl", len(PAGES) + 1, within=60)
        crawl = await until_finished(service, crawl_id)
        jobs = {job["id"]: job for job in await crawl_jobs(service, crawl_id)}
        deliveries = {job_id: await settled_deliveries(service, job_id) for job_id in jobs}
        got = receiver.for_name("crawl")  # all of them, once every delivery settled
    pages = [r for r in got if r.headers["X-TaskCrawler-Event"] == "crawl.page"]
    [completed] = [r for r in got if r.headers["X-TaskCrawler-Event"] == "crawl.completed"]
    assert len(got) == len(PAGES) + 1  # nothing twice
    for received in got:
        assert verify_signature(
            "anonymous-secret",
            received.body,
            received.headers["X-TaskCrawler-Timestamp"],
            received.headers["X-TaskCrawler-Signature"],
        )
    # Each body is the page's job exactly as the API shows it, once per page.
    bodies = [json.loads(r.body) for r in pages]
    assert sorted(body["id"] for body in bodies) == sorted(jobs)
    for body in bodies:
        assert body == jobs[body["id"]]
        assert body["crawl_id"] == crawl_id
    statuses = Counter(body["status"] for body in bodies)
    assert statuses == {"COMPLETED": len(ANSWERED), "FAILED": 1}
    assert {path_of(b["url"], site) for b in bodies if b["status"] == "FAILED"} == {"/missing"}
    # The delivery records say the same: one crawl.page per page, delivered.
    for found in deliveries.values():
        page_events = [d for d in found if d["event"] == "crawl.page"]
        assert [(d["status"], d["attempts"]) for d in page_events] == [("DELIVERED", 1)]
    assert json.loads(completed.body) == crawl
    assert crawl["webhook_events"] == ["crawl.page", "crawl.completed"]
    assert (crawl["status"], crawl["completed"], crawl["failed"]) == ("COMPLETED", 4, 1)


async def test_pages_only_and_the_default_completed_only(
    service_factory: ServiceFactory, site: Site
) -> None:
    async with webhook_receiver() as receiver, service_factory(**FAST_HOOKS) as service:
        pages_only = await start_crawl(
            service,
            {
                "url": site.start,
                "callback_url": receiver.url("pages"),
                "webhook_events": ["crawl.page"],
            },
        )
        default = await start_crawl(
            service, {"url": site.start, "callback_url": receiver.url("default")}
        )
        for crawl_id in (pages_only, default):
            await until_finished(service, crawl_id)
        # Every delivery is queued with the outcome that causes it: settled ones are all.
        for crawl_id in (pages_only, default):
            for job in await crawl_jobs(service, crawl_id):
                await settled_deliveries(service, job["id"])
    events = Counter(
        (r.name, r.headers["X-TaskCrawler-Event"]) for r in receiver.received if r.answered == 204
    )
    assert events == {("pages", "crawl.page"): len(PAGES), ("default", "crawl.completed"): 1}


async def test_page_webhooks_need_a_callback_url(service_factory: ServiceFactory) -> None:
    async with service_factory() as service:
        missing = await service.client.post(
            "/api/v1/crawls",
            json={"url": "http://127.0.0.1:9/", "webhook_events": ["crawl.page"]},
        )
        unknown = await service.client.post(
            "/api/v1/crawls",
            json={
                "url": "http://127.0.0.1:9/",
                "callback_url": "http://127.0.0.1:9/hook",
                "webhook_events": ["job.completed"],
            },
        )
        listed = (await service.client.get("/api/v1/crawls")).json()
    assert missing.status_code == 422
    assert "webhook_events" in missing.text and "callback_url" in missing.text
    assert unknown.status_code == 422 and "webhook_events" in unknown.text
    assert listed["crawls"] == []  # nothing was started


# --- max_age ----------------------------------------------------------------------------------


async def test_max_age_reuses_the_tenants_recent_pages(
    service_factory: ServiceFactory, site: Site
) -> None:
    async with service_factory(auth_required=True) as service:
        owner = await service.new_key("owner")
        other = await service.new_key("other")

        async def crawl(headers: dict[str, str], **options: Any) -> tuple[dict[str, Any], Counter]:
            site.hits.clear()
            crawl_id = await start_crawl(service, {"url": site.start, **options}, **headers)
            finished = await until_finished(service, crawl_id, **headers)
            return finished, Counter(site.hits)

        first, first_hits = await crawl(owner)
        # Another format than the first crawl kept: extracted from the stored copy.
        reused, reused_hits = await crawl(owner, max_age=3600, formats=["markdown"])
        reused_jobs = await crawl_jobs(service, reused["id"], **owner)
        page_c = next(j for j in reused_jobs if path_of(j["url"], site) == "/c")
        markdown = await service.client.get(
            f"/api/v1/jobs/{page_c['id']}/content", params={"format": "markdown"}, headers=owner
        )
        strangers, strangers_hits = await crawl(other, max_age=3600)
        stale, stale_hits = await crawl(owner, max_age=0)

    every_page = Counter(dict.fromkeys(PAGES, 1))
    assert first_hits == every_page
    # The pages the owner scraped are reused; the one that failed is tried again.
    assert reused_hits == {"/missing": 1}
    assert strangers_hits == every_page  # another tenant's pages are never reused
    assert stale_hits == every_page  # max_age 0: nothing is recent enough
    for finished in (first, reused, strangers, stale):
        # Links were followed from the reused copies: the same pages, the same counts.
        assert finished["status"] == "COMPLETED"
        assert (finished["discovered"], finished["completed"], finished["failed"]) == (5, 4, 1)
    assert reused["max_age"] == 3600
    titles = {path_of(j["url"], site): j["scraped_title"] for j in reused_jobs}
    assert titles == {path: f"Page {path}" for path in ANSWERED} | {"/missing": None}
    assert markdown.status_code == 200 and "# Page /c" in markdown.text


async def test_max_age_reuses_a_plain_jobs_page(
    service_factory: ServiceFactory, site: Site
) -> None:
    async with service_factory() as service:
        job = await service.scrape(site.base_url + "/b")
        assert job["status"] == "COMPLETED"
        site.hits.clear()
        crawl_id = await start_crawl(service, {"url": site.start, "max_age": 3600})
        crawl = await until_finished(service, crawl_id)
    # /b was scraped as a job: the crawl reads its copy and follows its link to /a.
    assert site.hits == {path: 1 for path in PAGES if path != "/b"}
    assert (crawl["discovered"], crawl["completed"], crawl["failed"]) == (5, 4, 1)
