"""Removing what ignore selectors match from a parsed page, in time linear in the page.

The selectors were checked by :func:`taskcrawler.domain.selectors.parse_ignore_selectors`, so each
group (compounds joined by ``>`` and ``+``) is matched by lexbor in linear time. A selector without
a descendant combinator is one group, and lexbor matches a list of them in one query. A selector
with descendant combinators is never handed to lexbor whole (lexbor backtracks over the ancestors
for each one, which is polynomial in the page's depth): each of its groups is matched alone, and
one walk of the tree joins them, carrying for every prefix of the selector the depth of the
shallowest ancestor that matches it.

Everything is matched on the page as parsed before anything is removed, so the result does not
depend on the order of the selectors. ``html``, ``head`` and ``body`` are never removed (what is
inside them still is).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from selectolax.lexbor import LexborHTMLParser, LexborNode

from taskcrawler.domain.selectors import IgnoreSelector

_KEPT_TAGS = frozenset({"html", "head", "body"})
_NONE = 1 << 62  # "no ancestor matches": deeper than any tree


def remove_ignored(tree: LexborHTMLParser, selectors: Sequence[IgnoreSelector]) -> None:
    """Remove every element ``selectors`` match, with its subtree, from ``tree``."""
    root = tree.root
    if not selectors or root is None:
        return
    if all(len(selector.groups) == 1 for selector in selectors):
        # Document order, reversed: an element is removed before any of its ancestors, so no
        # node is touched after the subtree holding it was freed.
        for node in reversed(_matched_by_lexbor(root, selectors)):
            node.decompose()
        return
    for node in _Join.of(root, selectors).outermost_matches(root):
        node.decompose()  # disjoint subtrees: any order is safe


def outermost_matched(
    tree: LexborHTMLParser, selectors: Sequence[IgnoreSelector]
) -> list[LexborNode]:
    """The elements ``selectors`` match that are not inside another match, in document order
    (what a request's ``include_tags`` keep), in time linear in the page."""
    root = tree.root
    if not selectors or root is None:
        return []
    return _Join.of(root, selectors).outermost_matches(root)


def _matched_by_lexbor(root: LexborNode, selectors: Sequence[IgnoreSelector]) -> list[LexborNode]:
    """Matches of one-group selectors, in document order, once each (lexbor lists an element
    once per selector it matches), without the kept tags."""
    seen: set[int] = set()
    nodes = []
    for node in root.css(", ".join(selector.css for selector in selectors)):
        if node.mem_id not in seen and node.tag not in _KEPT_TAGS:
            seen.add(node.mem_id)
            nodes.append(node)
    return nodes


class _Join:
    """Joins the groups of every selector in one walk of the tree.

    For an element ``v`` at depth ``d`` and a selector's prefix of groups ``G1 … Gi``, ``v``
    matches the prefix when it matches ``Gi`` alone and, for ``i > 1``, some ancestor at a
    depth below ``d - parent_steps(Gi)`` (a proper ancestor of ``Gi``'s leftmost element)
    matches the prefix ``G1 … Gi-1``. The walk carries, for every prefix (a "slot"), the depth of
    the shallowest ancestor-or-self matching it, so an element costs one look per group it
    matches, and the others none.
    """

    def __init__(self, width: int, entries: dict[int, list[_Entry]]) -> None:
        self.width = width
        self.entries = entries  # element id -> the groups it matches alone

    @classmethod
    def of(cls, root: LexborNode, selectors: Sequence[IgnoreSelector]) -> _Join:
        entries: dict[int, list[_Entry]] = {}
        slot = 0
        for selector in selectors:
            matches = []
            for group in selector.groups:
                ids = [node.mem_id for node in root.css(group.css)]
                if not ids:
                    break  # a group nothing matches: nothing matches the selector either
                matches.append(ids)
            else:
                last = len(matches) - 1
                for index, (ids, group) in enumerate(zip(matches, selector.groups, strict=True)):
                    entry = _Entry(
                        slot + index,
                        slot + index - 1 if index else -1,
                        group.parent_steps,
                        index == last,
                    )
                    for node_id in ids:
                        entries.setdefault(node_id, []).append(entry)
                slot += len(matches)
        return cls(slot, entries)

    def outermost_matches(self, root: LexborNode) -> list[LexborNode]:
        """The matched elements not inside another matched one (so removing them in any order
        is safe), in document order."""
        if not self.entries:
            return []
        found: list[LexborNode] = []
        nothing = (_NONE,) * self.width
        # The ancestors of the current element: their ids and prefix depths. traverse() is
        # preorder, so an element's parent is on this path, and what is above it is popped.
        path_ids: list[int] = []
        path_lows: list[tuple[int, ...]] = []
        removed_at = -1  # depth of the last element found, while walking its subtree
        for node in root.traverse():
            parent = node.parent
            parent_id = parent.mem_id if parent is not None else None
            while path_ids and path_ids[-1] != parent_id:
                path_ids.pop()
                path_lows.pop()
            depth = len(path_ids)
            above = path_lows[-1] if path_lows else nothing
            lows = above
            if depth <= removed_at:
                removed_at = -1  # out of the subtree that goes
            entry = self.entries.get(node.mem_id)
            if entry is not None and removed_at < 0:
                lows, matched = _visit(entry, depth, above)
                if matched and node.tag not in _KEPT_TAGS:
                    found.append(node)
                    removed_at = depth
            path_ids.append(node.mem_id)
            path_lows.append(lows)
        return found


class _Entry(NamedTuple):
    """One group an element matches alone: its slot, the slot of the prefix before it (-1 for
    the first group), its ``parent_steps``, and whether it ends its selector."""

    slot: int
    previous: int
    steps: int
    last: bool


def _visit(
    entries: list[_Entry], depth: int, above: tuple[int, ...]
) -> tuple[tuple[int, ...], bool]:
    """The prefix depths with this element counted, and whether it matches a whole selector."""
    lows: list[int] | None = None
    matched = False
    for slot, previous, steps, last in entries:
        if previous >= 0 and above[previous] >= depth - steps:
            continue  # no ancestor above the group's leftmost element matches the prefix
        if lows is None:
            lows = list(above)
        lows[slot] = min(lows[slot], depth)
        matched = matched or last
    return (tuple(lows) if lows is not None else above), matched


def matched_within(node: LexborNode, selectors: Sequence[IgnoreSelector]) -> list[LexborNode]:
    """The elements under ``node`` (``node`` itself left out) ``selectors`` match that are not
    inside another match, in document order, in time linear in ``node``'s subtree."""
    if not selectors:
        return []
    found = _Join.of(node, selectors).outermost_matches(node)
    return [match for match in found if match.mem_id != node.mem_id]
