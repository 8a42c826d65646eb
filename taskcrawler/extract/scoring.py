"""Which part of a page is its content: a scored candidate tree, in the manner of readability.

Every paragraph of prose (``p``, ``pre``, ``td``, ``blockquote``, a long ``li``, a block of text
broken by ``br``) of at least ``MIN_PARAGRAPH_CHARS`` characters gives points to the block that
holds it, half as many to that block's parent and a sixth to the next one up: one point, one per
comma (a sentence's clauses) and one per hundred characters, up to three. A candidate starts
with a weight from its tag (a ``div`` or ``article`` is a likelier container than a list item)
and from its class and id (``entry-content`` is, ``sidebar`` is not), and its points are scaled
by the share of its text that is not link text (commas count up to ten: a list of names is
not ten sentences). The best candidate wins; it moves up to an ancestor that holds several of
the runners-up (an article in parts), or to its parent when that scores better or wraps it
alone; then come those of its siblings that score close to it or are paragraphs of plain
prose, and candidates elsewhere that score nearly as well (a product or event page holds its
text in several boxes).

The work per page is one pass over the paragraphs and a few ancestors each; link text is
measured only for the best few candidates.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Set
from dataclasses import dataclass, field

from selectolax.lexbor import LexborNode

from taskcrawler.extract.tree import tag_id, tag_ids

MIN_PARAGRAPH_CHARS = 25
MIN_CONTENT_CHARS = 200  # less prose than this is no evidence of where the content is
_PARAGRAPH_TAGS = ("p", "pre", "td", "blockquote", "li", "dd", "br")
_LINK_TAGS = tag_ids({"a"})
_HOLD_BREAKS = tag_ids({"p", "td", "li", "dd", "pre", "blockquote"})  # scored themselves
# Set on the blocks whose names say boilerplate, so one CSS query can leave them out.
FLAG_ATTRIBUTE = "data-taskcrawler-boilerplate"
_MIN_LIST_ITEM_CHARS = 80  # shorter list items are menus and link lists, not prose
_DIVIDERS = (1.0, 2.0, 6.0)
_TOP_CANDIDATES = 5
_MAX_COMMAS = 10  # a list of names or tags is not ten times the prose of a sentence
_TABLE_PARTS = tag_ids({"tr", "tbody", "thead", "tfoot"})
_SIBLING_SHARE = 0.2
_RIVAL_SHARE = 0.75
OTHER_PART_SHARE = 0.3
_OTHER_PARTS = 15
_RIVALS_TO_CLIMB = 3
_WIDE_COMMAS = ("\u060c", "\u3001", "\uff0c")  # Arabic, CJK ideographic and full-width

_TAG_WEIGHTS = {
    "div": 5,
    "article": 10,
    "main": 10,
    "section": 3,
    "pre": 3,
    "td": 3,
    "blockquote": 3,
    "address": -3,
    "ol": -3,
    "ul": -3,
    "dl": -3,
    "dd": -3,
    "dt": -3,
    "li": -3,
    "form": -3,
    "h1": -5,
    "h2": -5,
    "h3": -5,
    "h4": -5,
    "h5": -5,
    "h6": -5,
    "th": -5,
}
# Compared by lexbor's tag ids (see tree.tag_id).
_TAG_ID_WEIGHTS = {tag_id(name): weight for name, weight in _TAG_WEIGHTS.items()}
_BR, _LI, _P, _HTML, _BODY = map(tag_id, ("br", "li", "p", "html", "body"))
_PAGE = frozenset({_BODY, _HTML})
_GOOD_NAMES = re.compile(
    r"article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story|prose",
    re.IGNORECASE,
)
_BAD_NAMES = re.compile(
    r"comment|com-|contact|foot|masthead|media|meta|outbrain|promo|related|scroll|shoutbox"
    r"|sidebar|skyscraper|sponsor|shopping|tags|tool|widget|share|social|nav|menu|teaser"
    r"|byline|author|caption|credit|banner|ad-|widget|recommend|newsletter",
    re.IGNORECASE,
)
_NAME_WEIGHT = 25
# The author's pointer to another text ("See also: Tide tables"): a line of the text itself,
# however much of it is a link and wherever it stands.
CROSS_REFERENCE = re.compile(r"\s*(?:see also|further reading)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f]\s*$|[.!?]\s")


def visible_chars(node: LexborNode) -> int:
    """Characters of text under ``node``, without the indentation of the markup."""
    return visible_length(node.text_lexbor())


# Nodes looked at in Python before a query is left to lexbor (see first_tagged).
_SCAN_NODES = 32


def first_tagged(node: LexborNode, tags: Set[int], selector: str) -> LexborNode | None:
    """``node.css_first(selector)`` for ``selector`` the list of the tags whose ids are
    ``tags``: the first element of ``node`` (itself included) in document order whose tag is
    one of them.

    lexbor parses a selector at each query, which costs more than a walk in Python of the few
    nodes most such questions are about (a paragraph, a link): those are looked at first, and
    only a bigger subtree is left to lexbor."""
    for count, inner in enumerate(node.traverse()):
        if inner.tag_id in tags:
            return inner
        if count == _SCAN_NODES:
            return node.css_first(selector)
    return None


def link_chars(root: LexborNode) -> dict[int, int]:
    """For every node under ``root`` (and ``root``) that holds a link: its link text's length,
    measured as :func:`visible_chars` does."""
    return LinkTotals.of(root).totals


@dataclass(slots=True)
class LinkTotals:
    """Link text per node, and the part of the tree that holds links (each such node's parent).

    Each link's path up to ``root`` is walked only as far as the first node another link's
    path already reached, and the counts are then summed once from the leaves up: linear in
    the size of the tree, where adding each link to all its ancestors is quadratic in the
    depth (a list of lists of links nested a thousand deep)."""

    totals: dict[int, int]
    parents: dict[int, int]

    @classmethod
    def of(cls, root: LexborNode) -> LinkTotals:
        totals: dict[int, int] = {}
        parents: dict[int, int] = {}
        root_id = root.mem_id
        for anchor in root.css("a"):
            chars = visible_chars(anchor)
            if not chars:
                continue
            key = anchor.mem_id
            totals[key] = totals.get(key, 0) + chars
            node = anchor
            while key != root_id and key not in parents:
                parent = node.parent
                if parent is None:
                    break
                parents[key] = parent.mem_id
                node, key = parent, parent.mem_id
        children: dict[int, int] = {}
        for parent_id in parents.values():
            children[parent_id] = children.get(parent_id, 0) + 1
        ready = [key for key in parents if key not in children]
        while ready:
            key = ready.pop()
            above = parents.get(key)
            if above is None:
                continue
            totals[above] = totals.get(above, 0) + totals.get(key, 0)
            children[above] -= 1
            if not children[above]:
                ready.append(above)
        return cls(totals, parents)


def visible_length(text: str) -> int:
    """Characters of ``text`` without spaces, tabs and line breaks."""
    return len(text) - text.count(" ") - text.count("\n") - text.count("\t")


def link_share(node: LexborNode) -> float:
    # The links first: a node without link text needs no reading of its own, often long, text.
    anchors = node.css("a")
    if not anchors:
        return 0.0
    linked = visible_length("".join(anchor.text_lexbor() for anchor in anchors))
    if not linked:
        return 0.0
    total = visible_chars(node)
    return min(1.0, linked / total) if total else 0.0


def _name_weight(node: LexborNode) -> int:
    attrs = node.attributes  # one dict: cheaper than two lookups by name
    names = f"{attrs.get('class') or ''} {attrs.get('id') or ''}"
    return 0 if names == " " else _weight_of_names(names)


@functools.lru_cache(maxsize=1 << 14)  # names repeat within a page and across a site
def _weight_of_names(names: str) -> int:
    weight = 0
    if _BAD_NAMES.search(names):
        weight -= _NAME_WEIGHT
    if _GOOD_NAMES.search(names):
        weight += _NAME_WEIGHT
    return weight


@dataclass(slots=True)
class Candidate:
    node: LexborNode
    points: float
    final: float = 0.0

    @classmethod
    def of(cls, node: LexborNode) -> Candidate:
        return cls(node, _TAG_ID_WEIGHTS.get(node.tag_id, 0) + _name_weight(node))

    settled: bool = False

    def settle(self) -> float:
        """The points scaled by the share of text that is not link text (measured once)."""
        if not self.settled:
            self.final = self.points * (1.0 - link_share(self.node))
            self.settled = True
        return self.final


@dataclass(slots=True)
class Choice:
    """The nodes that make up the content, in document order."""

    nodes: list[LexborNode]
    scored: bool = True  # False: too little prose to score, the page is taken whole
    # The scored parts when the content was widened to what holds them: they and the blocks
    # around them stay whatever the names or links of those blocks say.
    parts: list[LexborNode] = field(default_factory=list)


def _paragraph_selector(tags: tuple[str, ...], *, outside: str | None) -> str:
    if outside is None:
        return ", ".join(tags)
    return ", ".join(f"{tag}:not([{outside}] {tag})" for tag in tags)


_ALL_PARAGRAPHS = _paragraph_selector(_PARAGRAPH_TAGS, outside=None)
_UNFLAGGED_PARAGRAPHS = _paragraph_selector(_PARAGRAPH_TAGS, outside=FLAG_ATTRIBUTE)


def _paragraphs(body: LexborNode, *, skip_flagged: bool) -> list[LexborNode]:
    """Paragraph-like nodes (outside the flagged blocks, if asked); a ``br`` stands for its
    parent. One CSS query: lexbor checks the ancestors."""
    seen: set[int] = set()
    found: list[LexborNode] = []
    for node in body.css(_UNFLAGGED_PARAGRAPHS if skip_flagged else _ALL_PARAGRAPHS):
        if node.tag_id == _BR:
            parent = node.parent
            if parent is None or parent.tag_id in _HOLD_BREAKS:
                continue
            node = parent
        key = node.mem_id
        if key not in seen:
            seen.add(key)
            found.append(node)
    return found


def _list_holders(paragraphs: list[LexborNode]) -> set[int]:
    """The list items that hold a list: their items score on their own, and reading each
    item's text with all the lists inside it would be quadratic in the nesting."""
    holders: set[int] = set()
    for paragraph in paragraphs:
        if paragraph.tag_id == _LI:
            list_node = paragraph.parent
            above = list_node.parent if list_node is not None else None
            if above is not None and above.tag_id == _LI:
                holders.add(above.mem_id)
    return holders


def _score(paragraphs: list[LexborNode]) -> tuple[dict[int, Candidate], int]:
    candidates: dict[int, Candidate] = {}
    chains: dict[int, list[tuple[Candidate, float]]] = {}
    total_chars = 0
    holders = _list_holders(paragraphs)
    for paragraph in paragraphs:
        if holders and paragraph.mem_id in holders:
            continue
        text = paragraph.text_lexbor()
        chars = len(text.strip())
        if chars < MIN_PARAGRAPH_CHARS:
            continue
        if chars < _MIN_LIST_ITEM_CHARS and paragraph.tag_id == _LI:
            continue
        total_chars += chars
        commas = text.count(",")
        if not text.isascii():
            commas += sum(text.count(comma) for comma in _WIDE_COMMAS)
        points = 1.0 + min(commas, _MAX_COMMAS) + min(chars / 100, 3.0)
        parent = paragraph.parent
        if parent is None:
            continue
        # Paragraphs share their parents: each parent's few ancestors are found once.
        chain = chains.get(parent.mem_id)
        if chain is None:
            chain = chains[parent.mem_id] = _chain(parent, candidates)
        for candidate, divider in chain:
            candidate.points += points / divider
    return candidates, total_chars


def _chain(
    node: LexborNode | None, candidates: dict[int, Candidate]
) -> list[tuple[Candidate, float]]:
    """The candidates a paragraph under ``node`` gives points to (``node`` and the next two up),
    each with the divider of those points."""
    chain: list[tuple[Candidate, float]] = []
    for divider in _DIVIDERS:
        while node is not None and node.tag_id in _TABLE_PARTS:
            node = node.parent  # rows are not containers of their own: the table is
        if node is None or node.tag_id == _HTML:
            break
        candidate = candidates.get(node.mem_id)
        if candidate is None:
            candidate = candidates[node.mem_id] = Candidate.of(node)
        chain.append((candidate, divider))
        node = node.parent
    return chain


def _is_prose(node: LexborNode) -> bool:
    text = node.text_lexbor().strip()
    if len(text) > _MIN_LIST_ITEM_CHARS:
        return link_share(node) < 0.25
    return (
        bool(text)
        and first_tagged(node, _LINK_TAGS, "a") is None
        and _SENTENCE_END.search(text) is not None
    )


def _with_siblings(best: Candidate, candidates: dict[int, Candidate]) -> list[LexborNode]:
    parent = best.node.parent
    if parent is None or best.node.tag_id == _BODY:
        return [best.node]
    threshold = max(10.0, best.final * _SIBLING_SHARE)
    best_class = best.node.attrs.get("class")
    nodes: list[LexborNode] = []
    for sibling in parent.iter():
        if sibling.mem_id == best.node.mem_id:
            nodes.append(sibling)
            continue
        candidate = candidates.get(sibling.mem_id)
        if candidate is not None:
            bonus = (
                best.final * _SIBLING_SHARE
                if best_class and sibling.attrs.get("class") == best_class
                else 0.0
            )
            if candidate.settle() + bonus >= threshold:
                nodes.append(sibling)
                continue
        if sibling.tag_id == _P and _is_prose(sibling):
            nodes.append(sibling)
    return nodes


def _ancestor_ids(node: LexborNode) -> set[int]:
    ids: set[int] = set()
    parent = node.parent
    while parent is not None:
        ids.add(parent.mem_id)
        parent = parent.parent
    return ids


def _candidate(node: LexborNode, candidates: dict[int, Candidate]) -> Candidate:
    candidate = candidates.get(node.mem_id)
    if candidate is None:
        candidate = candidates[node.mem_id] = Candidate.of(node)
    return candidate


def _climb(best: Candidate, ranked: list[Candidate], candidates: dict[int, Candidate]) -> Candidate:
    """An article in several parts scores as several candidates: when enough of the runners-up
    that score nearly as well share an ancestor with the best, that ancestor is the content.
    Then the best moves up while its parent scores better, or is a wrapper around it alone."""
    rivals = [
        _ancestor_ids(c.node)
        for c in ranked
        if c is not best and c.final >= _RIVAL_SHARE * best.final
    ]
    if len(rivals) >= _RIVALS_TO_CLIMB:
        node = best.node.parent
        while node is not None and node.tag_id not in _PAGE:
            if sum(node.mem_id in ancestors for ancestors in rivals) >= _RIVALS_TO_CLIMB:
                best = _candidate(node, candidates)
                best.settle()
                break
            node = node.parent
    current = best
    parent = current.node.parent
    while parent is not None and parent.tag_id not in _PAGE:
        above = candidates.get(parent.mem_id)
        if above is not None and above.points > current.points:
            current = above
        elif _only_child(current.node, parent):
            current = _candidate(parent, candidates)
        else:
            break
        parent = current.node.parent
    if current is not best:
        current.settle()
    return current


def _only_child(node: LexborNode, parent: LexborNode) -> bool:
    return all(child.mem_id == node.mem_id for child in parent.iter())


def choose_content(body: LexborNode, *, skip_flagged: bool) -> Choice | None:
    """The best candidate and its close siblings, or None when the page has too little prose
    (outside the flagged blocks, if asked) to tell."""
    candidates, total_chars = _score(_paragraphs(body, skip_flagged=skip_flagged))
    if total_chars < MIN_CONTENT_CHARS or not candidates:
        return None
    ranked = sorted(candidates.values(), key=lambda c: c.points, reverse=True)[:_TOP_CANDIDATES]
    best = _climb(max(ranked, key=Candidate.settle), ranked, candidates)
    nodes = _with_siblings(best, candidates)
    nodes = _with_other_parts(body, nodes, best, candidates)
    return Choice(nodes)


def _inside(node: LexborNode, ids: set[int]) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.mem_id in ids:
            return True
        parent = parent.parent
    return False


def _with_other_parts(
    body: LexborNode, nodes: list[LexborNode], best: Candidate, candidates: dict[int, Candidate]
) -> list[LexborNode]:
    """Pages that are not one article (a product, an event, a page-builder layout) hold their
    prose in several blocks far apart in the tree: candidates elsewhere that score nearly as
    well as the best are content too."""
    threshold = best.final * OTHER_PART_SHARE
    if threshold <= 0:
        return nodes
    ranked = sorted(candidates.values(), key=lambda c: c.points, reverse=True)
    others = [c for c in ranked[:_OTHER_PARTS] if c.points >= threshold]
    if not others:
        return nodes
    chosen = {node.mem_id for node in nodes}
    holding = _with_ancestors_of(nodes)
    # What holds the content or is part of it would be passed over: its links are not measured.
    others = [c for c in others if c.node.mem_id not in holding and c.node.mem_id not in chosen]
    added = False
    for other in sorted(others, key=Candidate.settle, reverse=True):
        node = other.node
        if other.final < threshold or node.mem_id in holding or node.mem_id in chosen:
            continue
        if _inside(node, chosen):
            continue
        chosen.add(node.mem_id)
        holding |= _with_ancestors_of([node])
        added = True
    if not added:
        return nodes
    return [node for node in body.traverse() if node.mem_id in chosen]


def _with_ancestors_of(nodes: list[LexborNode]) -> set[int]:
    ids: set[int] = set()
    for node in nodes:
        parent = node.parent
        while parent is not None and parent.mem_id not in ids:
            ids.add(parent.mem_id)
            parent = parent.parent
    return ids
