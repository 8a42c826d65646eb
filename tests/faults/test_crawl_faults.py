"""A crawl survives its workers and its queue: real ``taskcrawler`` processes on PostgreSQL and
Redis, crawling the generated site. ``kill -9`` of a worker mid-crawl, or Redis emptied, and the
crawl still ends COMPLETED with exactly the pages in scope, each fetched once but for those the
dead worker was fetching."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import pytest
import sqlalchemy as sa
from redis import asyncio as aioredis

from taskcrawler.domain.urls import crawl_key
from tests.faults.kit import Deployment
from tests.support.processes import ManagedProcess
from tests.support.site import CrawlTruth, Site, SiteHosts, SiteServer
from tests.support.webhook_receiver import webhook_receiver

#: Every kind of page the generated site has, about 110 of them in scope: enough for a fault to
#: land mid-crawl (after 40 pages) with most of the crawl still to come.
SITE_OPTIONS = {"seed": 3, "pages": 150, "archive_pages": 40, "hosts": SiteHosts.loopback()}
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
#: Slows the crawl (one host: a start every 20 ms at most) so that a fault lands mid-crawl.
CRAWL_SETTINGS = {"respect_robots": True, "host_delay_seconds": 0.02, "worker_concurrency": 8}


async def crawl_state(d: Deployment, crawl_id: str) -> dict[str, Any]:
    status, body = await d.request("GET", f"/api/v1/crawls/{crawl_id}")
    assert status == 200 and body is not None, (status, body)
    assert body["discovered"] == sum(
        body[name] for name in ("pending", "completed", "failed", "cancelled")
    )
    return body


async def wait_crawl(d: Deployment, crawl_id: str, done: Any, *, within: float) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        crawl = await crawl_state(d, crawl_id)
        if done(crawl):
            return crawl
        if time.monotonic() > deadline:
            raise AssertionError(f"crawl not done after {within} s: {crawl}")
        await asyncio.sleep(0.1)


async def page_ids(d: Deployment, crawl_id: str, *statuses: str) -> list[str]:
    return await page_column(d, crawl_id, "id", *statuses)


async def page_urls(d: Deployment, crawl_id: str, *statuses: str) -> list[str]:
    return await page_column(d, crawl_id, "url", *statuses)


async def page_deliveries(d: Deployment, crawl_id: str) -> dict[str, str]:
    """The crawl.page deliveries of a crawl's pages: delivery id -> job id."""
    statement = sa.text(
        "SELECT d.id, d.job_id FROM webhook_deliveries d JOIN jobs j ON j.id = d.job_id "
        "WHERE j.crawl_id = :crawl AND d.event = 'crawl.page'"
    )
    async with d._engine.connect() as conn:
        rows = await conn.execute(statement, {"crawl": crawl_id})
        return {str(row.id): str(row.job_id) for row in rows}


async def page_column(d: Deployment, crawl_id: str, column: str, *statuses: str) -> list[str]:
    query = f"SELECT {column} AS value FROM jobs WHERE crawl_id = :crawl"
    if statuses:
        query += " AND status IN :statuses"
    statement = sa.text(query)
    params: dict[str, Any] = {"crawl": crawl_id}
    if statuses:
        statement = statement.bindparams(sa.bindparam("statuses", expanding=True))
        params["statuses"] = list(statuses)
    async with d._engine.connect() as conn:
        rows = await conn.execute(statement, params)
        return [str(row.value) for row in rows]


def fetched_pages(site_server: SiteServer) -> Counter[str]:
    return Counter(
        crawl_key(url)
        for url in site_server.fetched
        if not url.endswith(("/robots.txt", ".xml", ".gz"))
    )


async def start_crawl(d: Deployment, site: Site, **options: Any) -> str:
    status, body = await d.request(
        "POST", "/api/v1/crawls", json={"url": site.start_url, **options}
    )
    assert status == 201 and body is not None, (status, body)
    return str(body["id"])


