"""robots.txt Crawl-delay spaces the requests to its host: in one process (the in-memory
limiter) and across processes (the Redis limiter), and never by more than the cap allows.

Assertions are lower bounds on the gaps between requests as the server saw them: a loaded
machine can only make the gaps longer, so no test here can fail for being slow."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from redis.asyncio import Redis

from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.politeness import HostLimiter, MemoryHostLimiter, RedisHostLimiter
from tests.support.hostile import REDIS_URL, delete_prefix, fetch_settings
from tests.support.site import SLOW_PAGES, SiteServer, start_site

CRAWL_DELAY = 0.3
# Starts are spaced on the client; arrival at the server may shift by a little either way.
TOLERANCE = 0.03


@pytest.fixture(scope="module")
def _server() -> Iterator[SiteServer]:
    server = start_site(pages=200, crawl_delay=CRAWL_DELAY)
    yield server
    server.close()


@pytest.fixture
def server(_server: SiteServer) -> SiteServer:
    _server.reset()
    return _server


@pytest.fixture
async def redis() -> AsyncIterator[tuple[Redis, str]]:
    client = Redis.from_url(REDIS_URL)
    prefix = f"test-crawl-delay-{uuid.uuid4().hex}"
    yield client, prefix
    await delete_prefix(client, prefix)
    await client.aclose()


def make_fetcher(server: SiteServer, limiter: HostLimiter, **settings: Any) -> Fetcher:
    values: dict[str, Any] = {"allow_private_networks": True, "respect_robots": True}
    values.update(settings)
    assert server.site is not None
    return Fetcher(fetch_settings(**values), resolver=server.site.resolver(), limiter=limiter)


def slow_pages(server: SiteServer) -> list[str]:
    assert server.site is not None
    return [server.site.url(server.site.hosts.delayed, f"/slow/{i}") for i in range(SLOW_PAGES)]


def page_gaps(server: SiteServer) -> list[float]:
    """Gaps between the page requests the delayed host received (robots.txt excluded)."""
    assert server.site is not None
    host = server.site.hosts.delayed
    times = [
        when
        for url, when in zip(server.fetched, _all_times(server), strict=True)
        if host in url and not url.endswith("/robots.txt")
    ]
    return [b - a for a, b in itertools.pairwise(sorted(times))]


def _all_times(server: SiteServer) -> list[float]:
    """Arrival times in the order of ``fetched`` (fetch_times is per host, in order)."""
    cursors = {host: iter(times) for host, times in server.fetch_times.items()}
    return [next(cursors[url.split("//", 1)[1].split(":", 1)[0]]) for url in server.fetched]


async def test_the_in_memory_limiter_spaces_requests_by_the_crawl_delay(
    server: SiteServer,
) -> None:
    fetcher = make_fetcher(server, MemoryHostLimiter(concurrency=8))
    try:
        await asyncio.gather(*(fetcher.fetch(url) for url in slow_pages(server)))
    finally:
        await fetcher.close()
    gaps = page_gaps(server)
    assert len(gaps) == SLOW_PAGES - 1
    assert min(gaps) >= CRAWL_DELAY - TOLERANCE


async def test_the_redis_limiter_spaces_requests_across_processes(
    server: SiteServer, redis: tuple[Redis, str]
) -> None:
    """Two fetchers with limiters of their own stand for two worker processes."""
    client, prefix = redis
    fetchers = [
        make_fetcher(
            server,
            RedisHostLimiter(client, concurrency=8, lease_seconds=30, prefix=prefix),
        )
        for _ in range(2)
    ]
    try:
        pages = slow_pages(server)
        await asyncio.gather(*(fetchers[i % 2].fetch(url) for i, url in enumerate(pages)))
    finally:
        for fetcher in fetchers:
            await fetcher.close()
    gaps = page_gaps(server)
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
    server: SiteServer, settings: dict[str, Any], expected: float | None
) -> None:
    limiter = RecordingLimiter()
    fetcher = make_fetcher(server, limiter, **settings)
    assert server.site is not None
    try:
        await fetcher.fetch(slow_pages(server)[0])
        await fetcher.fetch(server.site.main("/docs/0"))  # a host without Crawl-delay
    finally:
        await fetcher.close()
    delayed, main = server.site.hosts.delayed, server.site.hosts.main
    page_delays = [delay for host, delay in limiter.delays if host in (delayed, main)]
    robots_fetches = 0 if settings.get("respect_robots") is False else 2
    assert len(page_delays) == 2 + robots_fetches
    assert page_delays[-1] is None  # the main host sets none
    asked = [delay for host, delay in limiter.delays if host == delayed][-1]
    assert asked == expected
