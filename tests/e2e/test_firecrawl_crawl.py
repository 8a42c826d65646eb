"""Firecrawl's crawl (start, status with pagination, cancel) through the official
``firecrawl-py`` SDK, v2 and v1, against a running TaskCrawler crawling the local target site.

The target's ``/page/N`` links to ``/page/N+1`` and ``/page/N-1``, so a crawl from ``/page/0``
``d`` hops deep holds exactly ``/page/0`` … ``/page/d``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.support.firecrawl_sdk import v1_client, v2_client
from tests.support.processes import ProcessManager
from tests.support.served import FIRECRAWL_ENV, Served, serve
from tests.support.target import TargetServer

#: A screenshot in JPEG quality: TaskCrawler's are PNG.
SHOT_Q = {"type": "screenshot", "quality": 1}
SHOT_AT = "scrapeOptions.formats[0]"


def _pages(target: TargetServer, depth: int) -> set[str]:
    return {target.url(f"/page/{n}") for n in range(depth + 1)}


async def test_the_v2_sdk_crawls_pages_and_cancels(
    firecrawl_served: Served, target: TargetServer
) -> None:
    key = await firecrawl_served.new_key("crawler")
    fc = v2_client(key, firecrawl_served.base_url)
    start = target.url("/page/0")

    job = await asyncio.to_thread(
        fc.crawl,
        start,
        max_discovery_depth=3,
        sitemap="skip",
        formats=["markdown", "links"],
        poll_interval=1,
        timeout=120,
    )
    assert job.status == "completed" and (job.completed, job.total) == (4, 4)
    assert {doc.metadata.source_url for doc in job.data} == _pages(target, 3)
    for doc in job.data:
        number = doc.metadata.source_url.rsplit("/", 1)[1]
        assert f"This is page {number}" in doc.markdown
        assert target.url(f"/page/{int(number) + 1}") in doc.links
    # Nothing left to cancel: Firecrawl's 409, which the SDK reads as False.
    assert await asyncio.to_thread(fc.cancel_crawl, job.id) is False

    # Limit, excludePaths: pages 0, 1, 2 and 4 of a chain whose 3 is left out (so 4 is not
    # reached either: exclusion cuts the chain).
    cut = await asyncio.to_thread(
        fc.crawl, start, exclude_paths=["^/page/3$"], limit=10, sitemap="skip", poll_interval=1
    )
    assert {doc.metadata.source_url for doc in cut.data} == _pages(target, 2)

    # An endless chain, cancelled while it runs.
    endless = await asyncio.to_thread(fc.start_crawl, start, sitemap="skip", limit=10_000)
    assert endless.url.endswith(f"/v2/crawl/{endless.id}")
    assert await asyncio.to_thread(fc.cancel_crawl, endless.id) is True
    status = await asyncio.to_thread(fc.get_crawl_status, endless.id)
    assert status.status == "cancelled"
    assert status.completed < 10_000


async def test_the_status_pages_with_next(firecrawl_served: Served, target: TargetServer) -> None:
    key = await firecrawl_served.new_key("pager")
    fc = v2_client(key, firecrawl_served.base_url)
    done = await asyncio.to_thread(
        fc.crawl, target.url("/page/0"), max_discovery_depth=4, sitemap="skip", poll_interval=1
    )
    assert done.status == "completed" and len(done.data) == 5

    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(
        base_url=firecrawl_served.base_url, headers=headers, timeout=30
    ) as http:
        first = (await http.get(f"/v2/crawl/{done.id}", params={"limit": 2})).json()
    assert len(first["data"]) == 2 and first["next"]
    seen = [doc["metadata"]["sourceURL"] for doc in first["data"]]
    following = first["next"]
    pages = 1
    while following:
        page = await asyncio.to_thread(fc.get_crawl_status_page, following)
        assert page.status == "completed" and page.total == 5
        seen += [doc.metadata.source_url for doc in page.data]
        following = page.next
        pages += 1
    assert pages == 3  # 2 + 2 + 1
    assert sorted(seen) == sorted(_pages(target, 4))  # each document exactly once


# The v1 SDK still calls pydantic's v1-style .dict().
@pytest.mark.filterwarnings("ignore:The `dict` method is deprecated:DeprecationWarning")
async def test_the_v1_sdk_crawls_and_cancels(
    firecrawl_served: Served, target: TargetServer
) -> None:
    key = await firecrawl_served.new_key("crawler-v1")
    app = v1_client(key, firecrawl_served.base_url)
    done = await asyncio.to_thread(
        app.crawl_url, target.url("/page/0"), max_depth=2, ignore_sitemap=True, poll_interval=1
    )
    assert done.status == "completed" and done.total == 3
    assert {doc.metadata["sourceURL"] for doc in done.data} == _pages(target, 2)

    started = await asyncio.to_thread(
        app.async_crawl_url, target.url("/page/0"), ignore_sitemap=True
    )
    cancelled = await asyncio.to_thread(app.cancel_crawl, started.id)
    assert cancelled["status"] == "cancelled"
    assert (await asyncio.to_thread(app.check_crawl_status, started.id)).status == "cancelled"


async def test_crawl_refusals_name_the_field(
    firecrawl_served: Served, target: TargetServer
) -> None:
    key = await firecrawl_served.new_key("refused")
    url = target.url("/page/0")
    async with httpx.AsyncClient(
        base_url=firecrawl_served.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as http:
        for version in ("v1", "v2"):
            for body, named in [
                ({"url": url, "prompt": "the blog"}, "prompt"),
                ({"url": url, "ignoreRobotsTxt": True}, "ignoreRobotsTxt"),
                ({"url": url, "webhook": "ftp://example.com/hook"}, "webhook.url"),
                ({"url": url, "delay": 61}, "delay"),
                ({"url": url, "maxConcurrency": 0}, "maxConcurrency"),
                ({"url": url, "scrapeOptions": {"formats": ["summary"]}}, "summary"),
                (
                    {"url": url, "scrapeOptions": {"formats": [SHOT_Q]}},
                    "scrapeOptions.formats[0].quality",
                ),
                ({"url": url, "scrapeOptions": {"waitFor": 90_000}}, "waitFor"),
                (
                    {"url": url, "scrapeOptions": {"formats": ["markdown", "changeTracking"]}},
                    "scrapeOptions.formats: changeTracking",
                ),
                ({"url": url, "scrapeOptions": {"excludeTags": ["a:hover"]}}, "excludeTags[0]"),
                ({"url": url, "includePaths": ["(?=lookahead)"]}, "includePaths[0]"),
                ({"url": url, "limit": 0}, "limit"),
                ({"url": url, "sitemap": "sometimes"}, "sitemap"),
                ({"url": url, "frobnicate": True}, "frobnicate"),
                ({"url": "ftp://example.com/"}, "url"),
            ]:
                refused = await http.post(f"/{version}/crawl", json=body)
                assert refused.status_code == 400, (version, body, refused.text)
                answer = refused.json()
                assert answer["success"] is False and named in answer["error"], answer

        started = await http.post("/v2/crawl", json={"url": url, "maxDiscoveryDepth": 0})
        assert started.status_code == 200, started.text
        crawl_id = started.json()["id"]
        other = {"Authorization": f"Bearer {await firecrawl_served.new_key('other')}"}
        for method in ("GET", "DELETE"):
            hidden = await http.request(method, f"/v2/crawl/{crawl_id}", headers=other)
            assert hidden.status_code == 404 and hidden.json()["success"] is False
        bad_cursor = await http.get(f"/v2/crawl/{crawl_id}", params={"cursor": "nonsense"})
        assert bad_cursor.status_code == 400 and bad_cursor.json()["success"] is False


@pytest.mark.filterwarnings("ignore:The `dict` method is deprecated:DeprecationWarning")
async def test_the_sdks_read_a_crawls_errors(
    processes: ProcessManager, tmp_path: Path, sqlite_url: str, target: TargetServer
) -> None:
    target.robots_txt = "User-agent: *\nDisallow: /page/2\n"
    served = await serve(
        processes, tmp_path, sqlite_url, **FIRECRAWL_ENV, TASKCRAWLER_RESPECT_ROBOTS="true"
    )
    key = await served.new_key("errors")
    fc = v2_client(key, served.base_url)
    done = await asyncio.to_thread(
        fc.crawl, target.url("/page/0"), max_discovery_depth=3, sitemap="skip", poll_interval=1
    )
    assert {doc.metadata.source_url for doc in done.data} >= _pages(target, 1)
    found = await asyncio.to_thread(fc.get_crawl_errors, done.id)
    assert found.errors == [] and found.robots_blocked == [target.url("/page/2")]

    broken = await asyncio.to_thread(
        fc.crawl, target.url("/status/503"), sitemap="skip", poll_interval=1
    )
    found = await asyncio.to_thread(fc.get_crawl_errors, broken.id)
    [error] = found.errors
    assert error.url == target.url("/status/503") and error.code == "http_5xx"
    assert "503" in error.error and error.timestamp is not None

    app = v1_client(key, served.base_url)
    v1 = await asyncio.to_thread(app.check_crawl_errors, broken.id)
    assert [e.url for e in v1.errors] == [target.url("/status/503")] and v1.robotsBlocked == []
