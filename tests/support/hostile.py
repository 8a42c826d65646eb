"""Hostile local servers for the fetch tests: every way a web server can try to hurt a crawler.

Everything binds to loopback addresses only (127.0.0.0/8), on random ports. Each server counts the
requests it receives, so a test can prove that a refused fetch sent nothing.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import cache
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from taskcrawler.settings import Settings

PAGE = b"<html><head><title>Hello</title></head><body><p>hi</p></body></html>"
BOMB_INFLATED_BYTES = 50 * 1024 * 1024


def fetch_settings(**overrides: Any) -> Settings:
    """Settings for fetch tests: no .env file, robots off unless a test turns it on."""
    values: dict[str, Any] = {"respect_robots": False, "fetch_timeout_seconds": 5.0}
    values.update(overrides)
    return Settings(_env_file=None, **values)


@cache
def gzip_bomb() -> bytes:
    """50 MB of zeros, gzip-compressed to about 50 KB. Built once per process."""
    return gzip.compress(b"\0" * BOMB_INFLATED_BYTES, compresslevel=9)


@cache
def deflate_bomb() -> bytes:
    """:func:`gzip_bomb`'s zeros as zlib's deflate stream (``Content-Encoding: deflate``)."""
    return zlib.compress(b"\0" * BOMB_INFLATED_BYTES, 9)


class HostileServer:
    """An aiohttp.web server with hostile routes. ``hits`` counts requests by path."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.hits: Counter[str] = Counter()
        self.robots_status = 404
        self.robots_body = ""
        self.robots_headers: dict[str, str] = {}
        self.robots_bomb = False
        self.in_flight = 0
        self.max_in_flight = 0
        self.page_delay = 0.0
        #: Set once ``/page`` is asked; when a gate is given, ``/page`` answers only once it is
        #: set: a request held as long as a test needs.
        self.page_reached = asyncio.Event()
        self.page_gate: asyncio.Event | None = None
        self.request_starts: list[float] = []
        #: Each request's headers, in the order they came.
        self.request_headers: list[dict[str, str]] = []
        #: The connections requests came on (held, so each stays a distinct object).
        self.connections: set[asyncio.BaseTransport] = set()
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def total_hits(self) -> int:
        return sum(self.hits.values())

    def url(self, path: str = "/page", *, host: str | None = None) -> str:
        return f"http://{host or self.host}:{self.port}{path}"

    async def start(self) -> HostileServer:
        app = web.Application(middlewares=[self._count])
        app.router.add_routes(self._routes())
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _count(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        self.hits[request.path] += 1
        self.request_starts.append(asyncio.get_running_loop().time())
        self.request_headers.append(dict(request.headers))
        if request.transport is not None:
            self.connections.add(request.transport)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await handler(request)
        finally:
            self.in_flight -= 1

    def _routes(self) -> list[web.RouteDef]:
        return [
            web.get("/page", self._page),
            web.get("/page/{tail:.*}", self._page),
            web.get("/robots.txt", self._robots),
            web.get("/drip", self._drip),
            web.get("/slow-headers", self._slow_headers),
            web.get("/big", self._big),
            web.get("/big-chunked", self._big_chunked),
            web.get("/gzip-bomb", self._gzip_bomb),
            web.get("/deflate-bomb", self._deflate_bomb),
            web.get("/bad-gzip", self._bad_gzip),
            web.get("/chain/{n}", self._chain),
            web.get("/loop/{name}", self._loop),
            web.get("/redirect-to", self._redirect_to),
            web.get("/status/{code}", self._status),
            web.get("/type/{major}/{minor}", self._typed),
            web.get("/huge-header", self._huge_header),
            web.get("/many-headers", self._many_headers),
            web.get("/disconnect", self._disconnect),
            web.get("/truncated", self._truncated),
            web.get("/secret", self._page),
            web.get("/etag", self._etag),
        ]

    async def _page(self, request: web.Request) -> web.Response:
        self.page_reached.set()
        if self.page_gate is not None:
            await self.page_gate.wait()
        if self.page_delay:
            await asyncio.sleep(self.page_delay)
        return web.Response(body=PAGE, content_type="text/html", charset="utf-8")

    async def _etag(self, request: web.Request) -> web.Response:
        """A conditional GET: 304 when the client already has version "v1"."""
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304, headers={"ETag": '"v1"'})
        return web.Response(body=PAGE, content_type="text/html", headers={"ETag": '"v1"'})

    async def _robots(self, request: web.Request) -> web.Response:
        if self.robots_bomb:
            return await self._gzip_bomb(request)
        return web.Response(
            status=self.robots_status, text=self.robots_body, headers=self.robots_headers
        )

    async def _drip(self, request: web.Request) -> web.StreamResponse:
        """One byte every 0.2 s, forever: each read succeeds, so only a total deadline stops it."""
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        while True:
            await response.write(b"x")
            await asyncio.sleep(0.2)

    async def _slow_headers(self, request: web.Request) -> web.Response:
        await asyncio.sleep(30)
        return web.Response(text="late", content_type="text/html")

    async def _big(self, request: web.Request) -> web.Response:
        size = int(request.query.get("bytes", 2 * 1024 * 1024))
        return web.Response(body=b"a" * size, content_type="text/html")

    async def _big_chunked(self, request: web.Request) -> web.StreamResponse:
        """Chunked, no Content-Length: only counting the stream can stop it."""
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for _ in range(int(request.query.get("chunks", 64))):
            await response.write(b"b" * 65536)
        await response.write_eof()
        return response

    async def _gzip_bomb(self, request: web.Request) -> web.Response:
        return web.Response(
            body=gzip_bomb(),
            headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
        )

    async def _deflate_bomb(self, request: web.Request) -> web.Response:
        return web.Response(
            body=deflate_bomb(),
            headers={"Content-Type": "text/html", "Content-Encoding": "deflate"},
        )

    async def _bad_gzip(self, request: web.Request) -> web.Response:
        return web.Response(
            body=b"this is not gzip at all" * 10,
            headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
        )

    async def _chain(self, request: web.Request) -> web.Response:
        """/chain/3 -> /chain/2 -> /chain/1 -> /chain/0 (a page); ?delay= slows every hop."""
        await asyncio.sleep(float(request.query.get("delay", 0)))
        n = int(request.match_info["n"])
        if n <= 0:
            return await self._page(request)
        query = f"?{request.query_string}" if request.query_string else ""
        raise web.HTTPFound(f"/chain/{n - 1}{query}")

    async def _loop(self, request: web.Request) -> web.Response:
        other = "b" if request.match_info["name"] == "a" else "a"
        raise web.HTTPFound(f"/loop/{other}")

    async def _redirect_to(self, request: web.Request) -> web.Response:
        status = int(request.query.get("status", 302))
        return web.Response(status=status, headers={"Location": request.query["url"]})

    async def _status(self, request: web.Request) -> web.Response:
        headers = {}
        if "retry_after" in request.query:
            headers["Retry-After"] = request.query["retry_after"]
        code = int(request.match_info["code"])
        return web.Response(status=code, headers=headers, text=f"status {code}")

    async def _typed(self, request: web.Request) -> web.StreamResponse:
        """Headers at once, then a body that never ends: refusing in time proves the type was
        judged from the headers alone."""
        kind = f"{request.match_info['major']}/{request.match_info['minor']}"
        response = web.StreamResponse(headers={"Content-Type": kind})
        await response.prepare(request)
        await response.write(b"\x89PNG")
        await asyncio.sleep(30)
        return response

    async def _huge_header(self, request: web.Request) -> web.Response:
        return web.Response(text="hi", content_type="text/html", headers={"X-Big": "a" * 100_000})

    async def _many_headers(self, request: web.Request) -> web.Response:
        headers = {f"X-H{i}": "v" for i in range(500)}
        return web.Response(text="hi", content_type="text/html", headers=headers)

    async def _disconnect(self, request: web.Request) -> web.Response:
        """Close the connection before any response byte."""
        transport = request.transport
        assert transport is not None
        transport.close()
        await asyncio.sleep(1)
        return web.Response(text="never sent")

    async def _truncated(self, request: web.Request) -> web.StreamResponse:
        """Promise 100 000 bytes, send 10, hang up."""
        response = web.StreamResponse(
            headers={"Content-Type": "text/html", "Content-Length": "100000"}
        )
        await response.prepare(request)
        await response.write(b"0123456789")
        transport = request.transport
        assert transport is not None
        transport.close()
        return response


