"""The entry point: ``extract(body, url=…, charset=…, formats=…)``. Pure: bytes in, data out.

The document is decoded once and parsed once; every format reads the same tree, in an order that
lets the cheap parts go first: head metadata and links are read from the untouched tree, then the
boilerplate is removed in place and the main content measured and, if asked, rendered.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from html import escape as html_escape
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from taskcrawler.domain.pages import Link
from taskcrawler.domain.selectors import IgnoreSelector
from taskcrawler.extract.authorship import authorship
from taskcrawler.extract.content import MainContent, chosen_content, main_content, whole_page
from taskcrawler.extract.decode import decode_html
from taskcrawler.extract.ignore import outermost_matched, remove_ignored
from taskcrawler.extract.links import MAX_LINKS_PER_PAGE, collect_links, count_links
from taskcrawler.extract.markdown import LAZY_SOURCES, MarkdownRenderer
from taskcrawler.extract.metadata import (
    HeadInfo,
    head_metadata,
    headings,
    read_head,
    read_json_ld,
)
from taskcrawler.extract.nesting import limit_nesting
from taskcrawler.extract.tree import PageTree
from taskcrawler.extract.urls import Resolver

#: What :func:`extract` can be asked for. ``link_targets``: the links as ``links`` has them but
#: without their anchor texts (a crawl follows a page's links whatever its formats; building
#: every anchor's text costs about 8% of an extraction on real pages, for nothing).
FORMATS = frozenset(
    {"metadata", "markdown", "text", "html", "links", "link_targets", "clean_html", "images"}
)
#: Image URLs an extraction lists at most.
MAX_IMAGES = 1000


@dataclass(frozen=True, slots=True)
class ContentChoice:
    """What of a page its Markdown, text and cleaned HTML hold: the main content (the
    default) or the whole page; only what ``include`` matches; without what ``exclude``
    matches; inline ``data:`` images kept or not."""

    only_main_content: bool = True
    include: tuple[IgnoreSelector, ...] = ()
    exclude: tuple[IgnoreSelector, ...] = ()
    keep_data_images: bool = False


WHOLE_CONTENT = ContentChoice()


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
    #: The HTML of what the Markdown holds (format ``clean_html``).
    clean_html: str | None = None
    #: The page's image URLs, absolute, each once (format ``images``).
    images: list[str] | None = None


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
    choice: ContentChoice = WHOLE_CONTENT,
) -> Extraction:
    """Parse ``body`` (the page as fetched, whose final URL is ``url``) and return what it says.

    ``charset`` is the one from the HTTP ``Content-Type`` header, if any. At most ``max_links``
    links are kept (``metadata["links"]`` counts them all and says whether some were cut).
    ``ignore``: elements to read the page without (see :mod:`taskcrawler.domain.selectors`),
    removed before anything is read from it, metadata and links included; the ``html`` format
    stays the page as fetched. ``choice``: what of the page the Markdown, text and
    ``clean_html`` hold (:class:`ContentChoice`); metadata and links are the whole page's.
    Never raises on any body; raises ``ValueError`` only for a format name not in
    :data:`FORMATS`.
    """
    wanted = _check_formats(formats)
    decoded = decode_html(body, charset)
    markup = limit_nesting(decoded.text)
    # Valid UTF-8 as fetched is what lexbor would be given anyway: not encoded once more.
    utf8 = decoded.utf8 if markup is decoded.text else None
    tree = PageTree(utf8 if utf8 is not None else markup)
    remove_ignored(tree, ignore)
    info = read_head(tree)
    resolver = Resolver(url, info.base_href)
    metadata = head_metadata(tree, info, resolver)
    json_ld, json_ld_errors = read_json_ld(tree)
    metadata.update(authorship(tree, info, json_ld, url))
    links, link_counts = _link_counts(tree, resolver, info, wanted, max_links=max_links)
    images = _images(tree, resolver) if "images" in wanted else None

    content = _content(tree, choice)  # removes the boilerplate from the tree
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
        images=images,
    )
    title = None if choice.include else _outside_title(content.nodes, metadata["headings"]["h1"])
    if "markdown" in wanted:
        result.markdown = MarkdownRenderer(
            resolver, markdown=True, keep_data_images=choice.keep_data_images
        ).render(content.nodes, title=title, trim_tail=content.scored)
    if "text" in wanted:
        result.text = MarkdownRenderer(resolver, markdown=False).render(
            content.nodes, title=title, trim_tail=content.scored
        )
    if "clean_html" in wanted:
        result.clean_html = _clean_html(content.nodes, title, choice.keep_data_images)
    return result


def _content(tree: LexborHTMLParser, choice: ContentChoice) -> MainContent:
    """The content ``choice`` asks for: the elements ``include`` matches, else the whole page
    or its main content, once what ``exclude`` matches is gone."""
    remove_ignored(tree, choice.exclude)
    if choice.include:
        return chosen_content(tree, outermost_matched(tree, choice.include))
    if not choice.only_main_content:
        return whole_page(tree)
    return main_content(tree)


def _images(tree: LexborHTMLParser, resolver: Resolver) -> list[str]:
    """Every picture's URL (its lazy-loaded source when it has one), absolute, each once;
    inline ``data:`` images have none."""
    found: dict[str, None] = {}
    for node in tree.css("img"):
        attrs = node.attributes
        source = next((attrs[k] for k in LAZY_SOURCES if attrs.get(k)), attrs.get("src"))
        url = resolver.resolve(source)
        if url is not None:
            found.setdefault(url)
            if len(found) >= MAX_IMAGES:
                break
    return list(found)


def _clean_html(nodes: list[LexborNode], title: str | None, keep_data_images: bool) -> str:
    """The HTML of the content's elements (scripts, styles and boilerplate already gone),
    its title first when it sat outside them."""
    if not keep_data_images:
        for node in nodes:
            for image in node.css('img[src^="data:"]'):
                image.decompose()
    parts = [f"<h1>{html_escape(title)}</h1>"] if title else []
    parts.extend(node.html or "" for node in nodes)
    return "\n".join(parts)


def _outside_title(nodes: list[LexborNode], h1s: list[str]) -> str | None:
    """The page's ``h1`` when the content does not contain it (it sat above an article)."""
    if not nodes or not h1s or any(node.css_first("h1") is not None for node in nodes):
        return None
    return h1s[0]
