"""robots.txt end to end: a real local server, the real fetcher, and the real Redis."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import quote

import pytest
from redis.asyncio import Redis

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.robots import ROBOTS_MAX_BYTES
from tests.support.hostile import HostileServer, fetch_settings

DISALLOW_PRIVATE = "User-agent: *\nDisallow: /page/private\n"


@pytest.fixture
async def server() -> AsyncIterator[HostileServer]:
    running = await HostileServer().start()
    running.robots_status = 200
    running.robots_body = DISALLOW_PRIVATE
    yield running
    await running.stop()


@pytest.fixture
async def redis(redis_url: str, redis_prefix: str) -> AsyncIterator[tuple[Redis, str]]:
    """The session's Redis and a key prefix of this test's own (deleted afterwards)."""
    client = Redis.from_url(redis_url)
    yield client, redis_prefix
    await client.aclose()


def _fetcher(**settings: object) -> Fetcher:
    values: dict[str, object] = {"allow_private_networks": True, "respect_robots": True}
    values.update(settings)
    return Fetcher(fetch_settings(**values))


async def test_a_disallowed_page_is_never_requested(server: HostileServer) -> None:
    fetcher = _fetcher()
    try:
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch(server.url("/page/private"))
        page = await fetcher.fetch(server.url("/page"))
    finally:
        await fetcher.close()
    assert caught.value.code == ErrorCode.ROBOTS_DISALLOWED
    assert caught.value.transient is False
    assert server.hits["/page/private"] == 0
    assert page.status == 200
    assert server.hits["/robots.txt"] == 1


async def test_robots_is_fetched_once_for_many_concurrent_fetches(server: HostileServer) -> None:
    fetcher = _fetcher()
    try:
        await asyncio.gather(*(fetcher.fetch(server.url(f"/page/{i}")) for i in range(50)))
    finally:
        await fetcher.close()
    assert server.hits["/robots.txt"] == 1
    assert sum(n for path, n in server.hits.items() if path.startswith("/page/")) == 50


async def test_the_cache_expires(server: HostileServer) -> None:
    fetcher = _fetcher(robots_cache_seconds=0.2)
    try:
        await fetcher.fetch(server.url("/page"))
        await fetcher.fetch(server.url("/page"))
        await asyncio.sleep(0.3)
        await fetcher.fetch(server.url("/page"))
    finally:
        await fetcher.close()
    assert server.hits["/robots.txt"] == 2


async def test_the_user_agent_names_taskcrawler_and_its_group_is_obeyed(
    server: HostileServer,
) -> None:
    server.robots_body = "User-agent: TaskCrawler\nDisallow: /\n\nUser-agent: *\nAllow: /\n"
    fetcher = _fetcher()
    try:
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch(server.url("/page"))
    finally:
        await fetcher.close()
    assert "TaskCrawler" in fetcher.settings.user_agent
    assert caught.value.code == ErrorCode.ROBOTS_DISALLOWED


@pytest.mark.parametrize("status", [404, 401, 403, 500, 503])
async def test_error_statuses_allow(server: HostileServer, status: int) -> None:
    server.robots_status = status
    server.robots_body = "User-agent: *\nDisallow: /\n"  # must be ignored: it is an error page
    fetcher = _fetcher()
    try:
        page = await fetcher.fetch(server.url("/page/private"))
    finally:
        await fetcher.close()
    assert page.status == 200


async def test_a_robots_gzip_bomb_is_read_only_up_to_its_limit(server: HostileServer) -> None:
    server.robots_bomb = True
    fetcher = _fetcher()
    try:
        page = await fetcher.fetch(server.url("/page/private"))
    finally:
        await fetcher.close()
    assert page.status == 200  # 512 KiB of zeros: no rules
    assert ROBOTS_MAX_BYTES == 512 * 1024


async def test_a_redirect_hop_is_checked_against_robots(server: HostileServer) -> None:
    fetcher = _fetcher()
    hop = "/redirect-to?url=" + quote("/page/private", safe="")
    try:
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch(server.url(hop))
    finally:
        await fetcher.close()
    assert caught.value.code == ErrorCode.ROBOTS_DISALLOWED
    assert server.hits["/page/private"] == 0


async def test_respect_robots_false_never_asks(server: HostileServer) -> None:
    server.robots_body = "User-agent: *\nDisallow: /\n"
    fetcher = _fetcher(respect_robots=False)
    try:
        await fetcher.fetch(server.url("/page"))
    finally:
        await fetcher.close()
    assert server.hits["/robots.txt"] == 0


async def test_robots_is_shared_through_redis(
    server: HostileServer, redis: tuple[Redis, str]
) -> None:
    """Two fetchers stand for two worker processes: the second never fetches robots.txt."""
    client, prefix = redis
    settings = fetch_settings(
        allow_private_networks=True, respect_robots=True, robots_cache_seconds=120
    )
    first = Fetcher(settings, redis=client, redis_prefix=prefix)
    second = Fetcher(settings, redis=client, redis_prefix=prefix)
    try:
        await first.fetch(server.url("/page"))
        with pytest.raises(FetchError) as caught:
            await second.fetch(server.url("/page/private"))
    finally:
        await first.close()
        await second.close()
    assert caught.value.code == ErrorCode.ROBOTS_DISALLOWED
    assert server.hits["/robots.txt"] == 1
    key = f"{prefix}:robots:http://127.0.0.1:{server.port}"
    assert await client.get(key) == DISALLOW_PRIVATE.encode()
    assert 110 < await client.ttl(key) <= 120


async def test_a_redis_outage_only_costs_a_refetch(server: HostileServer) -> None:
    dead = Redis.from_url("redis://127.0.0.1:1/0")  # nothing listens there
    fetcher = Fetcher(fetch_settings(allow_private_networks=True, respect_robots=True), redis=dead)
    try:
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch(server.url("/page/private"))
    finally:
        await fetcher.close()
        await dead.aclose()
    assert caught.value.code == ErrorCode.ROBOTS_DISALLOWED