class RawServer:
    """A TCP server that answers every connection with fixed bytes: for malformed responses."""

    def __init__(self, payload: bytes, host: str = "127.0.0.1") -> None:
        self.payload = payload
        self.host = host
        self.hits = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"

    async def start(self) -> RawServer:
        self._server = await asyncio.start_server(self._answer, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.hits += 1
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(self.payload)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


class StaticResolver(AbstractResolver):
    """A fake DNS: fixed answers per name, and a log of the calls.

    ``answers[name]`` is a list of addresses, or a list of such lists: call n then gets item n
    (the last one repeats), which is how a rebinding DNS server behaves.
    """

    def __init__(self, answers: Mapping[str, Sequence[str] | Sequence[Sequence[str]]]) -> None:
        self.answers = dict(answers)
        self.calls: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        turn = self.calls.count(host)
        self.calls.append(host)
        answer = self.answers.get(host)
        if answer is None:
            raise OSError(socket.EAI_NONAME, f"no such name {host}")
        addresses: Sequence[str | Sequence[str]] = answer
        if addresses and not isinstance(addresses[0], str):
            addresses = addresses[min(turn, len(addresses) - 1)]
        return [_result(host, str(address), port) for address in addresses]

    async def close(self) -> None:
        return None


def _result(host: str, address: str, port: int) -> ResolveResult:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    return ResolveResult(
        hostname=host,
        host=address,
        port=port,
        family=family,
        proto=0,
        flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
    )
