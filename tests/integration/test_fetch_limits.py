"""Hard limits that need more than an error code to prove: memory, time, reuse, speed.

(The error code of every hostile response is checked row by row in test_fetch_hostile.py.)
"""

from __future__ import annotations

import asyncio
import email.utils
import time
import tracemalloc
from collections.abc import AsyncIterator
from urllib.parse import quote

import pytest

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.fetch import Fetcher
from tests.support.hostile import (
    PAGE,
    HostileServer,
    RawServer,
    deflate_bomb,
    fetch_settings,
    gzip_bomb,
)

LOCAL = {"allow_private_networks": True}
#: A bound for a hang, not a speed claim: what it guards never ends on its own, and a loaded
#: machine may take seconds past a 1 s deadline to wind a fetch down.
HANG_SECONDS = 20.0


@pytest.fixture(scope="module")
async def server() -> AsyncIterator[HostileServer]:
    running = await HostileServer().start()
    yield running
    await running.stop()


@pytest.fixture
async def fetcher() -> AsyncIterator[Fetcher]:
    instance = Fetcher(fetch_settings(**LOCAL, max_body_bytes=1024 * 1024))
    yield instance
    await instance.close()


async def test_a_page_comes_back_whole(fetcher: Fetcher, server: HostileServer) -> None:
    page = await fetcher.fetch(server.url("/chain/2") + "#fragment")
    assert page.status == 200
    assert page.body == PAGE
    assert page.url == server.url("/chain/2") + "#fragment"
    assert page.final_url == server.url("/chain/0")
    assert page.content_type == "text/html"
    assert page.charset == "utf-8"
    assert page.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
async def test_the_gzip_bomb_stops_early_without_blowing_memory(
    fetcher: Fetcher, server: HostileServer, coding: str
) -> None:
    """aiohttp (3.13.3 on, GHSA-6mq8-rvhq-8wgg) inflates each network chunk only up to its
    read buffer (64 KiB), the rest as the body is read: the fetcher's bound on the decoded
    bytes then bounds memory too. Without that, this peak was 134 MB."""
    gzip_bomb(), deflate_bomb()  # built before measuring: the server's copy is not ours
    tracemalloc.start()
    try:
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch(server.url(f"/{coding}-bomb"))
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.code == ErrorCode.TOO_LARGE
    # 50 MB inflated, a 1 MB limit: the peak stays within a few chunks of the limit.
    assert peak < 8 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"


async def test_a_slow_drip_is_cut_at_the_total_deadline(server: HostileServer) -> None:
    fetcher = Fetcher(fetch_settings(**LOCAL, fetch_timeout_seconds=1.0))
    started = time.perf_counter()
    try:
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch(server.url("/drip"))
    finally:
        await fetcher.close()
    elapsed = time.perf_counter() - started
    assert caught.value.code == ErrorCode.TIMEOUT
    assert caught.value.transient is True
    # Not cut before the deadline; the drip never ends, so only the deadline stopped it (the
    # upper bound only guards against a hang).
    assert 0.9 < elapsed < HANG_SECONDS


async def test_the_deadline_covers_all_redirect_hops(server: HostileServer) -> None:
    """0.4 s per hop, 5 hops, a 1 s deadline: the deadline is for the fetch, not per hop."""
    fetcher = Fetcher(fetch_settings(**LOCAL, fetch_timeout_seconds=1.0))
    started = time.perf_counter()
    try:
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch(server.url("/chain/4?delay=0.4"))
    finally:
        await fetcher.close()
    # Each hop alone is within the deadline, so a timeout means the deadline spans all hops.
    assert caught.value.code == ErrorCode.TIMEOUT
    assert time.perf_counter() - started < HANG_SECONDS


async def test_retry_after_as_an_http_date(fetcher: Fetcher, server: HostileServer) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    with pytest.raises(FetchError) as caught:
        await fetcher.fetch(server.url("/status/503?retry_after=" + quote(when)))
    assert caught.value.code == ErrorCode.HTTP_5XX
    assert caught.value.transient is True
    assert caught.value.retry_after is not None
    assert 27 <= caught.value.retry_after <= 30
    assert caught.value.http_status == 503


async def test_a_conditional_refetch_gets_an_empty_304(
    fetcher: Fetcher, server: HostileServer
) -> None:
    first = await fetcher.fetch(server.url("/etag"))
    assert first.headers["etag"] == '"v1"'
    again = await fetcher.fetch(server.url("/etag"), headers={"If-None-Match": '"v1"'})
    assert again.status == 304
    assert again.body == b""


async def test_a_response_without_content_type_is_accepted() -> None:
    raw = await RawServer(
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
    ).start()
    fetcher = Fetcher(fetch_settings(**LOCAL))
    try:
        page = await fetcher.fetch(raw.url("/"))
    finally:
        await fetcher.close()
        await raw.stop()
    assert page.body == b"hello"
    assert page.content_type is None


async def test_a_retry_after_no_date_can_hold_is_a_5xx_still() -> None:
    raw = await RawServer(
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n"
        b"Retry-After: Wed, 21 Oct 99999999999999999999 07:28:30 GMT\r\n\r\n"
    ).start()
    fetcher = Fetcher(fetch_settings(**LOCAL))
    try:
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch(raw.url("/"))
    finally:
        await fetcher.close()
        await raw.stop()
    assert caught.value.code == ErrorCode.HTTP_5XX and caught.value.retry_after is None


async def test_a_content_length_padded_with_zeros_is_read_by_its_value() -> None:
    raw = await RawServer(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
        b"Content-Length: " + b"0" * 5000 + b"5\r\n\r\nhello"
    ).start()
    fetcher = Fetcher(fetch_settings(**LOCAL))
    try:
        page = await fetcher.fetch(raw.url("/"))  # raised ValueError from int()
    finally:
        await fetcher.close()
        await raw.stop()
    assert page.body == b"hello"


async def test_one_session_and_its_connections_are_reused(server: HostileServer) -> None:
    """Connections are pooled across fetches: 2,000 small pages, 100 at a time, come on no more
    connections than are in flight at once (a connection per fetch would be 2,001)."""
    in_flight = 100
    fetcher = Fetcher(fetch_settings(**LOCAL, worker_concurrency=in_flight))
    count = 2000
    semaphore = asyncio.Semaphore(in_flight)

    async def one() -> None:
        async with semaphore:
            await fetcher.fetch(server.url("/page"))

    known, hits = set(server.connections), server.hits["/page"]  # the module shares the server
    try:
        await fetcher.fetch(server.url("/page"))
        session = fetcher._session
        await asyncio.gather(*(one() for _ in range(count)))
        assert fetcher._session is session
    finally:
        await fetcher.close()
    assert server.hits["/page"] - hits == count + 1
    opened = len(server.connections - known)
    assert opened <= in_flight, opened
