"""Outgoing links of a page: where they point, what they say, and how the page vouches for them."""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser, LexborNode

from taskcrawler.domain.pages import Link
from taskcrawler.extract.urls import Resolver

LINK_SELECTOR = "a[href], area[href]"
#: Links kept per page: a page of 200,000 links is counted whole, not stored whole.
MAX_LINKS_PER_PAGE = 5_000
#: Longer hrefs are no links we keep (a job's own URL may have 2,048); longer texts are cut.
MAX_HREF_CHARS = 8_192
MAX_TEXT_CHARS = 2_048


def rel_tokens(value: str | None) -> tuple[str, ...]:
    """``rel`` as lower-case tokens, in order, without duplicates."""
    if not value:
        return ()
    return tuple(dict.fromkeys(value.lower().split()))


def _anchor_text(node: LexborNode) -> str:
    text = " ".join(node.text(deep=True, separator=" ").split())[:MAX_TEXT_CHARS]
    if text:
        return text
    for attr in ("aria-label", "title"):
        value = node.attributes.get(attr)
        if value and value.strip():
            return " ".join(value.split())[:MAX_TEXT_CHARS]
    img = node.css_first("img[alt]")
    alt = img.attributes.get("alt") if img is not None else None
    return " ".join(alt.split())[:MAX_TEXT_CHARS] if alt else ""


_Target = tuple[str, bool, LexborNode, dict[str, str | None]]


def _link_nodes(tree: LexborHTMLParser) -> list[LexborNode]:
    """``a`` and ``area`` elements in document order. ``tags()`` walks the tree about twice as
    fast as a CSS query; image maps are rare, so the query runs only when a page has one."""
    if tree.tags("area"):
        return tree.css(LINK_SELECTOR)
    return tree.tags("a")


def _targets(tree: LexborHTMLParser, resolver: Resolver) -> list[_Target]:
    """Every distinct web target in document order: (url, internal, first anchor, its attrs)."""
    seen: set[str] = set()
    found: list[_Target] = []
    classify = resolver.classify
    for node in _link_nodes(tree):
        # One dict of the attributes: .attrs.get() raises and catches a KeyError inside
        # selectolax for each one missing (most anchors have no rel), which costs more.
        attrs = node.attributes
        href = attrs.get("href")
        if not href or href.lstrip().startswith("#") or len(href) > MAX_HREF_CHARS:
            continue  # same-page fragments are not links to another document
        target = classify(href)
        if target is None or target[0] in seen:
            continue
        seen.add(target[0])
        found.append((target[0], target[1], node, attrs))
    return found


def collect_links(
    tree: LexborHTMLParser,
    resolver: Resolver,
    *,
    page_nofollow: bool,
    max_links: int = MAX_LINKS_PER_PAGE,
    with_text: bool = True,
) -> tuple[list[Link], dict[str, int]]:
    """The page's links, one per distinct URL (the first anchor wins), in document order: the
    first ``max_links`` of them, and the counts of all (:func:`count_links`). Without
    ``with_text``, their texts are left empty."""
    targets = _targets(tree, resolver)
    links = []
    for url, internal, node, attrs in targets[:max_links]:
        rel = rel_tokens(attrs.get("rel"))
        links.append(
            Link(
                url=url,
                text=_anchor_text(node) if with_text else "",
                rel=rel,
                internal=internal,
                nofollow=page_nofollow or "nofollow" in rel,
            )
        )
    return links, _counts(targets, page_nofollow, max_links)


def count_links(
    tree: LexborHTMLParser,
    resolver: Resolver,
    *,
    page_nofollow: bool,
    max_links: int = MAX_LINKS_PER_PAGE,
) -> dict[str, int]:
    """The counts of :func:`collect_links`, without building texts (the metadata-only path):
    internal, external and nofollow links, and whether there are more than ``max_links``."""
    return _counts(_targets(tree, resolver), page_nofollow, max_links)


def _counts(targets: list[_Target], page_nofollow: bool, max_links: int) -> dict[str, int]:
    internal = sum(1 for target in targets if target[1])
    if page_nofollow:
        nofollow = len(targets)
    else:
        rels = (target[3].get("rel") for target in targets)
        nofollow = sum(1 for rel in rels if rel and "nofollow" in rel.lower().split())
    return {
        "internal": internal,
        "external": len(targets) - internal,
        "nofollow": nofollow,
        "truncated": len(targets) > max_links,
    }
