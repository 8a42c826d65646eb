"""A local HTTP target for the crawler: pages, errors, slow and broken answers, and a hit counter.

It runs on its own event loop in a daemon thread. That way it keeps answering while a test blocks
its own loop (a ``subprocess.run`` of ``taskcrawler scrape``, a sync client), and a sync test can
use it too. Handlers are kept minimal: benchmarks push thousands of pages per second through it.
"""

from __future__ import annotations

import asyncio
import html
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from urllib.parse import unquote, urlsplit

from aiohttp import web

from tests.support.hostile_pages import hostile_page

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

HTML = "text/html; charset=utf-8"
# The smallest valid PNG (1x1 transparent pixel): a real image for content-type tests.
PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)
BODYLESS = {204, 304}


def _new_loop() -> asyncio.AbstractEventLoop:
    # uvloop (a runtime dependency already) serves noticeably more pages/s than asyncio's loop.
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def page_html(title: str, body: str = "") -> str:
    return (
        f"<!doctype html><html><head><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )


def _page(n: int) -> str:
    links = f'<a href="/page/{n + 1}">next</a> <a href="/page/{max(n - 1, 0)}">previous</a>'
    return page_html(f"Page {n}", f"<p>This is page {n} of the test target.</p><p>{links}</p>")


class TargetServer:
    """The server and what it saw. ``reset()`` between tests; ``close()`` once."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.robots_txt: str | None = None  # None: /robots.txt is a 404, which allows everything
        # Requests being answered right now, and the most at once (politeness tests).
        self.in_flight = 0
        self.max_in_flight = 0
        # Bumped by reset(): a request a previous test left open (a killed worker's, a fetch
        # held forever) ends after the reset and must not be taken off this test's count.
        self._generation = 0
        self.not_modified = 0  # 304s answered to conditional requests
        self._flaky_failures: Counter[str] = Counter()
        self._loop = _new_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="target", daemon=True)
        self.port = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(timeout=10)

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._count])
        app.add_routes(self._routes())
        # access_log=None: logging every request costs more than the handlers themselves. A
        # slow page still being served when the session ends (``/slow?delay=30``) must not
        # hold close() past its own wait.
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=1024)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    def close(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def reset(self) -> None:
        """Forget hits, flaky counters and robots.txt (called between tests)."""
        self.hits.clear()
        self._flaky_failures.clear()
        self.robots_txt = None
        self.in_flight = self.max_in_flight = self.not_modified = 0
        self._generation += 1

    # ------------------------------------------------------------------ for tests

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return f"{self.base_url}{path if path.startswith('/') else '/' + path}"

    def hits_for(self, path_or_url: str) -> int:
        """Requests seen for a path or URL; like ``hits``, ignores the query and %-decodes."""
        return self.hits[unquote(urlsplit(path_or_url).path) or "/"]

    @property
    def total_hits(self) -> int:
        return sum(self.hits.values())

    # ------------------------------------------------------------------ handlers

    @web.middleware
    async def _count(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        # Counted before the handler runs, so a slow or dropped request is counted too. Keys are
        # aiohttp's decoded path, without the query string.
        self.hits[request.path] += 1
        generation = self._generation
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await handler(request)
        finally:
            if generation == self._generation:
                self.in_flight -= 1

    def _routes(self) -> list[web.RouteDef]:
        return [
            web.get("/", self._root),
            web.get("/robots.txt", self._robots),
            web.get("/page/{n:\\d+}", self._page),
            web.get("/title/{text}", self._title),
            web.get("/status/{code:\\d{3}}", self._status),
            web.get("/flaky/{key}", self._flaky),
            web.get("/slow", self._slow),
            web.get("/drip", self._drip),
            web.get("/close", self._close),
            web.get("/redirect/{n:\\d+}", self._redirect),
            web.get("/redirect-loop", self._redirect_loop),
            web.get("/big", self._big),
            web.get("/binary", self._binary),
            web.get("/text", self._text),
            web.get("/etag/{key}", self._etag),
            web.get("/hostile/{name}", self._hostile),
        ]

    async def _etag(self, request: web.Request) -> web.Response:
        """A page with validators, answering 304 to a conditional request that matches."""
        tag = f'"v1-{request.match_info["key"]}"'
        modified = "Wed, 02 Dec 2026 10:00:00 GMT"
        if request.headers.get("If-None-Match") == tag:
            self.not_modified += 1
            return web.Response(status=304, headers={"ETag": tag})
        return web.Response(
            text=page_html(f"Etag {request.match_info['key']}"),
            content_type="text/html",
            headers={"ETag": tag, "Last-Modified": modified},
        )

    async def _hostile(self, request: web.Request) -> web.Response:
        """A page of the hostile corpus (tests/support/hostile_pages.py)."""
        page = hostile_page(request.match_info["name"])
        if page.raw_head is None:
            headers = {"Content-Type": page.content_type, **page.extra}
            return web.Response(body=page.body, headers=headers)
        # Bytes aiohttp would refuse to send as headers: written to the socket as they are.
        transport = request.transport
        if transport is not None:
            transport.write(page.response_head() + page.body)
            transport.close()
        return web.Response()  # finds the transport closed and writes nothing

    async def _root(self, request: web.Request) -> web.Response:
        return web.Response(text=_page(0), content_type="text/html", charset="utf-8")

    async def _robots(self, request: web.Request) -> web.Response:
        if self.robots_txt is None:
            return web.Response(status=404, text="no robots.txt")
        return web.Response(text=self.robots_txt, content_type="text/plain")

    async def _page(self, request: web.Request) -> web.Response:
        return web.Response(
            text=_page(int(request.match_info["n"])), content_type="text/html", charset="utf-8"
        )

    async def _title(self, request: web.Request) -> web.Response:
        title = request.match_info["text"]
        return web.Response(text=page_html(title), content_type="text/html", charset="utf-8")

    async def _status(self, request: web.Request) -> web.Response:
        return _status_response(int(request.match_info["code"]), request)

    async def _flaky(self, request: web.Request) -> web.Response:
        """Fails ``fail`` times per key with ``code`` (default 503), then serves a page."""
        key = request.match_info["key"]
        if self._flaky_failures[key] < int(request.query.get("fail", "1")):
            self._flaky_failures[key] += 1
            return _status_response(int(request.query.get("code", "503")), request)
        return web.Response(
            text=page_html(f"Flaky {key}"), content_type="text/html", charset="utf-8"
        )

    async def _slow(self, request: web.Request) -> web.Response:
        delay = float(request.query.get("delay", "1"))
        await asyncio.sleep(delay)
        return web.Response(
            text=page_html(f"Slow {delay:g}"), content_type="text/html", charset="utf-8"
        )

    async def _drip(self, request: web.Request) -> web.StreamResponse:
        """``bytes`` of HTML, ``chunk`` bytes (default 1) every ``interval`` seconds."""
        total = int(request.query.get("bytes", "100"))
        interval = float(request.query.get("interval", "0.1"))
        chunk = max(1, int(request.query.get("chunk", "1")))
        body = page_html("Drip").encode().ljust(total, b" ")[:total]
        response = web.StreamResponse(headers={"Content-Type": HTML})
        await response.prepare(request)
        for start in range(0, total, chunk):
            await response.write(body[start : start + chunk])
            await asyncio.sleep(interval)
        await response.write_eof()
        return response

    async def _close(self, request: web.Request) -> web.StreamResponse:
        """Drop the connection without a byte of response (a crashed or hostile server)."""
        transport = request.transport
        if transport is not None:
            transport.abort()
        # aiohttp finds the transport gone and writes nothing; the client sees a disconnect.
        return web.Response(status=500)

    async def _redirect(self, request: web.Request) -> web.Response:
        """A chain: /redirect/n -> /redirect/n-1 -> ... -> /redirect/0, which is a page."""
        n = int(request.match_info["n"])
        if n == 0:
            return web.Response(
                text=page_html("Redirected"), content_type="text/html", charset="utf-8"
            )
        raise web.HTTPFound(f"/redirect/{n - 1}")

    async def _redirect_loop(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/redirect-loop")

    async def _big(self, request: web.Request) -> web.Response:
        size = int(request.query.get("bytes", str(1024 * 1024)))
        head = page_html("Big").encode()
        body = head + b"x" * max(0, size - len(head))
        return web.Response(body=body[:size], headers={"Content-Type": HTML})

    async def _binary(self, request: web.Request) -> web.Response:
        return web.Response(body=PNG_1X1, content_type="image/png")

    async def _text(self, request: web.Request) -> web.Response:
        return web.Response(text="Just text, no HTML.\n", content_type="text/plain")


def _status_response(code: int, request: web.Request) -> web.Response:
    headers: dict[str, str] = {}
    retry_after = request.query.get("retry_after")
    if retry_after is not None and code in (429, 503):
        headers["Retry-After"] = retry_after
    if code in BODYLESS:
        return web.Response(status=code, headers=headers)
    if 300 <= code < 400:
        headers["Location"] = request.query.get("location", "/page/0")
    headers["Content-Type"] = HTML
    return web.Response(status=code, headers=headers, text=page_html(f"Status {code}"))


def start_target() -> TargetServer:
    server = TargetServer()
    server.start()
    return server


def main() -> None:
    """``python -m tests.support.target [PORT]``: serve in the foreground, for benchmarks that want
    the target in a process of its own (not sharing a GIL with the code under test)."""
    import sys
    import time

    server = TargetServer()
    server.port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server.start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


if __name__ == "__main__":
    main()
