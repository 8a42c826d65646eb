"""A site whose pages change on command, for change detection and monitor tests.

Every page has a title, a few paragraphs, and may carry noise: parts that differ on every load
without anything having changed for a reader. The site knows the truth: which page really
changed, when, and from which line to which.

Page kinds (``PageKind``), each a few pages under its own path:

* ``/etag/N``: no noise; an ``ETag`` per content version, ``304`` to a matching
  ``If-None-Match``;
* ``/dated/N``: no noise; ``Last-Modified`` at the last change, ``304`` to an
  ``If-Modified-Since`` at or after it;
* ``/noisy/N``: never changes, but every load differs: a timestamp (``.stamp``), a visit
  counter (``#visits``), a rotating ad with its own link (``.promo``), and text spelled
  differently (runs of whitespace, no-break spaces, zero-width spaces), which only normalization
  removes;
* ``/mixed/N``: the element noise of ``/noisy/`` and real changes on command; one of its
  paragraphs holds a timestamp inline (``Widget: $19.99 <span class="stamp">…</span>``).

Noise sits inside ``<main>``, where the main-content extractor keeps it: only the ignore
selectors :data:`NOISE_SELECTORS` remove it. ``/`` links every live page, and pages can be added
and removed (for crawl monitors). Every response is recorded (:class:`Served`): its status, its
body's size in bytes, and whether the request was conditional.
"""

from __future__ import annotations

import email.utils
import html
import random
from dataclasses import dataclass, field
from enum import StrEnum

from aiohttp import web

from tests.support.target import TargetServer

#: What a monitor of this site ignores.
NOISE_SELECTORS = (".stamp", ".promo", "#visits")
ADS = ("Buy one, get one free", "New: the Gizmo 3000", "Sale ends Sunday", "Try our app")
# A fixed clock: Last-Modified moves one minute per change, whatever the real time.
_EPOCH = 1_796_000_000


class PageKind(StrEnum):
    ETAG = "etag"
    DATED = "dated"
    NOISY = "noisy"
    MIXED = "mixed"

    @property
    def changes(self) -> bool:
        return self is not PageKind.NOISY

    @property
    def noisy(self) -> bool:
        return self in (PageKind.NOISY, PageKind.MIXED)


@dataclass(frozen=True, slots=True)
class Edit:
    """A real change: ``old`` line became ``new`` (each exactly a line of the Markdown)."""

    path: str
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class Served:
    path: str
    status: int
    body_bytes: int
    conditional: bool


@dataclass(slots=True)
class Page:
    path: str
    kind: PageKind
    title: str
    paragraphs: list[str]
    version: int = 1
    modified: int = _EPOCH  # Unix seconds of the last change
    loads: int = 0

    @property
    def etag(self) -> str:
        return f'"{self.path.strip("/").replace("/", "-")}-v{self.version}"'


@dataclass(slots=True)
class ChangingSite:
    """The model: pages, their versions, and every edit made."""

    seed: int
    pages: dict[str, Page] = field(default_factory=dict)
    edits: list[Edit] = field(default_factory=list)
    _rng: random.Random = field(init=False)
    _prices: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    @classmethod
    def generate(cls, seed: int, per_kind: int = 3) -> ChangingSite:
        site = cls(seed)
        for kind in PageKind:
            for number in range(per_kind):
                site.add_page(f"/{kind.value}/{number}", kind)
        return site

    def add_page(self, path: str, kind: PageKind = PageKind.ETAG) -> None:
        name = path.strip("/").replace("/", " ").title()
        paragraphs = [
            f"{name} is one of our pages, café included.",
            f"Widget: ${self._rng.randint(5, 99)}.99",
            f"Shipping takes {self._rng.randint(2, 9)} days.",
            "Prices include taxes.",
        ]
        self.pages[path] = Page(path, kind, f"{name} prices", paragraphs)

    def remove_page(self, path: str) -> None:
        del self.pages[path]

    @property
    def changing_paths(self) -> list[str]:
        return sorted(path for path, page in self.pages.items() if page.kind.changes)

    def change(self, path: str) -> Edit:
        """A real change of ``path``: one of its paragraphs rewritten (a price, a delay, a
        sentence), a new version, a new modification time."""
        page = self.pages[path]
        if not page.kind.changes:
            raise ValueError(f"{path} is a noise-only page")
        index = self._rng.randrange(len(page.paragraphs))
        old = page.paragraphs[index]
        new = f"{old} (revision {page.version + 1})" if index != 1 else _reprice(old, self._rng)
        page.paragraphs[index] = new
        page.version += 1
        page.modified += 60
        edit = Edit(path, old, new)
        self.edits.append(edit)
        return edit

    # --- rendering ---------------------------------------------------------------------------

    def render(self, page: Page) -> str:
        page.loads += 1
        loads = page.loads
        parts = [f"<h1>{html.escape(page.title)}</h1>"]
        if page.kind.noisy:
            stamp = f"2026-12-04 12:{loads // 60 % 60:02}:{loads % 60:02}.{loads * 7919 % 1000:03}"
            parts.append(f'<p>Updated <time class="stamp">{stamp}</time></p>')
        for index, paragraph in enumerate(page.paragraphs):
            text = html.escape(paragraph)
            if page.kind is PageKind.NOISY:
                text = _respelled(text, loads)
            if page.kind.noisy and index == 1:
                text += f' <span class="stamp">as of {loads * 37 % 24:02}:{loads % 60:02}</span>'
            parts.append(f"<p>{text}</p>")
        if page.kind.noisy:
            ad = ADS[loads % len(ADS)]
            parts.append(f'<div class="promo"><a href="/ads/{loads}">{html.escape(ad)}</a></div>')
            parts.append(f'<p id="visits">Visitor number {10_000 + loads * 13}</p>')
        return (
            "<!doctype html><html><head>"
            f"<title>{html.escape(page.title)}</title>"
            f'<meta name="description" content="{html.escape(page.title)} and more">'
            '</head><body><nav><a href="/">Home</a></nav>'
            f"<main>{''.join(parts)}</main>"
            "<footer>Example shop</footer></body></html>"
        )

    def render_index(self) -> str:
        links = "".join(f'<li><a href="{path}">{path}</a></li>' for path in sorted(self.pages))
        return (
            "<!doctype html><html><head><title>Index</title></head>"
            f"<body><main><ul>{links}</ul></main></body></html>"
        )


