"""The rendered pages' proxy, spoken to directly (no browser): what it forwards, what it refuses,
and what it counts. Servers as in test_fetch_guard.py: ``public.test`` on 127.0.0.1, treated as
public by the test's guard, and an intranet on 127.0.0.2 that must see nothing."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator

import aiohttp
import pytest

from taskcrawler.browser.proxy import Egress, PageProxy, PageTraffic
from taskcrawler.fetch.guard import AddressGuard
from tests.support.hostile import HostileServer, RawServer, StaticResolver, fetch_settings

PUBLIC_IP = ipaddress.ip_address("127.0.0.1")


@pytest.fixture
async def public() -> AsyncIterator[HostileServer]:
    server = await HostileServer("127.0.0.1").start()
    yield server
    await server.stop()


@pytest.fixture
async def intranet() -> AsyncIterator[HostileServer]:
    server = await HostileServer("127.0.0.2").start()
    yield server
    await server.stop()


@pytest.fixture
async def proxy() -> AsyncIterator[PageProxy]:
    guard = AddressGuard(allow=lambda ip: ip == PUBLIC_IP)
    resolver = StaticResolver({"public.test": ["127.0.0.1"], "intranet.test": ["127.0.0.2"]})
    egress = Egress(fetch_settings(), guard, resolver)
    page = await PageProxy(egress, PageTraffic(max_bytes=1024 * 1024)).start()
    yield page
    await page.close()
    await egress.close()


async def get(proxy: PageProxy, url: str) -> tuple[int, dict[str, str], bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, proxy=proxy.url, allow_redirects=False) as response,
    ):
        return response.status, dict(response.headers), await response.read()


async def raw_exchange(proxy: PageProxy, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    try:
        writer.write(request)
        await writer.drain()
        return await reader.read()
    finally:
        writer.close()


async def test_plain_http_is_forwarded_to_a_public_address(
    proxy: PageProxy, public: HostileServer
) -> None:
    status, _headers, body = await get(proxy, f"http://public.test:{public.port}/page")
    assert status == 200 and b"Hello" in body
    assert proxy.traffic.requests == 1 and proxy.traffic.bytes_received == len(body)


async def test_a_compressed_body_is_relayed_as_it_came(
    proxy: PageProxy, public: HostileServer
) -> None:
    """The browser decodes it: the proxy neither decompresses nor drops Content-Encoding."""
    status, headers, _ = await get(proxy, f"http://public.test:{public.port}/gzip-bomb")
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    assert proxy.traffic.bytes_received < 1024 * 1024  # the compressed size counted


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.2:{port}/secret",
        "http://intranet.test:{port}/secret",
        "http://[::ffff:127.0.0.2]:{port}/secret",
        "http://2130706434:{port}/secret",  # 127.0.0.2 spelled as one number
    ],
)
async def test_plain_http_to_a_private_address_is_refused_and_counted(
    proxy: PageProxy, intranet: HostileServer, target: str
) -> None:
    status, headers, body = await get(proxy, target.format(port=intranet.port))
    assert status == 403 and headers["X-TaskCrawler-Refused"] == "blocked_address"
    assert b"is blocked" in body
    assert proxy.traffic.blocked == 1 and intranet.total_hits == 0
    assert "blocked" in proxy.traffic.blocked_names[0]


async def test_connect_to_a_private_address_is_refused(
    proxy: PageProxy, intranet: HostileServer
) -> None:
    for host in ("127.0.0.2", "intranet.test", "[::1]"):
        answer = await raw_exchange(
            proxy, f"CONNECT {host}:{intranet.port} HTTP/1.1\r\n\r\n".encode()
        )
        assert answer.startswith(b"HTTP/1.1 403"), answer
    assert proxy.traffic.blocked == 3 and intranet.total_hits == 0


async def test_connect_to_a_public_address_tunnels_bytes(
    proxy: PageProxy, public: HostileServer
) -> None:
    request = (
        f"CONNECT public.test:{public.port} HTTP/1.1\r\n\r\n"
        f"GET /page HTTP/1.1\r\nHost: public.test\r\nConnection: close\r\n\r\n"
    ).encode()
    answer = await raw_exchange(proxy, request)
    assert answer.startswith(b"HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.1 200 OK")
    assert b"Hello" in answer and public.hits["/page"] == 1
    assert proxy.traffic.bytes_received > 0


async def test_a_connection_carries_several_requests(
    proxy: PageProxy, public: HostileServer
) -> None:
    url = f"http://public.test:{public.port}/page"
    request = f"GET {url} HTTP/1.1\r\nHost: public.test\r\n\r\n".encode()
    last = f"GET {url} HTTP/1.1\r\nHost: public.test\r\nConnection: close\r\n\r\n".encode()
    answer = await raw_exchange(proxy, request + request + last)
    assert answer.count(b"HTTP/1.1 200 OK") == 3 and public.hits["/page"] == 3


async def test_the_page_budget_cuts_its_downloads(proxy: PageProxy, public: HostileServer) -> None:
    with pytest.raises(aiohttp.ClientPayloadError):
        await get(proxy, f"http://public.test:{public.port}/big?bytes={2 * 1024 * 1024}")
    assert proxy.traffic.over_budget and proxy.traffic.bytes_received <= 1024 * 1024
    with pytest.raises(aiohttp.ClientError):  # nothing more goes out for this page
        await get(proxy, f"http://public.test:{public.port}/page")
    assert public.hits["/page"] == 0


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"GET ftp://public.test/x HTTP/1.1\r\n\r\n",
        b"GET http://public.test/ HTTP/1.1\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n",
        b"CONNECT nowhere HTTP/1.1\r\n\r\n",
        b"GET http://public.test/ HTTP/1.1\r\nX: " + b"a" * 70000 + b"\r\n\r\n",
    ],
)
async def test_malformed_requests_forward_nothing(
    proxy: PageProxy, public: HostileServer, request_bytes: bytes
) -> None:
    answer = await raw_exchange(proxy, request_bytes)
    assert b"200" not in answer.split(b"\r\n", 1)[0]
    assert public.total_hits == 0


async def test_a_chunked_request_body_is_forwarded(proxy: PageProxy, public: HostileServer) -> None:
    url = f"http://public.test:{public.port}/page"
    request = (
        f"POST {url} HTTP/1.1\r\nHost: public.test\r\nTransfer-Encoding: chunked\r\n"
        "Connection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    ).encode()
    answer = await raw_exchange(proxy, request)
    assert answer.startswith(b"HTTP/1.1 405")  # /page takes GET only; the POST reached it
    assert public.hits["/page"] == 1


async def test_closing_cuts_open_tunnels(proxy: PageProxy, public: HostileServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(f"CONNECT public.test:{public.port} HTTP/1.1\r\n\r\n".encode())
    await writer.drain()
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
    await proxy.close()
    assert await reader.read() == b""  # the tunnel was closed under the client
    writer.close()


async def test_a_body_the_server_cuts_short_is_cut_short_without_an_error(
    proxy: PageProxy, public: HostileServer
) -> None:
    loop = asyncio.get_running_loop()
    unhandled: list[str] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: unhandled.append(str(context["message"])))
    try:
        request = f"GET http://public.test:{public.port}/truncated HTTP/1.1\r\n\r\n"
        answer = await raw_exchange(proxy, request.encode())
    finally:
        loop.set_exception_handler(previous)
    # As the server did: its first 10 bytes of 100,000, then the connection closes.
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"\r\n\r\n0123456789")
    assert unhandled == []  # was "Unhandled exception in client_connected_cb", logged


CYRILLIC_OK = "\u041e\u041a".encode()


@pytest.mark.parametrize("reason", [CYRILLIC_OK, b"\xff\xfe"], ids=["utf-8", "not utf-8"])
async def test_a_reason_phrase_in_any_bytes_is_relayed_as_it_came(
    proxy: PageProxy, reason: bytes
) -> None:
    raw = await RawServer(
        b"HTTP/1.1 200 " + reason + b"\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
    ).start()
    try:
        request = f"GET http://public.test:{raw.port}/ HTTP/1.1\r\nConnection: close\r\n\r\n"
        answer = await raw_exchange(proxy, request.encode())
    finally:
        await raw.stop()
    # The Cyrillic OK could not be written as Latin-1: the browser got an empty response.
    assert answer.startswith(b"HTTP/1.1 200 " + reason + b"\r\n") and answer.endswith(b"hello")


async def test_request_headers_reach_the_server_in_the_bytes_the_browser_sent(
    proxy: PageProxy,
) -> None:
    heads: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(record, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    cookie = "name=Jos\u00e9".encode()  # a cookie a page set: UTF-8, as chromium sends it
    try:
        request = (
            f"GET http://public.test:{port}/ HTTP/1.1\r\nConnection: close\r\n".encode()
            + b"Cookie: "
            + cookie
            + b"\r\n\r\n"
        )
        answer = await raw_exchange(proxy, request)
    finally:
        server.close()
        await server.wait_closed()
    assert answer.startswith(b"HTTP/1.1 204")
    # It went as b"name=Jos\xc3\x83\xc2\xa9": read as Latin-1, written as UTF-8 again.
    assert b"\r\nCookie: " + cookie + b"\r\n" in heads[0]