async def test_kill9_worker_mid_crawl(
    production: Deployment, site_server: SiteServer, site: Site
) -> None:
    d = production
    d.settings |= CRAWL_SETTINGS
    truth = site.expected_crawl()
    await d.api()
    first = await d.started_worker("worker-a")
    async with webhook_receiver() as receiver:
        crawl_id = await start_crawl(
            d, site, callback_url=receiver.url("pages"), webhook_events=["crawl.page"]
        )
        await killed_mid_crawl(d, crawl_id, first, site_server, truth)
        # Every finished page has exactly one crawl.page delivery, queued with its outcome:
        # none lost with the dead worker, none added by the page fetched again.
        finished = set(await page_ids(d, crawl_id, "COMPLETED", "FAILED"))
        outbox = await page_deliveries(d, crawl_id)
        assert len(set(outbox.values())) == len(outbox)  # no page twice
        assert set(outbox.values()) == finished
        # Delivered at least once each (a dispatcher killed mid-POST may send one twice, with
        # the same delivery id).
        async with asyncio.timeout(60):
            while True:
                delivered = {r.headers["X-TaskCrawler-Delivery"] for r in receiver.received}
                if delivered == set(outbox):
                    break
                await asyncio.sleep(0.1)


async def killed_mid_crawl(
    d: Deployment,
    crawl_id: str,
    first: ManagedProcess,
    site_server: SiteServer,
    truth: CrawlTruth,
) -> None:
    """Kill ``first`` mid-crawl, finish the crawl with another worker, and check its pages."""
    await wait_crawl(d, crawl_id, lambda c: c["completed"] >= 40, within=60)
    first.kill()
    # What the kill caught mid-fetch: the local site answers in milliseconds, so it may catch
    # none, and then nothing at all may be fetched twice. A kill mid-fetch is certain in
    # tests/faults/test_faults.py, whose pages answer slowly.
    in_flight = set(await page_urls(d, crawl_id, "PROCESSING"))
    await d.started_worker("worker-b")
    crawl = await wait_crawl(
        d, crawl_id, lambda c: c["status"] != "RUNNING" and c["pending"] == 0, within=120
    )
    assert crawl["status"] == "COMPLETED", crawl
    pages = await page_urls(d, crawl_id)
    assert len(pages) == len(set(pages)) == len(truth.pages) == crawl["discovered"]
    assert set(pages) == set(truth.pages)
    fetched = fetched_pages(site_server)
    assert set(fetched) == truth.fetchable
    assert {url for url, count in fetched.items() if count > 1} <= in_flight


async def test_redis_emptied_mid_crawl(
    production: Deployment, site_server: SiteServer, site: Site
) -> None:
    d = production
    d.settings |= CRAWL_SETTINGS
    truth = site.expected_crawl()
    await d.api()
    first = await d.started_worker("worker")
    crawl_id = await start_crawl(d, site)
    await wait_crawl(d, crawl_id, lambda c: c["completed"] >= 40, within=60)
    # The waiting page ids are in Redis, in the queue or in their hosts' lines, which a
    # graceful stop leaves there for the other workers.
    first.terminate()
    assert await first.wait(within=60) == 0
    assert (await crawl_state(d, crawl_id))["pending"] > 0, "the stop should land mid-crawl"
    assert d.redis_url is not None
    client = aioredis.Redis.from_url(d.redis_url)
    try:
        # Every key of the deployment is gone: only the database still knows the pages.
        keys = [key async for key in client.scan_iter(match=f"{d.redis_prefix}:*")]
        assert any(b":queue" in key or b":hosts:line:" in key for key in keys), keys
        assert await client.delete(*keys) == len(keys)
    finally:
        await client.aclose()
    await d.started_worker("worker-b")
    crawl = await wait_crawl(
        d, crawl_id, lambda c: c["status"] != "RUNNING" and c["pending"] == 0, within=120
    )
    assert crawl["status"] == "COMPLETED", crawl
    pages = await page_urls(d, crawl_id)
    assert set(pages) == set(truth.pages) and len(pages) == len(truth.pages)
    fetched = fetched_pages(site_server)
    assert set(fetched) == truth.fetchable
    assert max(fetched.values()) == 1  # the sweeper re-published; nothing ran twice