def _reprice(line: str, rng: random.Random) -> str:
    label, _, price = line.partition("$")
    dollars = int(price.split(".")[0])
    return f"{label}${dollars + rng.randint(1, 9)}.{rng.randint(0, 98):02}"


def _respelled(text: str, loads: int) -> str:
    """The same words, spelled differently on every load: what a reader sees does not change.
    (Runs of whitespace and no-break spaces the renderer already evens out; zero-width spaces,
    soft hyphens and a decomposed é reach the text.)"""
    variant = loads % 5
    if variant == 0:
        return text.replace(" ", "\n      ", 1)
    if variant == 1:
        return text.replace(" ", "&nbsp;", 1)
    if variant == 2:
        return text.replace(" ", " \u200b", 1)
    if variant == 3:
        return text.replace("o", "o&shy;", 1)
    return text.replace("café", "cafe\u0301")


class ChangingSiteServer(TargetServer):
    """Serves a :class:`ChangingSite` on 127.0.0.1; ``served`` records every response."""

    def __init__(self, seed: int = 1, per_kind: int = 3) -> None:
        super().__init__()
        self.site = ChangingSite.generate(seed, per_kind)
        self.served: list[Served] = []

    def reset(self) -> None:
        super().reset()
        self.served.clear()

    def _routes(self) -> list[web.RouteDef]:
        return [web.get("/{tail:.*}", self._dispatch)]

    def served_for(self, path: str) -> list[Served]:
        return [served for served in self.served if served.path == path]

    async def _dispatch(self, request: web.Request) -> web.Response:
        response = self._answer(request)
        body = response.body
        size = len(body) if isinstance(body, bytes | bytearray) else 0
        conditional = "If-None-Match" in request.headers or "If-Modified-Since" in request.headers
        self.served.append(Served(request.path, response.status, size, conditional))
        return response

    def _answer(self, request: web.Request) -> web.Response:
        if request.path == "/":
            return web.Response(text=self.site.render_index(), content_type="text/html")
        page = self.site.pages.get(request.path)
        if page is None:
            return web.Response(status=404, text="not found")
        validators = _validators(page)
        if validators and _not_modified(request, page):
            self.not_modified += 1
            return web.Response(status=304, headers=validators)
        return web.Response(
            text=self.site.render(page),
            content_type="text/html",
            charset="utf-8",
            headers=validators,
        )


def _validators(page: Page) -> dict[str, str]:
    if page.kind is PageKind.ETAG:
        return {"ETag": page.etag}
    if page.kind is PageKind.DATED:
        return {"Last-Modified": email.utils.formatdate(page.modified, usegmt=True)}
    return {}


def _not_modified(request: web.Request, page: Page) -> bool:
    if page.kind is PageKind.ETAG:
        tags = [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]
        return page.etag in tags
    since = request.headers.get("If-Modified-Since")
    if page.kind is not PageKind.DATED or since is None:
        return False
    try:
        when = email.utils.parsedate_to_datetime(since).timestamp()
    except (TypeError, ValueError):
        return False
    return when >= page.modified


def start_changing_site(seed: int = 1, per_kind: int = 3) -> ChangingSiteServer:
    server = ChangingSiteServer(seed, per_kind)
    server.start()
    return server
