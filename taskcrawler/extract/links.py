"""Outgoing links of a page: where they point, what they say, and how the page vouches for them."""

from __future__ import annotations

from selectolax.lexbor import LexborAttributes, LexborHTMLParser, LexborNode

from taskcrawler.domain.pages import Link
from taskcrawler.extract.urls import Resolver

LINK_SELECTOR = "a[href], area[href]"


def rel_tokens(value: str | None) -> tuple[str, ...]:
    """``rel`` as lower-case tokens, in order, without duplicates."""
    if not value:
        return ()
    return tuple(dict.fromkeys(value.lower().split()))


def _anchor_text(node: LexborNode) -> str:
    text = " ".join(node.text(deep=True, separator=" ").split())
    if text:
        return text
    for attr in ("aria-label", "title"):
        value = node.attributes.get(attr)
        if value and value.strip():
            return " ".join(value.split())
    img = node.css_first("img[alt]")
    alt = img.attributes.get("alt") if img is not None else None
    return " ".join(alt.split()) if alt else ""


_Target = tuple[str, bool, LexborNode, LexborAttributes]


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
        attrs = node.attrs  # lazier than .attributes, which copies every attribute
        href = attrs.get("href")
        if not href or href.lstrip().startswith("#"):
            continue  # same-page fragments are not links to another document
        target = classify(href)
        if target is None or target[0] in seen:
            continue
        seen.add(target[0])
        found.append((target[0], target[1], node, attrs))
    return found


def collect_links(tree: LexborHTMLParser, resolver: Resolver, *, page_nofollow: bool) -> list[Link]:
    """The page's links, one per distinct URL (the first anchor wins), in document order."""
    links = []
    for url, internal, node, attrs in _targets(tree, resolver):
        rel = rel_tokens(attrs.get("rel"))
        links.append(
            Link(
                url=url,
                text=_anchor_text(node),
                rel=rel,
                internal=internal,
                nofollow=page_nofollow or "nofollow" in rel,
            )
        )
    return links


def count_links(links: list[Link]) -> dict[str, int]:
    internal = sum(1 for link in links if link.internal)
    return {
        "internal": internal,
        "external": len(links) - internal,
        "nofollow": sum(1 for link in links if link.nofollow),
    }


def count_links_fast(
    tree: LexborHTMLParser, resolver: Resolver, *, page_nofollow: bool
) -> dict[str, int]:
    """The same counts as :func:`count_links`, without building texts (the metadata-only path)."""
    targets = _targets(tree, resolver)
    internal = sum(1 for target in targets if target[1])
    if page_nofollow:
        nofollow = len(targets)
    else:
        nofollow = sum(1 for t in targets if "nofollow" in rel_tokens(t[3].get("rel")))
    return {"internal": internal, "external": len(targets) - internal, "nofollow": nofollow}
