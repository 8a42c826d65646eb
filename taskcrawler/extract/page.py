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

from taskcrawler.domain.pages import Link
from taskcrawler.domain.selectors import IgnoreSelector
from taskcrawler.extract.authorship import authorship
from taskcrawler.extract.content import main_content
from taskcrawler.extract.decode import decode_html
from taskcrawler.extract.ignore import remove_ignored
from taskcrawler.extract.links import MAX_LINKS_PER_PAGE, collect_links, count_links
from taskcrawler.extract.metadata import (
    HeadInfo,
    head_metadata,
    headings,
    read_head,
    read_json_ld,
)
from taskcrawler.extract.nesting import limit_nesting
from taskcrawler.extract.render import Renderer
from taskcrawler.extract.urls import Resolver

#: What :func:`extract` can be asked for. ``link_targets``: the links as ``links`` has them but
#: without their anchor texts (a crawl follows a page's links whatever its formats; building
#: every anchor's text costs about 8% of an extraction on real pages, for nothing).
FORMATS = frozenset({"metadata", "markdown", "text", "html", "links", "link_targets"})


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
    tree: LexborHTMLParser,
    resolver: Resolver,
    info: HeadInfo,
    wanted: frozenset[str],
    *,
    max_links: int,
) -> tuple[list[Link], dict[str, int]]:
    nofollow = "nofollow" in info.robots or "none" in info.robots.split()
    if "links" in wanted or "link_targets" in wanted:
        return collect_links(
            tree,
            resolver,
            page_nofollow=nofollow,
            max_links=max_links,
            with_text="links" in wanted,
        )
    return [], count_links(tree, resolver, page_nofollow=nofollow, max_links=max_links)


def extract(
    body: bytes,
    *,
    url: str,
    charset: str | None = None,
    formats: Collection[str] = ("metadata",),
    max_links: int = MAX_LINKS_PER_PAGE,
    ignore: Sequence[IgnoreSelector] = (),
) -> Extraction:
    """Parse ``body`` (the page as fetched, whose final URL is ``url``) and return what it says.

    ``charset`` is the one from the HTTP ``Content-Type`` header, if any. At most ``max_links``
    links are kept (``metadata["links"]`` counts them all and says whether some were cut).
    ``ignore``: elements to read the page without (see :mod:`taskcrawler.domain.selectors`),
    removed before anything is read from it, metadata and links included; the ``html`` format
    stays the page as fetched.
    Never raises on any body; raises ``ValueError`` only for a format name not in
    :data:`FORMATS`.
    """
    wanted = _check_formats(formats)
    decoded = decode_html(body, charset)
    markup = limit_nesting(decoded.text)
    # Valid UTF-8 as fetched is what lexbor would be given anyway: not encoded once more.
    utf8 = decoded.utf8 if markup is decoded.text else None
    tree = LexborHTMLParser(utf8 if utf8 is not None else markup)
    remove_ignored(tree, ignore)
    info = read_head(tree)
    resolver = Resolver(url, info.base_href)
    metadata = head_metadata(tree, info, resolver)
    json_ld, json_ld_errors = read_json_ld(tree)
    metadata.update(authorship(tree, info, json_ld, url))
    links, link_counts = _link_counts(tree, resolver, info, wanted, max_links=max_links)

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
    title = _outside_title(content.nodes, metadata["headings"]["h1"])
    if "markdown" in wanted:
        result.markdown = Renderer(resolver, markdown=True).render(
            content.nodes, title=title, trim_tail=content.scored
        )
    if "text" in wanted:
        result.text = Renderer(resolver, markdown=False).render(
            content.nodes, title=title, trim_tail=content.scored
        )
    return result


def _outside_title(nodes: list[LexborNode], h1s: list[str]) -> str | None:
    """The page's ``h1`` when the content does not contain it (it sat above an article)."""
    if not nodes or not h1s or any(node.css_first("h1") is not None for node in nodes):
        return None
    return h1s[0]
