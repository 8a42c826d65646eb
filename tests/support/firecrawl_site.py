"""The local site Firecrawl's clients scrape in the tests: an article with its furniture, a page
that shows the headers it got, a redirect to another host name, PDFs, a page that changes, a
small site to crawl, and the same over HTTPS with a self-signed certificate.

Served on its own event loop in a daemon thread (the SDKs block the test's threads), on
127.0.0.1; ``localhost`` names the same server as another host, for the redirect tests. Every
request is recorded with its headers, so a test can say what reached the site.
"""

from __future__ import annotations

import asyncio
import html
import ssl
import subprocess
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from tests.support.pdfs import pdf_document

PIXEL = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAAAAgAB4iG8MwAAAABJRU5ErkJggg=="
)
PDF_TITLE = "Quarterly Figures"
PDF_PAGES = [
    ["Revenue grew by ten percent in the quarter.", "Costs stayed flat."],
    ["The second page speaks of the outlook."],
    ["The third page lists the risks."],
]


def article_html() -> str:
    return f"""<!doctype html><html lang="en"><head><title>The Article</title>
<meta name="description" content="An article to read"></head><body>
<nav class="menu"><a href="/">Home</a> <a href="/about">About us</a></nav>
<header class="site-header"><p>Site banner words</p></header>
<main><article><h1>River bridge repairs</h1>
<p class="lead">The council said on Tuesday that repairs to the old river bridge will cost more
than planned, as engineers found deeper damage in the piers than the survey had shown.</p>
<p>Work will start in spring and last two years; the bridge stays open to walkers.</p>
<div class="ad-slot advert">Buy our widgets</div>
<figure><img src="/img/bridge.jpg" alt="The bridge"><img src="{PIXEL}" alt="inline"></figure>
<p>Residents asked for a ferry while the bridge is closed to cars.</p>
</article></main>
<footer class="footer"><p>Footer words and copyright</p></footer>
<script>document.title = "changed";</script>
</body></html>"""


def crawl_page(n: int, last: int) -> str:
    links = " ".join(f'<a href="/crawl/{m}">page {m}</a>' for m in range(last + 1) if m != n)
    body = f"<p>This is crawled page number {n}, with words enough to be read.</p><p>{links}</p>"
    return f"<!doctype html><title>Crawl {n}</title><body><h1>Crawl {n}</h1>{body}</body>"


@dataclass(frozen=True)
class Seen:
    """One request the site got, and when (the site's monotonic clock)."""

    host: str
    path: str
    headers: dict[str, str]
    at: float = 0.0


