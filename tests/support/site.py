"""A generated web site for crawl and map tests, and the ground truth about it.

``Site.generate(seed)`` builds a few thousand pages on several hosts, deterministically:

* the main host (``hosts.main``): a home page, sections of pages chained and cross-linked at
  random (so every section page is reachable, and links loop back), a two-page link loop,
  tracking-parameter and ``#fragment`` twins of links, canonical twins (``?color=red`` pages
  whose ``<link rel=canonical>`` names the plain page), a broken link (404), links into
  ``/private/`` which robots.txt disallows (and pages reachable only through it), pages reachable
  only through ``rel=nofollow`` links, and pages that only sitemaps list;
* robots.txt naming a sitemap index whose children are gzipped (``.xml.gz``, served as
  ``application/gzip``), one of them under the disallowed ``/private/``; and a plain
  ``/sitemap.xml`` listing more sitemap-only pages;
* a subdomain (``hosts.subdomain``), a host whose robots.txt sets ``Crawl-delay``
  (``hosts.delayed``) and an external host (``hosts.external``), all linked from the main host;
* hosts serving hostile sitemaps (``HOSTILE_HOSTS``): huge, a gzip bomb (as a ``.gz`` file and
  as a Content-Encoding), indexes nested deep, indexes in a loop, thousands of child sitemaps,
  entity expansion.

The model knows every page's links, so :meth:`Site.expected_crawl` and :meth:`Site.expected_map`
compute the exact set of in-scope URLs for a crawl or a map, independently of the code under
test (plain ``re`` for path patterns, its own breadth-first walk). ``SiteServer`` serves it on
127.0.0.1, telling hosts apart by the Host header (``Site.resolver()`` maps the names there), and
records every URL fetched and when.
"""

from __future__ import annotations

import asyncio
import gzip
import html
import random
import re
import time
import zlib
from collections import deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import cache
from urllib.parse import urlsplit

from aiohttp import web

from tests.support.hostile import StaticResolver
from tests.support.target import TargetServer

SECTIONS = ("docs", "blog", "shop", "news")
PRIVATE_PAGES = 20
SECRET_PAGES = 10  # reachable only through /private/ pages
HIDDEN_PAGES = 10  # reachable only through nofollow links
ARCHIVE_PAGES = 300  # listed only in the gzipped sitemaps
EXTRA_PAGES = 20  # listed only in /sitemap.xml
SUB_PAGES = 30
SLOW_PAGES = 5
EXTERNAL_PAGES = 5
TWIN_EVERY = 10  # every 10th shop page has a ?color=red twin
SITEMAP_CHUNK = 500
GZIP = "application/gzip"
XML = "application/xml"
HTML_TYPE = "text/html"

HOSTILE_HOSTS = {
    "huge": "huge.test",  # one urlset of HUGE_URLS URLs (about 10 MB)
    "bomb": "bomb.test",  # /sitemap.xml.gz inflates to BOMB_BYTES
    "encoded-bomb": "encoded-bomb.test",  # the same bomb as Content-Encoding: gzip
    "deep": "deep.test",  # index -> index -> ... DEEP_LEVELS deep
    "loop": "loop.test",  # a.xml <-> b.xml, each listing itself too
    "many": "many.test",  # one index listing MANY_CHILDREN sitemaps
    "laughs": "laughs.test",  # a billion-laughs entity bomb
    "stalling": "stalling.test",  # a start page at once, a sitemap that takes STALL_SECONDS
}
STALL_SECONDS = 30.0
HUGE_URLS = 200_000
BOMB_BYTES = 100 * 1024 * 1024
DEEP_LEVELS = 50
MANY_CHILDREN = 5_000


@dataclass(frozen=True, slots=True)
class SiteHosts:
    """The host names the site answers to. ``named()`` needs :meth:`Site.resolver` (they do
    not resolve otherwise); ``loopback()`` resolves anywhere, without a subdomain."""

    main: str = "site.test"
    subdomain: str | None = "docs.site.test"
    delayed: str = "slow.test"
    external: str = "elsewhere.test"

    @classmethod
    def named(cls) -> SiteHosts:
        return cls()

    @classmethod
    def loopback(cls) -> SiteHosts:
        return cls(main="127.0.0.1", subdomain=None, delayed="localhost", external="127.0.0.2")


