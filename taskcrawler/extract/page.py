"""The entry point: ``extract(body, url=…, charset=…, formats=…)``. Pure: bytes in, data out.

The document is decoded once and parsed once; every format reads the same tree, in an order that
lets the cheap parts go first: head metadata and links are read from the untouched tree, then the
boilerplate is removed in place and the main content measured and, if asked, rendered.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from taskcrawler.domain.selectors import IgnoreSelector
from taskcrawler.extract.content import main_content
from taskcrawler.extract.decode import decode_html
from taskcrawler.extract.ignore import remove_ignored
from taskcrawler.extract.links import Link, collect_links, count_links, count_links_fast
from taskcrawler.extract.metadata import (
    HeadInfo,
    head_metadata,
    headings,
    read_head,
    read_json_ld,
)
from taskcrawler.extract.render import Renderer
from taskcrawler.extract.urls import Resolver

FORMATS = frozenset({"metadata", "markdown", "text", "html", "links"})


@dataclass(slots=True)
class Extraction:
    """What a page says. ``metadata`` is always filled; the rest only when its format was asked."""

    title: str | None
    metadata: dict[str, Any] = field(default_factory=dict)
    markdown: str | None = None
    text: str | None = None
    html: str | None = None
    links: list[Link] = field(default_factory=list)
    encoding: str = "utf-8"


def _check_formats(formats: Collection[str]) -> frozenset[str]:
    if isinstance(formats, str):
        formats = (formats,)
    wanted = frozenset(formats)
    unknown = wanted - FORMATS
    if unknown:
        raise ValueError(f"unknown formats {sorted(unknown)}; known: {sorted(FORMATS)}")
    return wanted


def _link_counts(
    tree: LexborHTMLParser, resolver: Resolver, info: HeadInfo, *, want_links: bool
) -> tuple[list[Link], dict[str, int]]:
    nofollow = "nofollow" in info.robots or "none" in info.robots.split()
    if want_links:
        links = collect_links(tree, resolver, page_nofollow=nofollow)
        return links, count_links(links)
    return [], count_links_fast(tree, resolver, page_nofollow=nofollow)


def extract(
    body: bytes,
    *,
    url: str,
    charset: str | None = None,
    formats: Collection[str] = ("metadata",),
    ignore: Sequence[IgnoreSelector] = (),
) -> Extraction:
    """Parse ``body`` (the page as fetched, whose final URL is ``url``) and return what it says.

    ``charset`` is the one from the HTTP ``Content-Type`` header, if any. ``ignore``: elements
    to read the page without (see :mod:`taskcrawler.domain.selectors`), removed before anything
    is read from it, metadata and links included; the ``html`` format stays the page as fetched.
    Never raises on any body; raises ``ValueError`` only for a format name not in
    :data:`FORMATS`.
    """
    wanted = _check_formats(formats)
    decoded = decode_html(body, charset)
    tree = LexborHTMLParser(decoded.text)
    remove_ignored(tree, ignore)
    info = read_head(tree)
    resolver = Resolver(url, info.base_href)
    metadata = head_metadata(tree, info, resolver)
    json_ld, json_ld_errors = read_json_ld(tree)
    links, link_counts = _link_counts(tree, resolver, info, want_links="links" in wanted)

    content = main_content(tree)  # removes the boilerplate from the tree
    metadata.update(
        json_ld=json_ld,
        json_ld_errors=json_ld_errors,
        headings=headings(tree),
        word_count=content.word_count,
        content_hash=content.content_hash,
        links=link_counts,
    )

    result = Extraction(
        title=metadata["title"],
        metadata=metadata,
        links=links,
        html=decoded.text if "html" in wanted else None,
        encoding=decoded.encoding,
    )
    title = _outside_title(content.root, metadata["headings"]["h1"])
    if "markdown" in wanted:
        result.markdown = Renderer(resolver, markdown=True).render(content.root, title=title)
    if "text" in wanted:
        result.text = Renderer(resolver, markdown=False).render(content.root, title=title)
    return result


def _outside_title(root: LexborNode | None, h1s: list[str]) -> str | None:
    """The page's ``h1`` when the content root does not contain it (it sat above an article)."""
    if root is None or not h1s or root.css_first("h1") is not None:
        return None
    return h1s[0]