class FirecrawlSite:
    def __init__(self, workdir: Path) -> None:
        self.seen: list[Seen] = []
        self.versions: dict[str, int] = {}
        self.gone: set[str] = set()
        self.crawl_pages = 4
        #: Requests being answered now and the most at once, by their X-Run header.
        self.in_flight: Counter[str] = Counter()
        self.most_in_flight: Counter[str] = Counter()
        self._workdir = workdir
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.tls_port = 0

    # --- where ------------------------------------------------------------------------------

    def url(self, path: str, *, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def tls_url(self, path: str) -> str:
        return f"https://localhost:{self.tls_port}{path}"

    def requests_to(self, path: str) -> list[Seen]:
        return [seen for seen in self.seen if seen.path == path]

    # --- serving ----------------------------------------------------------------------------

    def start(self) -> FirecrawlSite:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        return self

    def close(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _start(self) -> None:
        app = web.Application(middlewares=[self._record])
        app.router.add_get("/article", self._article)
        app.router.add_get("/headers", self._headers)
        app.router.add_get("/redirect-away", self._redirect_away)
        app.router.add_get("/doc.pdf", self._pdf)
        app.router.add_get("/broken.pdf", self._broken_pdf)
        app.router.add_get("/huge.pdf", self._huge_pdf)
        app.router.add_get("/changing/{name}", self._changing)
        app.router.add_get("/crawl/{n}", self._crawl)
        app.router.add_get("/img/{name}", self._image)
        app.router.add_get("/rendered", self._rendered)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        plain = web.TCPSite(self._runner, "127.0.0.1", 0)
        await plain.start()
        secure = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._tls())
        await secure.start()
        self.port = plain._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.tls_port = secure._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def _tls(self) -> ssl.SSLContext:
        """A self-signed certificate for localhost, made with the system's openssl."""
        cert, key = self._workdir / "site.crt", self._workdir / "site.key"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
            check=True,
            capture_output=True,
        )  # fmt: skip
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        return context

    def runs(self, run: str) -> list[Seen]:
        return [seen for seen in self.seen if seen.headers.get("X-Run") == run]

    @web.middleware
    async def _record(self, request: web.Request, handler: web.Handler) -> web.StreamResponse:
        at = asyncio.get_running_loop().time()
        self.seen.append(Seen(request.host.split(":")[0], request.path, dict(request.headers), at))
        run = request.headers.get("X-Run", "")
        self.in_flight[run] += 1
        self.most_in_flight[run] = max(self.most_in_flight[run], self.in_flight[run])
        try:
            # X-Slow: seconds to answer in, so that fetches of one run overlap when allowed.
            await asyncio.sleep(min(float(request.headers.get("X-Slow", "0")), 2.0))
            return await handler(request)
        finally:
            self.in_flight[run] -= 1

    async def _article(self, request: web.Request) -> web.Response:
        return web.Response(text=article_html(), content_type="text/html")

    async def _headers(self, request: web.Request) -> web.Response:
        shown = "".join(
            f"<li>{html.escape(name)}: {html.escape(value)}</li>"
            for name, value in sorted(request.headers.items())
        )
        page = f"<!doctype html><title>Headers</title><body><h1>Headers</h1><ul>{shown}</ul>"
        return web.Response(text=page, content_type="text/html")

    async def _redirect_away(self, request: web.Request) -> web.Response:
        raise web.HTTPFound(self.url("/headers", host="localhost"))

    async def _pdf(self, request: web.Request) -> web.Response:
        body = pdf_document(PDF_TITLE, PDF_PAGES, info_title="figures.pdf")
        return web.Response(body=body, content_type="application/pdf")

    async def _broken_pdf(self, request: web.Request) -> web.Response:
        return web.Response(body=b"%PDF-1.4 this is not a PDF", content_type="application/pdf")

    async def _huge_pdf(self, request: web.Request) -> web.Response:
        """A PDF of 3 MB: past the tests' body limit."""
        lines = ["A line of a very long document, repeated."] * 40
        body = pdf_document("Huge", [lines] * 1500)
        return web.Response(body=body, content_type="application/pdf")

    async def _changing(self, request: web.Request) -> web.Response:
        """``tick-…`` changes on every request, ``once-…`` is gone after the first, any other
        name stays the same."""
        name = request.match_info["name"]
        if name in self.gone:
            raise web.HTTPNotFound()
        version = self.versions.get(name, 1)
        if name.startswith("tick-"):
            self.versions[name] = version + 1
        elif name.startswith("once-"):
            self.gone.add(name)
        page = (
            f"<!doctype html><title>Changing</title><body><article><h1>Changing</h1>"
            f"<p>This page is at version {version} of its text, which is long enough.</p>"
            "</article></body>"
        )
        return web.Response(text=page, content_type="text/html")

    async def _crawl(self, request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        if n > self.crawl_pages:
            raise web.HTTPNotFound()
        return web.Response(text=crawl_page(n, self.crawl_pages), content_type="text/html")

    async def _rendered(self, request: web.Request) -> web.Response:
        """What a browser says of itself (language, time zone), an ad server's script, and a
        picture from this host and one from another."""
        page = f"""<!doctype html><title>Rendered</title><body><h1>Rendered</h1>
<p id="lang"></p><p id="zone"></p>
<script>
document.getElementById("lang").textContent = "lang:" + navigator.language;
document.getElementById("zone").textContent =
  "zone:" + Intl.DateTimeFormat().resolvedOptions().timeZone;
</script>
<script src="https://securepubads.g.doubleclick.net/tag/js/gpt.js"></script>
<img src="/img/here.gif"><img src="{self.url("/img/away.gif", host="localhost")}">
</body>"""
        return web.Response(text=page, content_type="text/html")

    async def _image(self, request: web.Request) -> web.Response:
        return web.Response(body=b"GIF89a", content_type="image/gif")