@dataclass(frozen=True, slots=True)
class LinkRef:
    """One ``<a>`` on a page: ``href`` as written, ``target`` the clean URL it leads to."""

    href: str
    target: str
    nofollow: bool = False


@dataclass(slots=True)
class Page:
    url: str  # the clean URL: what crawl_key makes of any spelling of it
    title: str
    links: list[LinkRef] = field(default_factory=list)
    canonical: str | None = None
    status: int = 200


@dataclass(slots=True)
class CrawlTruth:
    """What a crawl of the site must find. ``pages``: in-scope URL -> depth (the start is 0),
    fetched or not; ``disallowed``: those of them robots.txt forbids (never fetched); ``twins``:
    pages whose canonical URL is another page; ``failing``: pages that answer an error."""

    pages: dict[str, int]
    disallowed: set[str]
    twins: set[str]
    failing: set[str]

    @property
    def fetchable(self) -> set[str]:
        return set(self.pages) - self.disallowed


class Site:
    def __init__(self, hosts: SiteHosts, port: int, seed: int, crawl_delay: float) -> None:
        self.hosts = hosts
        self.port = port
        self.seed = seed
        self.crawl_delay = crawl_delay
        self.pages: dict[str, Page] = {}
        # sitemap URL -> (kind, entries); kind "urlset" or "index"; gz is decided by the URL
        self.sitemaps: dict[str, tuple[str, list[str]]] = {}
        self.robots: dict[str, str] = {}

    # ------------------------------------------------------------------ building

    @classmethod
    def generate(
        cls,
        seed: int = 1,
        *,
        pages: int = 3_000,
        port: int,
        hosts: SiteHosts | None = None,
        crawl_delay: float = 0.5,
        archive_pages: int = ARCHIVE_PAGES,
    ) -> Site:
        site = cls(hosts or SiteHosts.named(), port, seed, crawl_delay)
        site._build(random.Random(seed), pages, archive_pages)
        return site

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    def main(self, path: str) -> str:
        return self.url(self.hosts.main, path)

    @property
    def start_url(self) -> str:
        return self.main("/")

    def _add(self, url: str, title: str, **options: object) -> Page:
        page = Page(url, title, **options)
        self.pages[url] = page
        return page

    def _build(self, rng: random.Random, total: int, archive_pages: int) -> None:
        fixed = 1 + 2 + PRIVATE_PAGES + SECRET_PAGES + HIDDEN_PAGES + 1
        per_section = max(4, (total - fixed - archive_pages - EXTRA_PAGES) // len(SECTIONS))
        section_urls = {
            name: [self.main(f"/{name}/{i}") for i in range(per_section)] for name in SECTIONS
        }
        everything = [url for urls in section_urls.values() for url in urls]
        home = self._add(self.start_url, "Home")
        for name in SECTIONS:
            for i, url in enumerate(section_urls[name]):
                page = self._add(url, f"{name.title()} {i}")
                if i + 1 < per_section:
                    page.links.append(_plain(section_urls[name][i + 1]))
                page.links.append(_plain(self.start_url))
                for target in rng.sample(everything, 3):
                    page.links.append(self._twin_link(rng, target))
                if rng.random() < 0.02:
                    page.links.append(_plain(self.main(f"/private/{rng.randrange(PRIVATE_PAGES)}")))
        self._build_twins(section_urls["shop"])
        self._build_private()
        self._build_hidden()
        self._build_loop()
        self._build_other_hosts(rng, everything)
        self._build_home(home, section_urls)
        self._build_sitemaps(rng, everything, archive_pages)
        self._build_robots()

    def _twin_link(self, rng: random.Random, target: str) -> LinkRef:
        """A link to ``target``, sometimes spelled with tracking parameters or a fragment."""
        roll = rng.random()
        if roll < 0.15:
            return LinkRef(f"{target}?utm_source=site&utm_medium=link&gclid=abc", target)
        if roll < 0.25:
            return LinkRef(f"{target}#section-{rng.randrange(5)}", target)
        return _plain(target)

    def _build_twins(self, shop: list[str]) -> None:
        for i, url in enumerate(shop):
            if i % TWIN_EVERY:
                continue
            twin = f"{url}?color=red"
            original = self.pages[url]
            self._add(twin, original.title + " (red)", links=list(original.links), canonical=url)
            original.links.append(_plain(twin))

    def _build_private(self) -> None:
        for i in range(PRIVATE_PAGES):
            page = self._add(self.main(f"/private/{i}"), f"Private {i}")
            page.links.append(_plain(self.main(f"/secret/{i % SECRET_PAGES}")))
        for i in range(SECRET_PAGES):
            self._add(self.main(f"/secret/{i}"), f"Secret {i}", links=[_plain(self.start_url)])

    def _build_hidden(self) -> None:
        for i in range(HIDDEN_PAGES):
            page = self._add(self.main(f"/hidden/{i}"), f"Hidden {i}")
            if i + 1 < HIDDEN_PAGES:
                target = self.main(f"/hidden/{i + 1}")
                page.links.append(LinkRef(target, target, nofollow=True))

    def _build_loop(self) -> None:
        a, b = self.main("/loop/a"), self.main("/loop/b")
        self._add(a, "Loop A", links=[_plain(b), _plain(self.start_url)])
        self._add(b, "Loop B", links=[_plain(a), LinkRef(a + "?utm_campaign=loop", a)])

    def _build_other_hosts(self, rng: random.Random, everything: list[str]) -> None:
        chains = [
            (self.hosts.subdomain, "sub", SUB_PAGES),
            (self.hosts.delayed, "slow", SLOW_PAGES),
            (self.hosts.external, "ext", EXTERNAL_PAGES),
        ]
        for host, prefix, count in chains:
            if host is None:
                continue
            for i in range(count):
                page = self._add(self.url(host, f"/{prefix}/{i}"), f"{prefix.title()} {i}")
                if i + 1 < count:
                    page.links.append(_plain(self.url(host, f"/{prefix}/{i + 1}")))
                page.links.append(_plain(rng.choice(everything)))

    def _build_home(self, home: Page, sections: dict[str, list[str]]) -> None:
        links = [_plain(urls[0]) for urls in sections.values()]
        docs = sections["docs"]
        links += [
            LinkRef(docs[1] + "?utm_source=home&utm_campaign=x", docs[1]),
            LinkRef(docs[2] + "#intro", docs[2]),
            LinkRef("#top", self.start_url),
            _plain(self.main("/private/0")),
            _plain(self.main("/loop/a")),
            _plain(self.main("/missing/0")),
            LinkRef(self.main("/hidden/0"), self.main("/hidden/0"), nofollow=True),
            _plain(sections["shop"][0] + "?color=red"),
            _plain(self.url(self.hosts.delayed, "/slow/0")),
            _plain(self.url(self.hosts.external, "/ext/0")),
        ]
        if self.hosts.subdomain is not None:
            links.append(_plain(self.url(self.hosts.subdomain, "/sub/0")))
        home.links = links
        self._add(self.main("/missing/0"), "Missing", status=404)

    def _build_sitemaps(
        self, rng: random.Random, everything: list[str], archive_pages: int
    ) -> None:
        listed = [url for url in everything if rng.random() < 0.5]
        listed += [self.main(f"/docs/{3}") + "?utm_source=sitemap"]
        archive = [
            self._add(self.main(f"/archive/{i}"), f"Archive {i}").url for i in range(archive_pages)
        ]
        children = []
        for k in range(0, len(listed), SITEMAP_CHUNK):
            child = self.main(f"/sitemaps/pages-{k // SITEMAP_CHUNK}.xml.gz")
            self.sitemaps[child] = ("urlset", listed[k : k + SITEMAP_CHUNK])
            children.append(child)
        archive_map = self.main("/sitemaps/archive.xml.gz")
        self.sitemaps[archive_map] = (
            "urlset",
            [*archive, self.url(self.hosts.external, "/ext/1"), self.main("/private/1")],
        )
        private_map = self.main("/private/sitemap.xml")
        self.sitemaps[private_map] = ("urlset", [self.main("/secret/0")])
        self.sitemaps[self.main("/sitemap_index.xml")] = (
            "index",
            [*children, archive_map, private_map],
        )
        extra = [self._add(self.main(f"/extra/{i}"), f"Extra {i}").url for i in range(EXTRA_PAGES)]
        self.sitemaps[self.main("/sitemap.xml")] = ("urlset", extra)

    def _build_robots(self) -> None:
        self.robots[self.hosts.main] = (
            f"User-agent: *\nDisallow: /private/\n\nSitemap: {self.main('/sitemap_index.xml')}\n"
        )
        self.robots[self.hosts.delayed] = f"User-agent: *\nCrawl-delay: {self.crawl_delay}\n"
        for name, host in HOSTILE_HOSTS.items():
            entry = "/sitemap.xml.gz" if name == "bomb" else "/sitemap.xml"
            self.robots[host] = f"Sitemap: {self.url(host, entry)}\n"

    # ------------------------------------------------------------------ ground truth

    def resolver(self) -> StaticResolver:
        """A DNS where every host of the site is 127.0.0.1."""
        names = [self.hosts.main, self.hosts.delayed, self.hosts.external]
        names += [self.hosts.subdomain] if self.hosts.subdomain else []
        names += list(HOSTILE_HOSTS.values())
        return StaticResolver({name: ["127.0.0.1"] for name in names})

    def disallowed(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.hostname == self.hosts.main and parts.path.startswith("/private/")

    def _site_of(self, url: str) -> str:
        return urlsplit(url).hostname or ""

    def in_scope(
        self,
        url: str,
        *,
        allow_subdomains: bool = False,
        allow_external: bool = False,
        include_paths: Sequence[str] = (),
        exclude_paths: Sequence[str] = (),
    ) -> bool:
        host = self._site_of(url)
        if host != self.hosts.main:
            is_sub = host == self.hosts.subdomain
            if not (allow_external or (allow_subdomains and is_sub)):
                return False
        path = urlsplit(url).path
        if any(re.search(p, path) for p in exclude_paths):
            return False
        return not include_paths or any(re.search(p, path) for p in include_paths)

    def reachable_sitemaps(self) -> list[str]:
        """Sitemaps a reader obeying robots.txt can read: all but the disallowed one."""
        return [url for url in self.sitemaps if not self.disallowed(url)]

    def sitemap_pages(self) -> list[str]:
        """Clean page URLs the readable sitemaps list, in order, without repeats."""
        found: dict[str, None] = {}
        for url in self.reachable_sitemaps():
            kind, entries = self.sitemaps[url]
            if kind == "urlset":
                for entry in entries:
                    found.setdefault(entry.split("?utm_")[0], None)
        return list(found)

    def expected_map(
        self,
        *,
        sitemap: str = "include",
        allow_subdomains: bool = False,
        include_paths: Sequence[str] = (),
        exclude_paths: Sequence[str] = (),
        search: str | None = None,
    ) -> set[str]:
        """What map must answer: the start page and its followable links, and the sitemaps'
        page URLs, all in scope (robots.txt does not filter the list, only what is fetched)."""

        def keep(url: str) -> bool:
            return self.in_scope(
                url,
                allow_subdomains=allow_subdomains,
                include_paths=include_paths,
                exclude_paths=exclude_paths,
            )

        found: set[str] = set()
        if sitemap != "only":
            home = self.pages[self.start_url]
            found |= {self.start_url} | {x.target for x in home.links if not x.nofollow}
        if sitemap != "skip":
            found |= set(self.sitemap_pages())
        found = {url for url in found if keep(url)}
        if search:
            words = search.lower().split()
            found = {url for url in found if all(word in url.lower() for word in words)}
        return found

    def expected_crawl(
        self,
        *,
        max_depth: int | None = None,
        sitemap: str = "include",
        allow_subdomains: bool = False,
        allow_external: bool = False,
        include_paths: Sequence[str] = (),
        exclude_paths: Sequence[str] = (),
    ) -> CrawlTruth:
        """Breadth-first over the model: nofollow links are not followed, disallowed pages are
        found but neither fetched nor expanded, a canonical URL counts at its twin's depth,
        sitemap pages at depth 1; with ``sitemap="only"`` no link is followed."""

        def keep(url: str) -> bool:
            return self.in_scope(
                url,
                allow_subdomains=allow_subdomains,
                allow_external=allow_external,
                include_paths=include_paths,
                exclude_paths=exclude_paths,
            )

        depth: dict[str, int] = {self.start_url: 0}
        queue: deque[str] = deque([self.start_url])
        sitemap_pages = [] if sitemap == "skip" else self.sitemap_pages()
        if max_depth is None or max_depth >= 1:
            for url in sitemap_pages:
                if keep(url) and url not in depth:
                    depth[url] = 1
                    queue.append(url)
        while queue:
            url = queue.popleft()
            page = self.pages.get(url)
            if page is None or self.disallowed(url) or page.status != 200 or sitemap == "only":
                continue
            if page.canonical and keep(page.canonical) and page.canonical not in depth:
                depth[page.canonical] = depth[url]
                queue.append(page.canonical)
            if max_depth is not None and depth[url] >= max_depth:
                continue
            for link in page.links:
                if link.nofollow or link.target in depth or not keep(link.target):
                    continue
                depth[link.target] = depth[url] + 1
                queue.append(link.target)
        return CrawlTruth(
            pages=depth,
            disallowed={url for url in depth if self.disallowed(url)},
            twins={url for url in depth if self.pages.get(url, Page(url, "")).canonical},
            failing={url for url in depth if self.pages.get(url, Page(url, "")).status != 200},
        )

    # ------------------------------------------------------------------ rendering

    def render_page(self, page: Page) -> str:
        head = f"<title>{html.escape(page.title)}</title>"
        if page.canonical:
            head += f'<link rel="canonical" href="{html.escape(page.canonical)}">'
        anchors = "".join(
            f'<li><a href="{html.escape(link.href)}"'
            + (' rel="nofollow"' if link.nofollow else "")
            + f">{html.escape(link.target)}</a></li>"
            for link in page.links
        )
        return (
            f"<!doctype html><html><head>{head}</head><body><h1>{html.escape(page.title)}</h1>"
            f"<p>A page of the generated test site.</p><ul>{anchors}</ul></body></html>"
        )

    def render_sitemap(self, url: str) -> bytes:
        kind, entries = self.sitemaps[url]
        tag, item = ("urlset", "url") if kind == "urlset" else ("sitemapindex", "sitemap")
        body = "".join(f"<{item}><loc>{html.escape(e)}</loc></{item}>" for e in entries)
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<{tag} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</{tag}>'
        ).encode()
        return gzip.compress(xml, mtime=0) if url.endswith(".gz") else xml


def _plain(target: str) -> LinkRef:
    return LinkRef(target, target)


# ---------------------------------------------------------------------- hostile sitemaps


@cache
def huge_sitemap() -> bytes:
    locs = "".join(f"<url><loc>http://huge.test/p/{i}</loc></url>" for i in range(HUGE_URLS))
    return f"<urlset>{locs}</urlset>".encode()


@cache
def sitemap_bomb() -> bytes:
    """``<urlset>`` and BOMB_BYTES of spaces, gzipped (about 100 KB): built in pieces, so
    making it never holds the inflated size either."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    parts = [deflater.compress(b"<urlset>")]
    block = b" " * (1024 * 1024)
    parts += [deflater.compress(block) for _ in range(BOMB_BYTES // len(block))]
    parts.append(deflater.flush())
    return b"".join(parts)


def _laughs() -> bytes:
    entities = ['<!ENTITY lol0 "lol">']
    entities += [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)]
    return (
        f'<?xml version="1.0"?><!DOCTYPE lolz [{"".join(entities)}]>'
        "<urlset><url><loc>http://laughs.test/&lol9;</loc></url></urlset>"
    ).encode()


LAUGHS = _laughs()


def _index(urls: Collection[str]) -> bytes:
    items = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in urls)
    return f"<sitemapindex>{items}</sitemapindex>".encode()


def _urlset(urls: Collection[str]) -> bytes:
    items = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    return f"<urlset>{items}</urlset>".encode()


# ---------------------------------------------------------------------- the server


class SiteServer(TargetServer):
    """Serves a :class:`Site` (and the hostile sitemap hosts) on 127.0.0.1, by Host header.

    ``fetched`` lists every URL requested (``http://host:port/path?query``), ``fetch_times``
    the loop time each request arrived, per host (for Crawl-delay tests).
    """

    def __init__(
        self,
        seed: int = 1,
        pages: int = 3_000,
        crawl_delay: float = 0.5,
        hosts: SiteHosts | None = None,
        archive_pages: int = ARCHIVE_PAGES,
    ) -> None:
        super().__init__()
        self._seed = seed
        self._pages = pages
        self._archive_pages = archive_pages
        self._crawl_delay = crawl_delay
        self._hosts = hosts
        self.site: Site | None = None
        self.fetched: list[str] = []
        self.fetch_times: dict[str, list[float]] = {}

    def start(self) -> None:
        super().start()
        self.site = Site.generate(
            self._seed,
            pages=self._pages,
            port=self.port,
            hosts=self._hosts,
            crawl_delay=self._crawl_delay,
            archive_pages=self._archive_pages,
        )

    def reset(self) -> None:
        super().reset()
        self.fetched.clear()
        self.fetch_times.clear()

    def _routes(self) -> list[web.RouteDef]:
        return [web.get("/{tail:.*}", self._dispatch)]

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        host = (request.host or "").rsplit(":", 1)[0].lower()
        self.fetched.append(f"http://{request.host}{request.path_qs}")
        self.fetch_times.setdefault(host, []).append(time.monotonic())
        site = self.site
        assert site is not None
        hostile = {v: k for k, v in HOSTILE_HOSTS.items()}.get(host)
        if request.path == "/robots.txt":
            robots = site.robots.get(host)
            if robots is None:
                return web.Response(status=404, text="no robots.txt")
            return web.Response(text=robots, content_type="text/plain")
        if hostile is not None:
            return await _hostile(hostile, request, site)
        url = site.url(host, request.path)
        if url in site.sitemaps:
            body = site.render_sitemap(url)
            return web.Response(body=body, content_type=GZIP if url.endswith(".gz") else XML)
        page = site.pages.get(f"{url}?{request.query_string}" if request.query_string else url)
        page = page or site.pages.get(url)
        if page is None:
            return web.Response(status=404, text="not found")
        return web.Response(
            status=page.status,
            text=site.render_page(page),
            content_type=HTML_TYPE,
            charset="utf-8",
        )


async def _hostile(name: str, request: web.Request, site: Site) -> web.StreamResponse:
    host = HOSTILE_HOSTS[name]
    path = request.path
    if name == "huge":
        return web.Response(body=huge_sitemap(), content_type=XML)
    if name == "bomb":
        if path != "/sitemap.xml.gz":
            return web.Response(status=404)
        return web.Response(body=sitemap_bomb(), content_type=GZIP)
    if name == "encoded-bomb":
        return web.Response(
            body=sitemap_bomb(), headers={"Content-Type": XML, "Content-Encoding": "gzip"}
        )
    if name == "laughs":
        return web.Response(body=LAUGHS, content_type=XML)
    if name == "stalling":
        if path == "/":
            link = f'<a href="{site.url(host, "/linked")}">linked</a>'
            return web.Response(text=f"<html><body>{link}</body></html>", content_type=HTML_TYPE)
        await _stall(request)
        return web.Response(body=_urlset([site.url(host, "/late")]), content_type=XML)
    if name == "loop":
        a, b = site.url(host, "/sitemap.xml"), site.url(host, "/b.xml")
        body = _index([b, a]) if path == "/sitemap.xml" else _index([a, b])
        if path not in ("/sitemap.xml", "/b.xml"):
            return web.Response(status=404)
        return web.Response(body=body, content_type=XML)
    if name == "deep":
        level = 0 if path == "/sitemap.xml" else int(path.strip("/").split(".")[0].split("-")[1])
        if level >= DEEP_LEVELS:
            return web.Response(body=_urlset([site.url(host, "/bottom")]), content_type=XML)
        children = [site.url(host, f"/level-{level + 1}.xml")]
        return web.Response(body=_index(children), content_type=XML)
    if name == "many":
        if path == "/sitemap.xml":
            urls = [site.url(host, f"/child-{i}.xml") for i in range(MANY_CHILDREN)]
            return web.Response(body=_index(urls), content_type=XML)
        return web.Response(body=_urlset([site.url(host, f"/p{path[:-4]}")]), content_type=XML)
    return web.Response(status=404)


async def _stall(request: web.Request) -> None:
    """Up to STALL_SECONDS, but no longer than the client waits (the server's teardown would
    otherwise wait for the handler)."""
    deadline = time.monotonic() + STALL_SECONDS
    while time.monotonic() < deadline:
        transport = request.transport
        if transport is None or transport.is_closing():
            return
        await asyncio.sleep(0.05)


def start_site(
    seed: int = 1,
    pages: int = 3_000,
    crawl_delay: float = 0.5,
    hosts: SiteHosts | None = None,
    archive_pages: int = ARCHIVE_PAGES,
) -> SiteServer:
    """``archive_pages``: how many pages only the gzipped sitemaps list (a crawl's largest
    share of a small site)."""
    server = SiteServer(seed, pages, crawl_delay, hosts, archive_pages)
    server.start()
    return server
