"""The site of the multi-host tests: one process answering on many addresses, each a host of its
own to the crawler, every page after a delay so the work is bound by waiting, not by CPU.

Run in the site's network namespace (``python -m tests.support.multihost_site --port P ADDRESS…``).
It records who fetched what: each request's client address (which worker host sent it), the
requests in flight per host and the most at once, so a test can tell a page fetched twice from a
page fetched once, and check politeness across worker hosts from the site's side.

- ``GET /p/{name}?delay=S``: a page answered after S seconds (default 0.5);
- ``GET /crawl/{n}?pages=N&delay=S``: a site spread over subdomains of ``--domain``: page 0
  (on the domain itself) links to pages 1..N, page i on subdomain ``h{i % 20}``; the others link
  back to page 0;
- ``GET /_stats``: what it saw, as JSON; ``POST /_reset`` forgets it.
"""

from __future__ import annotations

import argparse
import asyncio
import html
from collections import Counter, defaultdict

from aiohttp import web

MAX_DELAY_SECONDS = 30.0


class Site:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        # "host/path?query" -> the client address of each request, in order
        self.fetches: dict[str, list[str]] = defaultdict(list)
        self.in_flight: Counter[str] = Counter()  # per host
        self.most_in_flight: Counter[str] = Counter()
        self.fetching: dict[str, str] = {}  # "host/path?query" -> client, while it is answered

    async def answer(self, request: web.Request, body: str, delay: float) -> web.Response:
        key = f"{request.host}{request.path_qs}"
        client = request.remote or "?"
        self.fetches[key].append(client)
        self.in_flight[request.host] += 1
        self.most_in_flight[request.host] = max(
            self.most_in_flight[request.host], self.in_flight[request.host]
        )
        self.fetching[key] = client
        try:
            await asyncio.sleep(min(max(delay, 0.0), MAX_DELAY_SECONDS))
        finally:
            # Before the answer is written: the crawler learns a page is done only after the
            # site stopped counting it, so the site never sees more at once than the crawler sent.
            self.in_flight[request.host] -= 1
            self.fetching.pop(key, None)
        return web.Response(text=body, content_type="text/html")


def _delay(request: web.Request, default: float) -> float:
    try:
        return float(request.query.get("delay", default))
    except ValueError:
        return default


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html><head><title>{html.escape(title)}</title></head><body>"
        f"<h1>{html.escape(title)}</h1><p>A page of the multi-host test site.</p>{body}"
        "</body></html>"
    )


def app(site: Site, domain: str, port: int) -> web.Application:
    async def page(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        return await site.answer(request, _page(f"Page {name}", ""), _delay(request, 0.5))

    async def crawl(request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        pages = min(int(request.query.get("pages", "10")), 1000)
        delay = _delay(request, 0.2)
        query = f"?pages={pages}&delay={delay:g}"
        if n == 0:
            links = "".join(
                f'<a href="http://h{i % 20}.{domain}:{port}/crawl/{i}{query}">page {i}</a> '
                for i in range(1, pages + 1)
            )
        else:
            links = f'<a href="http://{domain}:{port}/crawl/0{query}">start</a>'
        return await site.answer(request, _page(f"Crawl page {n}", f"<p>{links}</p>"), delay)

    async def stats(_: web.Request) -> web.Response:
        return web.json_response(
            {
                "fetches": site.fetches,
                "most_in_flight": site.most_in_flight,
                "fetching": site.fetching,
            }
        )

    async def reset(_: web.Request) -> web.Response:
        site.reset()
        return web.json_response({})

    application = web.Application()
    application.add_routes(
        [
            web.get("/p/{name}", page),
            web.get(r"/crawl/{n:\d+}", crawl),
            web.get("/_stats", stats),
            web.post("/_reset", reset),
            web.get("/robots.txt", lambda _: asyncio.sleep(0, web.Response(status=404))),
        ]
    )
    return application


async def serve(addresses: list[str], port: int, domain: str) -> None:
    runner = web.AppRunner(app(Site(), domain, port), access_log=None)
    await runner.setup()
    for address in addresses:
        await web.TCPSite(runner, address, port).start()
    print(f"serving on {len(addresses)} addresses, port {port}", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--domain", default="site.test")
    parser.add_argument("addresses", nargs="+")
    args = parser.parse_args()
    asyncio.run(serve(args.addresses, args.port, args.domain))


if __name__ == "__main__":
    main()
