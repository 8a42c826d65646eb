"""Firecrawl's screenshot formats and ``waitFor`` become rendered jobs, a worker without a browser
answers them with Firecrawl's errors, and a crawl's failed pages are listed at
``/v{1,2}/crawl/{id}/errors``: on both backends, through the API in process."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.e2e.harness import Service, ServiceFactory
from tests.support.render_site import RenderSite
from tests.support.target import TargetServer

NO_BROWSER = {"browser": "/nonexistent/chromium"}
DEFAULT_VIEWPORT = {"width": 1280, "height": 800}


@pytest.fixture
async def site() -> AsyncIterator[RenderSite]:
    server = await RenderSite("127.0.0.1").start()
    yield server
    await server.stop()


async def _finished_batch(http: httpx.AsyncClient, version: str, body: dict[str, Any]) -> Any:
    started = await http.post(f"/{version}/batch/scrape", json=body)
    assert started.status_code == 200, started.text
    deadline = time.monotonic() + 30
    while True:
        status = (await http.get(f"/{version}/batch/scrape/{started.json()['id']}")).json()
        if status["status"] == "completed":
            return status
        assert time.monotonic() < deadline, status
        await asyncio.sleep(0.05)


async def _render_of(service: Service, job_id: str) -> tuple[str, dict[str, Any]]:
    job = (await service.client.get(f"/api/v1/jobs/{job_id}")).json()
    return job["render"], job["render_options"]


@pytest.mark.parametrize(
    ("version", "formats", "wait_for", "full_page", "viewport", "wait_seconds"),
    [
        ("v1", ["markdown", "screenshot"], None, False, DEFAULT_VIEWPORT, 10.0),
        ("v1", ["screenshot@fullPage"], 2500, True, DEFAULT_VIEWPORT, 2.5),
        (
            "v2",
            [{"type": "screenshot", "fullPage": True, "viewport": {"width": 640, "height": 480}}],
            None,
            True,
            {"width": 640, "height": 480},
            10.0,
        ),
        ("v2", [{"type": "screenshot"}], 700, False, DEFAULT_VIEWPORT, 0.7),
        ("v2", ["markdown"], 1500, True, DEFAULT_VIEWPORT, 1.5),
    ],
)
async def test_screenshots_and_waits_render_the_pages(
    service_factory: ServiceFactory,
    site: RenderSite,
    version: str,
    formats: list[Any],
    wait_for: int | None,
    full_page: bool,
    viewport: dict[str, int],
    wait_seconds: float,
) -> None:
    """The batch's jobs render as asked; without a browser they fail render_unavailable and
    their documents say so."""
    async with service_factory(**NO_BROWSER) as service:
        http = service.client
        body: dict[str, Any] = {"urls": [site.url("/spa", host="127.0.0.1")], "formats": formats}
        if wait_for is not None:
            body["waitFor"] = wait_for
        status = await _finished_batch(http, version, body)
        [doc] = status["data"]
        assert "render_unavailable" in doc["metadata"]["error"]
        assert "screenshot" not in doc
        render, options = await _render_of(service, doc["metadata"]["scrapeId"])
        assert render == "always"
        assert options["full_page"] is full_page and options["viewport"] == viewport
        assert options["wait_seconds"] == wait_seconds
        assert options["wait_until"] == "networkidle"


async def test_without_a_browser_a_screenshot_scrape_is_a_firecrawl_error(
    service_factory: ServiceFactory, site: RenderSite
) -> None:
    async with service_factory(**NO_BROWSER) as service:
        for version, formats in (("v1", ["screenshot@fullPage"]), ("v2", [{"type": "screenshot"}])):
            url = site.url(f"/spa?{version}", host="127.0.0.1")
            answer = await service.client.post(
                f"/{version}/scrape", json={"url": url, "formats": formats}
            )
            assert answer.status_code == 500, answer.text
            body = answer.json()
            assert body["success"] is False and body["error"].startswith("render_unavailable")

        # Nothing asks for the browser: a plain scrape is not rendered, and works.
        plain = await service.client.post(
            "/v2/scrape", json={"url": site.url("/static", host="127.0.0.1"), "waitFor": 0}
        )
        assert plain.status_code == 200, plain.text
        render, options = await _render_of(service, plain.json()["data"]["metadata"]["scrapeId"])
        assert render == "never" and options is None


async def test_a_crawl_with_screenshots_renders_every_page(
    service_factory: ServiceFactory, site: RenderSite
) -> None:
    async with service_factory(**NO_BROWSER) as service:
        http = service.client
        scrape_options = {"formats": ["markdown", {"type": "screenshot"}], "waitFor": 3000}
        started = await http.post(
            "/v2/crawl",
            json={
                "url": site.url("/spa", host="127.0.0.1"),
                "maxDiscoveryDepth": 0,
                "scrapeOptions": scrape_options,
            },
        )
        assert started.status_code == 200, started.text
        crawl_id = started.json()["id"]
        deadline = time.monotonic() + 30
        while (status := (await http.get(f"/v2/crawl/{crawl_id}")).json())["status"] != (
            "completed"
        ):
            assert time.monotonic() < deadline, status
            await asyncio.sleep(0.05)
        [doc] = status["data"]
        render, options = await _render_of(service, doc["metadata"]["scrapeId"])
        assert render == "always" and options["full_page"] is False
        assert options["wait_seconds"] == 3.0

        errors = (await http.get(f"/v2/crawl/{crawl_id}/errors")).json()
        assert errors["robotsBlocked"] == []
        [error] = errors["errors"]
        assert error["id"] == doc["metadata"]["scrapeId"]
        assert error["code"] == "render_unavailable" and "render_unavailable" in error["error"]


async def _crawled(http: httpx.AsyncClient, version: str, body: dict[str, Any]) -> str:
    started = await http.post(f"/{version}/crawl", json={"sitemap": "skip", **body})
    assert started.status_code == 200, started.text
    crawl_id: str = started.json()["id"]
    deadline = time.monotonic() + 30
    while (await http.get(f"/{version}/crawl/{crawl_id}")).json()["status"] != "completed":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    return crawl_id


async def test_a_crawls_errors_and_robots_refusals(
    service_factory: ServiceFactory, target: TargetServer
) -> None:
    target.robots_txt = "User-agent: *\nDisallow: /page/2\n"
    async with service_factory(respect_robots=True, max_retries=0) as service:
        http = service.client
        for version in ("v1", "v2"):
            blocked = await _crawled(
                http, version, {"url": target.url("/page/0"), "maxDiscoveryDepth": 3}
            )
            found = (await http.get(f"/{version}/crawl/{blocked}/errors")).json()
            assert found == {"errors": [], "robotsBlocked": [target.url("/page/2")]}

        broken = await _crawled(http, "v2", {"url": target.url("/status/500")})
        found = (await http.get(f"/v1/crawl/{broken}/errors")).json()
        assert found["robotsBlocked"] == []
        [error] = found["errors"]
        assert error["url"] == target.url("/status/500")
        assert error["code"] == "http_5xx" and "500" in error["error"]
        assert uuid.UUID(error["id"]) and error["timestamp"]

        other = await service.new_key("other")
        for crawl_id in (broken, str(uuid.uuid4())):
            hidden = await http.get(f"/v2/crawl/{crawl_id}/errors", headers=other)
            assert hidden.status_code == 404 and hidden.json()["success"] is False


async def test_a_screenshot_of_a_page_scraped_without_one_renders_it(
    service_factory: ServiceFactory, target: TargetServer
) -> None:
    """The job gains the format and renders (tests/browser/test_firecrawl_screenshots.py takes
    the picture); here the worker has no browser, and the error says how to get one."""
    async with service_factory(**NO_BROWSER) as service:
        url = target.url("/title/Once")
        first = await service.client.post("/v2/scrape", json={"url": url})
        assert first.status_code == 200, first.text
        scrape_id = first.json()["data"]["metadata"]["scrapeId"]
        for max_age in (None, 0):
            body: dict[str, Any] = {"url": url, "formats": ["screenshot"]}
            if max_age is not None:
                body["maxAge"] = max_age
            again = await service.client.post("/v2/scrape", json=body)
            assert again.status_code == 500, again.text
            error = again.json()["error"]
            assert error.startswith("render_unavailable") and "apt-get install chromium" in error
        render, _ = await _render_of(service, scrape_id)
        job = (await service.client.get(f"/api/v1/jobs/{scrape_id}")).json()
    assert render == "always" and "screenshot" in job["formats"]
