"""robots.txt Crawl-delay spaces the requests to its host: in one process (the in-memory
limiter) and across processes (the Redis limiter), and never by more than the cap allows.

Assertions are lower bounds on the gaps between requests as the site_server saw them: a loaded
machine can only make the gaps longer, so no test here can fail for being slow."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from redis.asyncio import Redis

from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.politeness import HostLimiter, MemoryHostLimiter, RedisHostLimiter
from tests.support.hostile import fetch_settings
from tests.support.site import SLOW_PAGES, SiteServer

CRAWL_DELAY = 0.3
# Starts are spaced on the client; arrival at the site_server may shift by a little either way.
TOLERANCE = 0.03


SITE_OPTIONS = {"pages": 200, "crawl_delay": CRAWL_DELAY}


@pytest.fixture
async def redis(redis_url: str, redis_prefix: str) -> AsyncIterator[tuple[Redis, str]]:
    """The suite's Redis (reachable or throwaway) and a key prefix the fixture deletes after."""
    client = Redis.from_url(redis_url)
    yield client, redis_prefix
    await client.aclose()


def make_fetcher(site_server: SiteServer, limiter: HostLimiter, **settings: Any) -> Fetcher:
    values: dict[str, Any] = {"allow_private_networks": True, "respect_robots": True}
    values.update(settings)
    assert site_server.site is not None
    return Fetcher(fetch_settings(**values), resolver=site_server.site.resolver(), limiter=limiter)


def slow_pages(site_server: SiteServer) -> list[str]:
    assert site_server.site is not None
    return [
        site_server.site.url(site_server.site.hosts.delayed, f"/slow/{i}")
        for i in range(SLOW_PAGES)
    ]


def page_gaps(site_server: SiteServer) -> list[float]:
    """Gaps between the page requests the delayed host received (robots.txt excluded)."""
    assert site_server.site is not None
    host = site_server.site.hosts.delayed
    times = [
        when
        for url, when in zip(site_server.fetched, _all_times(site_server), strict=True)
        if host in url and not url.endswith("/robots.txt")
    ]
    return [b - a for a, b in itertools.pairwise(sorted(times))]


def _all_times(site_server: SiteServer) -> list[float]:
    """Arrival times in the order of ``fetched`` (fetch_times is per host, in order)."""
    cursors = {host: iter(times) for host, times in site_server.fetch_times.items()}
    return [next(cursors[url.split("//", 1)[1].split(":", 1)[0]]) for url in site_server.fetched]


async def test_the_in_memory_limiter_spaces_requests_by_the_crawl_delay(
    site_server: SiteServer,
) -> None:
    fetcher = make_fetcher(site_server, MemoryHostLimiter(concurrency=8))
    try:
        await asyncio.gather(*(fetcher.fetch(url) for url in slow_pages(site_server)))
    finally:
        await fetcher.close()
    gaps = page_gaps(site_server)
    assert len(gaps) == SLOW_PAGES - 1
    assert min(gaps) >= CRAWL_DELAY - TOLERANCE


async def test_the_redis_limiter_spaces_requests_across_processes(
    site_server: SiteServer, redis: tuple[Redis, str]
) -> None:
    """Two fetchers with limiters of their own stand for two worker processes."""
    client, prefix = redis
    fetchers = [
        make_fetcher(
            site_server,
            RedisHostLimiter(client, concurrency=8, lease_seconds=30, prefix=prefix),
        )
        for _ in range(2)
    ]
    try:
        pages = slow_pages(site_server)
        await asyncio.gather(*(fetchers[i % 2].fetch(url) for i, url in enumerate(pages)))
    finally:
        for fetcher in fetchers:
            await fetcher.close()
    gaps = page_gaps(site_server)
    assert len(gaps) == SLOW_PAGES - 1
    assert min(gaps) >= CRAWL_DELAY - TOLERANCE


class RecordingLimiter:
    """An in-memory limiter that remembers the delay each request asked for."""

    def __init__(self) -> None:
        self.inner = MemoryHostLimiter(concurrency=8)
        self.delays: list[tuple[str, float | None]] = []

    def slot(
        self, host: str, *, max_wait: float | None = None, delay: float | None = None
    ) -> AbstractAsyncContextManager[None]:
        self.delays.append((host, delay))
        return self.inner.slot(host, max_wait=max_wait, delay=delay)

    async def close(self) -> None:
        await self.inner.close()


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, CRAWL_DELAY),
        ({"max_crawl_delay_seconds": 0.1}, 0.1),  # capped: a hostile robots.txt cannot stall
        ({"max_crawl_delay_seconds": 0}, 0.0),  # ignored
        ({"respect_robots": False}, None),  # no robots.txt, no Crawl-delay
    ],
)
async def test_the_delay_asked_of_the_limiter(
    site_server: SiteServer, settings: dict[str, Any], expected: float | None
) -> None:
    limiter = RecordingLimiter()
    fetcher = make_fetcher(site_server, limiter, **settings)
    assert site_server.site is not None
    try:
        await fetcher.fetch(slow_pages(site_server)[0])
        await fetcher.fetch(site_server.site.main("/docs/0"))  # a host without Crawl-delay
    finally:
        await fetcher.close()
    delayed, main = site_server.site.hosts.delayed, site_server.site.hosts.main
    page_delays = [delay for host, delay in limiter.delays if host in (delayed, main)]
    robots_fetches = 0 if settings.get("respect_robots") is False else 2
    assert len(page_delays) == 2 + robots_fetches
    assert page_delays[-1] is None  # the main host sets none
    asked = [delay for host, delay in limiter.delays if host == delayed][-1]
    assert asked == expected
