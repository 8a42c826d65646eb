"""Main-content detection: what a reader would call the page's own text, found in one tree.

Four steps, with the heavy lifting in lexbor (CSS queries, ``strip_tags``, ``decompose``):

1. Drop what is never content (scripts, styles, form controls, embedded objects), the captions
   of pictures unless they are most of the page's text (a gallery), and the page furniture
   that says what it is: ``nav``, ``aside``, ``footer``, ``dialog``, hidden nodes (but a
   closed tab or accordion panel, content a click away), navigation/banner/search landmarks,
   and site headers (not a section's, inside ``main``) and forms that do not hold the
   content. Nothing that holds a ``main`` or the article is removed.
2. Flag the blocks whose class or id names boilerplate (comments, sharing, related posts, widgets,
   newsletters, cookie notices, …) unless another of their names says content
   (``entry-content``). Flagged blocks are not removed yet: their paragraphs stop counting.
3. Score the candidates (see :mod:`taskcrawler.extract.scoring`): the densest cluster of prose
   with little link text wins, with those of its siblings that score close to it. A page of
   sections (a service, product or landing page), whose prose is several short blocks far
   apart, none an article's length, is taken as the block that holds them all.
4. Inside what was chosen, remove the flagged blocks and the blocks that read like navigation
   (mostly link text); add the standfirst, the prose between the headline and the content
   (too short to score, but the article's first words). On a thread, where the blocks named
   as comments say more than the post they answer, those replies are content too. A block
   drawn twice (a phone's copy and a desktop's) is said once.

When the scoring finds too little prose (short pages, pages of lists or tables) the content is
``<main>``, a single ``<article>``, or else the whole cleaned body: a page that says little is
rendered whole rather than cut to nothing.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser, LexborNode

from taskcrawler.extract.scoring import (
    CROSS_REFERENCE,
    FLAG_ATTRIBUTE,
    MIN_CONTENT_CHARS,
    Choice,
    LinkTotals,
    choose_content,
    first_tagged,
    link_share,
    visible_chars,
    visible_length,
)
from taskcrawler.extract.tree import COMMENT_ID, TEXT_ID, tag_id, tag_ids

_NEVER_CONTENT = [
    "script",
    "style",
    "template",
    "svg",
    "iframe",
    "canvas",
    "object",
    "button",
    "select",
    "textarea",
    "input",
    "label",
    "rt",  # ruby annotations: the reading of the text above them, said a second time
    "rp",
]
# A caption is about its picture, which the text leaves out: a stray line (a credit, a photo
# description) unless the captions are most of what the page says (a gallery, a slideshow).
_CAPTION = "figcaption"
_GALLERY_SHARE = 0.5
# Each list of tags is one CSS query: one walk of the tree instead of one a tag (a walk of a
# real page's tree costs about as much as matching a few more tags at each node).
_NEVER_CONTENT_CSS = ", ".join(_NEVER_CONTENT)
_NEVER_CONTENT_IDS = tag_ids(_NEVER_CONTENT)
_CONTROLS = "aria-controls"
_CONTROLS_OR_NEVER_CONTENT = f"[{_CONTROLS}], {_NEVER_CONTENT_CSS}"
_FURNITURE_TAGS = "nav, aside, footer, dialog"
_GUARDED_TAGS = ("header", "form")
_MAIN_REGION = "main, [role=main]"
_FURNITURE_ATTRS = "[hidden], [aria-hidden=true i], [role]"
_FURNITURE_ROLES = frozenset(
    {"navigation", "contentinfo", "complementary", "search", "dialog", "alertdialog", "menu"}
    | {"menubar", "banner"}
)
_MARKERS = "h1, main, article, [role=main], [itemprop=articleBody]"
_PROTECTED_TAGS = tag_ids({"html", "body", "main", "article"})
_FALLBACK_ROOTS = ("main, [role=main]", "[itemprop=articleBody]", "article")
_MIN_ROOT_SHARE = 0.25
_NOSCRIPT_PAGE_CHARS = 200
_MAX_FLAGGED_SHARE = 0.5
_COMMENTS = "comment"
_COMMENT_WORDS = re.compile(r"comment[a-z]*")
# The elements whose names are read: not links, images and icons, the commonest and never the
# whole of a boilerplate block; not the body, whose classes describe the page ("single-post
# has-sidebar").
_NAMED_BLOCKS = ":is([class], [id]):not(a, img, i, svg, picture, source, body)"
# Class attributes repeat within a page and across the pages of a site: the answer for each
# is remembered, within a bound that hostile pages full of unique names cannot exceed.
_NAMES_CACHED = 1 << 15
_HEADING_TAGS = tag_ids({"h1", "h2", "h3", "h4", "h5", "h6"})
# Tags are compared by lexbor's ids (see tree.tag_id).
_H1, _ARTICLE, _CAPTION_ID, _TABLE, _P = map(tag_id, ("h1", "article", _CAPTION, "table", "p"))
_NOT_ELEMENTS = frozenset({TEXT_ID, COMMENT_ID})
_MAX_REMOVED_SHARE = 0.5

# A class or id names boilerplate when one of its words (its runs of letters: "post-meta" is
# "post" and "meta") is one of these, or, for the distinctive ones, begins or ends with one
# ("commentlist", "sharedaddy", "textwidget", "mainmenu").
_BOILERPLATE_WORDS = frozenset(
    {"ad", "ads", "nav", "menu", "meta", "tags", "tag", "bio", "caption", "credit", "credits"}
    | {"footer", "banner", "rating", "toolbar", "tools", "pager", "signup", "login"}
    | {"reply", "replies", "respond", "skiplink", "gdpr", "modal", "popup", "promo", "promos"}
    | {"teasers", "ratings", "legend", "cta", "date", "categories"}
)
_BOILERPLATE_BEGINNINGS = (
    "comment", "share", "sharing", "social", "related", "recent", "newsletter", "subscri",
    "cookie", "consent", "copyright", "colophon", "sidebar", "breadcrumb", "paginat", "disqus",
    "akismet", "jetpack", "nocontent", "sponsor", "advert", "masthead", "navbar", "navigation",
    "byline", "newsticker", "authorbio", "authorbox", "authorinfo", "widget", "disclos",
    "disclaim", "author", "embed", "published", "updated", "timestamp", "recommend",
)  # fmt: skip
_BOILERPLATE_ENDINGS = ("widget", "comments", "sidebar", "menu", "navigation", "footer", "share")
# A word that looks like one of those but is not: Blogger's main column is "widget Blog", and
# a "promoted" article is still an article.
_NOT_BOILERPLATE = frozenset({"widget", "promoted", "commentary", "navigator"})
_WORD = re.compile(r"[a-z]+")
# A token that says what state a wrapper is in ("has-sidebar", "no-comments"), that only hooks
# a script ("js-share"), or that says what the block is not ("site-not-footer"): not what the
# block is.
_STATE_TOKEN = re.compile(r"^(?:has|no|with|show|hide|is|js)-|--(?:has|no|with)-|[-_]not[-_]")
# A token that names the content itself ("entry-content", "post-body", "hentry"); it wins over
# a boilerplate token on the same node.
_CONTENT_TOKEN = re.compile(
    r"^(?:(?:entry|post|article|story|page|main|blog)[-_]?)?(?:content|body|text)$"
    r"|^(?:post|hentry|article|main)$"
    r"|^(?:forum|thread|topic|message)[-_]?(?:post|message|entry)$"
)

# Scripts where words are not separated by spaces: every character counts as one word.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")
# What str.split() takes for whitespace in ASCII text, the space aside.
_ASCII_SPACES_BUT_SPACE = ("\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")
_CJK_OR_RUN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]"
    r"|[^\s\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]+"
)


@dataclass(frozen=True, slots=True)
class MainContent:
    nodes: list[LexborNode]  # in document order; empty when the page has no body
    scored: bool  # chosen by scoring prose, not the whole of a page that says little
    text: str  # normalized: whitespace collapsed
    word_count: int
    content_hash: str

    @property
    def root(self) -> LexborNode | None:
        return self.nodes[0] if self.nodes else None


def _text_len(node: LexborNode) -> int:
    # lexbor's own textContent: the same text as text(deep=True), built in C, a third faster
    # on a benchmark page's body; 3% fewer instructions per extraction there.
    return len(node.text_lexbor())


def _with_ancestors(nodes: list[LexborNode]) -> set[int]:
    ids: set[int] = set()
    for node in nodes:
        current: LexborNode | None = node
        while current is not None and current.mem_id not in ids:
            ids.add(current.mem_id)
            current = current.parent
    return ids


@functools.lru_cache(maxsize=_NAMES_CACHED)
def _is_boilerplate_word(word: str) -> bool:
    if word in _BOILERPLATE_WORDS:
        return True
    return word not in _NOT_BOILERPLATE and (
        word.startswith(_BOILERPLATE_BEGINNINGS) or word.endswith(_BOILERPLATE_ENDINGS)
    )


def _names_any_boilerplate(names: str) -> bool:
    return any(map(_is_boilerplate_word, _WORD.findall(names)))  # all in C: no frame a word


@functools.lru_cache(maxsize=_NAMES_CACHED)
def names_boilerplate(class_and_id: str) -> bool:
    """Whether a node's ``class`` and ``id`` tokens name boilerplate and none names content."""
    names = class_and_id.lower()
    if not _names_any_boilerplate(names):  # most nodes: one regex scan and a few set lookups
        return False
    flagged = False
    for token in names.split():
        if _STATE_TOKEN.search(token) is not None:
            continue
        if _names_any_boilerplate(token):
            flagged = True
        elif _CONTENT_TOKEN.search(token) is not None:
            return False
    return flagged


@dataclass(slots=True)
class Cleaner:
    """Removes boilerplate from one parsed page, in place."""

    tree: LexborHTMLParser
    holds_root: set[int]  # ids of main/article nodes and their ancestors
    holds_content: set[int]  # the same, and of h1 nodes and their ancestors
    holds_main: set[int]  # ids of main, the article body or a single article, and ancestors
    # The body's text once the furniture is gone, and the visible characters removed since:
    # each guarded removal measures the node it removes anyway, and reading the whole body's
    # text once more cost 5% of an extraction. Its visible characters are counted only when
    # a flagged block needs them (three scans of the page's text; most pages have none).
    body_text: str | None = None
    removed_visible: int = 0
    # Flagged blocks named as a picture's caption or credit ("figure__caption", "legend").
    flagged_captions: list[LexborNode] = field(default_factory=list)
    # Flagged blocks named as comments, and which of them are outermost (a thread's replies).
    comment_ids: set[int] = field(default_factory=set)
    comment_blocks: list[LexborNode] = field(default_factory=list)

    @classmethod
    def for_tree(cls, tree: LexborHTMLParser) -> Cleaner:
        body = tree.body
        markers = body.css(_MARKERS) if body is not None else []
        roots = [node for node in markers if node.tag_id != _H1]
        holds_root = _with_ancestors(roots)
        articles = [node for node in roots if node.tag_id == _ARTICLE]
        # Many articles are teasers of other pages (a related list, a feed): only a single one
        # is taken for the content.
        mains = [node for node in roots if node.tag_id != _ARTICLE or len(articles) == 1]
        return cls(tree, holds_root, holds_root | _with_ancestors(markers), _with_ancestors(mains))

    def remove(self, nodes: list[LexborNode], *, guarded: bool, max_chars: float = 0) -> None:
        """Decompose ``nodes`` (document order) from the last to the first.

        Going backwards means a node is always removed before any of its ancestors, so no node
        is touched after its subtree was freed. Guarded nodes holding an ``h1`` or more than
        ``max_chars`` characters are kept.
        """
        keep = self.holds_content if guarded else self.holds_root
        for node in reversed(nodes):
            if node.tag_id in _PROTECTED_TAGS or node.mem_id in keep:
                continue
            if guarded:
                text = node.text_lexbor()
                if len(text) > max_chars:
                    continue
                if self.body_text is not None:
                    self.removed_visible += visible_length(text)
            node.decompose()

    def body_chars(self, body: LexborNode) -> int:
        """The body's visible characters, now."""
        if self.body_text is None:
            return visible_chars(body)
        return visible_length(self.body_text) - self.removed_visible

    def strip_boilerplate(self) -> None:
        """Step 1: what is never content, and the page furniture, everywhere."""
        tree = self.tree
        _unwrap_noscript_pages(tree)
        controlled = _strip_never_content(tree)
        body = tree.body
        if body is None:
            return
        self.remove(tree.css(_FURNITURE_TAGS), guarded=False)
        text = body.text_lexbor()  # read once for all three measures
        removed, self.removed_visible = _strip_captions(tree, text)
        self.body_text = text
        max_chars = _MAX_REMOVED_SHARE * max(0, len(text) - removed)
        mains = {node.mem_id for node in body.css(_MAIN_REGION)}
        for tag in _GUARDED_TAGS:
            nodes = tree.tags(tag)
            if tag == "header" and mains:
                # a header inside the page's main region heads a section of it, not the site
                nodes = [node for node in nodes if not _inside(node, mains)]
            self.remove(nodes, guarded=True, max_chars=max_chars)
        flagged = [node for node in body.css(_FURNITURE_ATTRS) if _is_furniture(node, controlled)]
        self.remove(flagged, guarded=True, max_chars=max_chars)

    def flagged(self, body: LexborNode) -> list[LexborNode]:
        """Step 2: nodes whose names say boilerplate, outermost first, in document order."""
        found: list[LexborNode] = []
        ids: set[int] = set()
        most = -1.0  # measured when first needed: many pages have no flagged block
        for node in body.css(_NAMED_BLOCKS):
            # One dict of the node's attributes: a third cheaper than two lookups by name.
            attrs = node.attributes
            names = attrs.get("class") or ""
            own_id = attrs.get("id")
            # A heading's id names the section for links to it ("nav_…" from a table of
            # contents), not what the heading is.
            tag = node.tag_id
            if own_id and tag not in _HEADING_TAGS:
                names = f"{names} {own_id}"
            if (
                not names_boilerplate(names)
                or node.mem_id in self.holds_main
                or tag == _CAPTION_ID  # still here on a gallery page: its "…-caption" is text
            ):
                continue
            if most < 0:
                chars = self.body_chars(body)
                most = _MAX_FLAGGED_SHARE * chars
            parent = node.parent
            if (
                (parent is not None and parent.mem_id in ids)  # no bigger than its parent
                or _fits(node.text_lexbor(), most)
                or _COMMENTS in names.lower()
            ):
                # else a wrapper of the page, whatever its name; but comments can outgrow
                # the article they are about
                node.attrs[FLAG_ATTRIBUTE] = ""
                found.append(node)
                ids.add(node.mem_id)
                if _CAPTION_NAMES.search(names) is not None:
                    self.flagged_captions.append(node)
                if _COMMENTS in names.lower():
                    self._note_comment(node, names, ids)
        return found

    def _note_comment(self, node: LexborNode, names: str, flagged: set[int]) -> None:
        """Remember a block named as comments: the outermost are the replies, and those named
        for nothing else (not "comment-meta") would stay in a thread."""
        if not _inside(node, flagged - {node.mem_id}):
            self.comment_blocks.append(node)
        if not _names_any_boilerplate(_COMMENT_WORDS.sub(" ", names.lower())):
            self.comment_ids.add(node.mem_id)

    def strip_flagged(self, flagged: list[LexborNode], choice: Choice) -> None:
        """Step 4, first half: the flagged nodes, but those holding the chosen content or an
        ``h1``."""
        keep = self.holds_content | _with_ancestors(choice.nodes) | _with_ancestors(choice.parts)
        if self._is_thread(choice):
            keep = keep | self.comment_ids
            _add_nodes(choice, self.comment_blocks)
        doomed = [node for node in reversed(flagged) if node.mem_id not in keep]
        doomed = _not_most_of(doomed, choice.nodes)
        captions = [node for node in self.flagged_captions if node.mem_id not in keep]
        if captions and self.tree.body is not None:
            forget_caption_copies(self.tree.body, captions)
        for node in doomed:
            node.decompose()

    def _is_thread(self, choice: Choice) -> bool:
        """Whether the comments are the page's content: a forum thread or a question with its
        answers, where the replies say more than the post they answer; an article's comments
        are a fraction of it."""
        if not self.comment_blocks or not choice.scored:
            return False
        chosen = {node.mem_id for node in choice.nodes}
        replies = 0
        inside = 0
        for block in self.comment_blocks:
            chars = visible_chars(block)
            replies += chars
            if block.mem_id in chosen or _inside(block, chosen):
                inside += chars
        own = sum(map(visible_chars, choice.nodes)) - inside
        return replies > _THREAD_SHARE * max(own, 0)


_THREAD_SHARE = 1.0


def _add_nodes(choice: Choice, extra: list[LexborNode]) -> None:
    """Add ``extra`` to the chosen nodes, those not inside nor around one, in document order."""
    chosen = {node.mem_id for node in choice.nodes}
    holding = _with_ancestors(choice.nodes)
    added = [node for node in extra if node.mem_id not in holding and not _inside(node, chosen)]
    if not added:
        return
    nodes = choice.nodes + added
    order = {node.mem_id: index for index, node in enumerate(_document_order(nodes))}
    choice.nodes[:] = sorted(nodes, key=lambda node: order[node.mem_id])


def _document_order(nodes: list[LexborNode]) -> list[LexborNode]:
    wanted = {node.mem_id for node in nodes}
    root = nodes[0]
    while root.parent is not None:
        root = root.parent
    return [node for node in root.traverse() if node.mem_id in wanted]


_MOST_OF_CHOSEN = 0.8


def _not_most_of(doomed: list[LexborNode], chosen: list[LexborNode]) -> list[LexborNode]:
    """``doomed`` less a flagged block that holds nearly all the chosen text: the scoring found
    the content inside it, so its names misled (a wrapper named for the theme's parts)."""
    if not doomed:
        return doomed
    ids = {node.mem_id for node in chosen}
    most = _MOST_OF_CHOSEN * sum(map(_text_len, chosen))
    return [node for node in doomed if not (_inside(node, ids) and _text_len(node) > most)]


def _fits(text: str, most: float) -> bool:
    """Whether ``text`` has at most ``most`` visible characters; a text no longer than that
    needs no counting of its spaces."""
    return len(text) <= most or visible_length(text) <= most


def _strip_never_content(tree: LexborHTMLParser) -> frozenset[str]:
    """Remove what is never content (``tree.strip_tags(_NEVER_CONTENT)``), and return the ids
    of the blocks a control on the page opens (:func:`_controlled_ids`, read before the
    buttons go): one walk of the tree for both. The nodes are removed from the last, so
    that none is touched once an ancestor of it was removed."""
    found = tree.css(_CONTROLS_OR_NEVER_CONTENT)
    controls = [node for node in found if _CONTROLS in node.attrs]
    doomed = [node for node in found if node.tag_id in _NEVER_CONTENT_IDS]
    for node in reversed(doomed):
        node.decompose()
    return _controlled_ids(controls)


def _unwrap_noscript_pages(tree: LexborHTMLParser) -> None:
    """A ``noscript`` holding a page's worth of text is the page for readers without scripts
    (the rest is drawn by a script): keep its content. Small ones are tracking pixels and
    "please enable JavaScript" notices."""
    for node in reversed(tree.tags("noscript")):
        if visible_chars(node) >= _NOSCRIPT_PAGE_CHARS:
            node.unwrap()
        else:
            node.decompose()


def _strip_captions(tree: LexborHTMLParser, body_text: str) -> tuple[int, int]:
    """Remove the picture captions, unless they hold most of the page's text (``body_text``);
    returns how many characters of text went with them, and how many visible ones."""
    captions = tree.tags(_CAPTION)
    if not captions:
        return 0, 0
    texts = [caption.text_lexbor() for caption in captions]
    visible = sum(map(visible_length, texts))  # a caption inside a caption counts twice
    if visible >= _GALLERY_SHARE * visible_length(body_text):
        return 0, 0
    if tree.body is not None:
        forget_caption_copies(tree.body, captions, texts)
    for caption in reversed(captions):  # inner ones first
        caption.decompose()
    return sum(map(len, texts)), visible


_MIN_CAPTION_COPY_CHARS = 20
_CAPTION_NAMES = re.compile("caption|legend|credit", re.IGNORECASE)


_COPY_SHARE = 0.6


def forget_caption_copies(
    body: LexborNode, captions: list[LexborNode], texts: list[str] | None = None
) -> None:
    """A caption removed as picture furniture is often written a second time into its
    picture's ``alt``: that copy goes too (the picture stays, described as decorative), or
    the Markdown would keep, as alt text, the very caption the content left out. Called
    before the captions (whose ``texts`` may be given) are removed; pages without a long
    alt text, most of them, cost one query."""
    alts = []
    for image in body.css("img[alt]"):
        alt = " ".join((image.attributes.get("alt") or "").split())
        if len(alt) >= _MIN_CAPTION_COPY_CHARS:
            alts.append((image, alt))
    if not alts:
        return
    if texts is None:
        texts = [caption.text_lexbor() for caption in captions]
    said = [" ".join(text.split()) for text in texts]
    said = [text for text in said if len(text) >= _MIN_CAPTION_COPY_CHARS]
    for image, alt in alts:
        if any(_is_copy(alt, text) for text in said):
            image.attrs["alt"] = ""


def _is_copy(alt: str, caption: str) -> bool:
    """The same words, give or take a credit: one holds the other, and most of it."""
    shorter, longer = (alt, caption) if len(alt) <= len(caption) else (caption, alt)
    return len(shorter) >= _COPY_SHARE * len(longer) and shorter in longer


# A closed tab or accordion panel is content a click away, not furniture: a tab panel, or a
# region named by its heading (WAI-ARIA's accordion: role=region, aria-labelledby).
_PANEL_ROLES = frozenset({"tabpanel", "region"})


_MAX_CONTROLLED = 1000


def _controlled_ids(controls: list[LexborNode]) -> frozenset[str]:
    """The ids of the blocks ``controls`` (the page's elements with an ``aria-controls``, in
    document order) open. Bounded: a hostile page's thousands of controls do not all count."""
    ids: set[str] = set()
    for control in controls[:_MAX_CONTROLLED]:
        ids.update((control.attributes.get(_CONTROLS) or "").split())
    return frozenset(ids)


def _is_furniture(node: LexborNode, controlled: frozenset[str] = frozenset()) -> bool:
    attrs = node.attributes
    role = (attrs.get("role") or "").strip().lower()
    if "hidden" in attrs or (attrs.get("aria-hidden") or "").lower() == "true":
        return not _is_closed_panel(role, attrs, controlled)
    return role in _FURNITURE_ROLES


def _is_closed_panel(role: str, attrs: dict[str, str | None], controlled: frozenset[str]) -> bool:
    if role == "tabpanel":
        return True
    if role == "region" and attrs.get("aria-labelledby"):
        return True
    own = attrs.get("id")
    return own is not None and own in controlled


def fallback_root(tree: LexborHTMLParser) -> LexborNode | None:
    """``<main>``, else the article body, else a single ``<article>``, when it holds enough of
    the text; else the body."""
    body = tree.body
    if body is None:
        return None
    body_chars = _text_len(body)
    for selector in _FALLBACK_ROOTS:
        found = body.css(selector)
        if len(found) == 1 or (found and selector.startswith("main")):
            candidate = found[0]
            if _text_len(candidate) >= _MIN_ROOT_SHARE * body_chars:
                return candidate
    return body


_LINK_LIKE_BLOCKS = "ul, ol, dl, div, section, table, p, li"
_MAX_LINK_SHARE = 0.5
# A table is data whose cells often link to what they list (a product, a download, a
# platform): only one that is nearly all link text is a menu laid out as a grid.
_MAX_TABLE_LINK_SHARE = 0.8
# When the link blocks are nearly all of the content chosen, they are not menus inside a text
# but the page's own items (a listing of articles, products, search results): they stay.
_LISTING_SHARE = 0.7
_MIN_ITEM_CHARS = 15  # text per link: a headline with its snippet, not "Sports" or "Page 2"


def strip_link_blocks(choice: Choice) -> None:
    """Step 4, second half: blocks inside the content whose text is mostly link text (menus,
    tag lists, "read more" lines, lists of other articles). The chosen nodes themselves stay.
    A block inside one already doomed is not measured again."""
    protected = _with_ancestors(choice.parts)  # the scored parts of a page of sections
    for root in choice.nodes:
        links = LinkTotals.of(root)
        if not links.totals:
            continue
        doomed: list[LexborNode] = []
        doomed_chars = 0
        under: dict[int, bool] = {}  # node id: inside a doomed block?
        for block in root.css(_LINK_LIKE_BLOCKS):  # outermost first
            key = block.mem_id
            linked = links.totals.get(key, 0)
            if (
                not linked
                or key == root.mem_id
                or key in protected
                or _under_doomed(key, links.parents, under)
            ):
                continue
            most = _MAX_TABLE_LINK_SHARE if block.tag_id == _TABLE else _MAX_LINK_SHARE
            chars = visible_chars(block)
            if linked > most * chars and not _is_pointer(block):
                doomed.append(block)
                doomed_chars += chars
                under[key] = True
        if _is_listing(doomed, doomed_chars, visible_chars(root)):
            continue
        for block in reversed(doomed):
            block.decompose()


_POINTER_MAX_LINKS = 3


def _is_pointer(block: LexborNode) -> bool:
    """A paragraph that points the reader to another page in words of its own ("See also:
    Tide tables for the harbour"): a line of the text, not a menu."""
    return (
        block.tag_id == _P
        and CROSS_REFERENCE.match(block.text_lexbor()) is not None
        and len(block.css("a")) <= _POINTER_MAX_LINKS
    )


def _is_listing(doomed: list[LexborNode], doomed_chars: int, content_chars: int) -> bool:
    """Whether link blocks ``doomed`` (``doomed_chars`` of text) in content of ``content_chars``
    are a listing's items rather than link lists to leave out: nearly all the content, and
    either too little text beside them to be a text of its own or links as long as headlines
    with their snippets, not a menu's labels."""
    if doomed_chars <= _LISTING_SHARE * content_chars:
        return False
    if content_chars - doomed_chars < MIN_CONTENT_CHARS:
        return True
    links = sum(len(block.css("a")) for block in doomed)
    return doomed_chars >= _MIN_ITEM_CHARS * links


def _under_doomed(key: int, parents: dict[int, int], under: dict[int, bool]) -> bool:
    """Whether an ancestor of ``key`` (a node holding links) is doomed; every answer found on
    the way up is remembered, so that all blocks together cost one walk of the tree."""
    path: list[int] = []
    parent = parents.get(key)
    while parent is not None and parent not in under:
        path.append(parent)
        parent = parents.get(parent)
    answer = under.get(parent, False) if parent is not None else False
    for node in path:
        under[node] = answer
    return answer


_REPEAT_PARAGRAPHS = "p, li, h1, h2, h3, h4, h5, h6, dd"
_MIN_REPEAT_CHARS = 40
_MIN_REPEAT_BLOCK_CHARS = 80
# Code is said again on purpose (the same lines in each step that needs them).
_MEANT_TWICE = tag_ids({"pre", "code"})
_COPIES = 2


def strip_repeated_blocks(choice: Choice) -> None:
    """A block said twice, word for word, is one block drawn twice for different screens (a
    phone's copy and a desktop's, one of them hidden by the style sheet): a reader sees it
    once. Text said three times or more is a pattern of the page (a line each item repeats),
    not a copy, and stays."""
    for root in choice.nodes:
        if not _repeats_a_paragraph(root):
            continue  # most pages: one query, no block's text built
        copies = _copies(root)
        doomed: list[LexborNode] = []
        skip: set[int] = set()
        for node in root.traverse():
            parent = node.parent
            if parent is not None and parent.mem_id in skip:
                skip.add(node.mem_id)
                continue
            found = copies.get(node.mem_id)
            if found is not None and found[1].mem_id == node.mem_id:
                doomed.append(node)
                skip.add(node.mem_id)
        for node in reversed(doomed):
            node.decompose()


def _copies(root: LexborNode) -> dict[int, tuple[LexborNode, LexborNode]]:
    """The blocks under ``root`` whose text (of a paragraph's length at least) is said by
    exactly one other block, not one around or inside it, each to the pair (in document
    order). Code is left alone: it is said again on purpose."""
    said: dict[str, list[LexborNode]] = {}
    small: set[int] = set()
    for node in root.traverse():
        tag = node.tag_id
        if tag in _NOT_ELEMENTS:
            continue
        parent = node.parent
        if (parent is not None and parent.mem_id in small) or tag in _MEANT_TWICE:
            small.add(node.mem_id)
            continue
        text = " ".join(node.text_lexbor().split())
        if len(text) < _MIN_REPEAT_BLOCK_CHARS:
            small.add(node.mem_id)  # nor is anything inside it
            continue
        nodes = said.setdefault(text, [])
        if not nodes or not _is_ancestor(nodes[-1], node):
            nodes.append(node)
    pairs: dict[int, tuple[LexborNode, LexborNode]] = {}
    for nodes in said.values():
        if len(nodes) == _COPIES:
            pair = (nodes[0], nodes[1])
            pairs[nodes[0].mem_id] = pairs[nodes[1].mem_id] = pair
    return pairs


def _repeats_a_paragraph(root: LexborNode) -> bool:
    said: dict[str, int] = {}
    for node in root.css(_REPEAT_PARAGRAPHS):
        text = node.text_lexbor()
        if len(text) >= _MIN_REPEAT_CHARS:  # most are shorter: no stripping
            text = text.strip()
            said[text] = said.get(text, 0) + 1
    return _COPIES in said.values()


def _is_ancestor(ancestor: LexborNode, node: LexborNode) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.mem_id == ancestor.mem_id:
            return True
        parent = parent.parent
    return False


_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_HEADING_SELECTOR = "h2, h3, h4, h5, h6"
_SUBHEADING_TAGS = tag_ids({"h2", "h3", "h4", "h5", "h6"})
_HEADING_LEVELS = {tag_id(name): level for name, level in _HEADINGS.items()}
_MAX_TITLE_CHARS = 80


def _next_text(node: LexborNode, root: LexborNode) -> LexborNode | None:
    """The first node after ``node`` in document order, inside ``root``, that has text."""
    current = node
    while current.mem_id != root.mem_id:
        sibling = current.next
        while sibling is not None:
            if sibling.tag_id == TEXT_ID:
                if (sibling.text_content or "").strip():
                    return sibling
            elif _opens_with_text(sibling) or sibling.text_lexbor().strip():
                return sibling
            sibling = sibling.next
        parent = current.parent
        if parent is None:
            return None
        current = parent
    return None


def _opens_with_text(node: LexborNode) -> bool:
    """Whether ``node``'s first child is a text node with a word in it: then its text is not
    blank, known without building the whole of it (a paragraph's, for each heading)."""
    first = node.child
    if first is None or first.tag_id != TEXT_ID:
        return False
    text = first.text_content
    return text is not None and text != "" and not text.isspace()


_FIRST_BLOCK_TAGS = frozenset(_HEADINGS) | {"p", "li", "td", "pre", "blockquote"}
_FIRST_BLOCK_CSS = ", ".join(sorted(_FIRST_BLOCK_TAGS))
_FIRST_BLOCK_IDS = tag_ids(_FIRST_BLOCK_TAGS)


def _first_heading_level(node: LexborNode) -> int | None:
    tag = node.tag_id
    level = _HEADING_LEVELS.get(tag)
    if level is not None:
        return level
    if tag in _FIRST_BLOCK_IDS:
        return None  # a block itself (a paragraph, say): its first block is itself
    first = first_tagged(node, _FIRST_BLOCK_IDS, _FIRST_BLOCK_CSS)
    level = _HEADING_LEVELS.get(first.tag_id) if first is not None else None
    if first is None or level is None:
        return None
    # the heading must open the block: no text before it
    before = node.text_lexbor().strip()
    return level if before.startswith(first.text_lexbor().strip()) else None


def strip_orphan_headings(choice: Choice) -> None:
    """A heading with nothing under it (its list of related articles was removed, or it ends
    the content) announces what is not there: drop it."""
    for root in choice.nodes:
        doomed = []
        for heading in root.css(_HEADING_SELECTOR):
            if len(heading.text_lexbor().strip()) > _MAX_TITLE_CHARS:
                continue  # a lead or a sentence set large, not a title over a missing part
            following = _next_text(heading, root)
            level = _HEADING_LEVELS[heading.tag_id]
            if following is None:
                doomed.append(heading)
            elif following.tag_id != TEXT_ID:
                next_level = _first_heading_level(following)
                if next_level is not None and next_level <= level:
                    doomed.append(heading)
        for heading in reversed(doomed):
            heading.decompose()


_LEAD_MIN_CHARS = 80
_LEAD_MAX_CHARS = 1500
# Siblings are counted with the whitespace between them, and a headline is often followed by a
# date, a byline, share buttons and a picture before its standfirst: room for about a dozen
# such elements, still a bounded walk.
_LEAD_STEPS = 30
_LEAD_HEADLINES = 3
_LEAD_LINK_SHARE = 0.2
_LEAD_END = re.compile(r"[.!?:;\"\u201c\u201d\u00bb)\u2026\u3002\uff01\uff1f]$")


def _is_subheadline(node: LexborNode, text: str) -> bool:
    """A standfirst set as a heading (or wrapped around one, alone): a heading ends without a
    full stop, sentence or not."""
    heading = node if node.tag_id in _SUBHEADING_TAGS else node.css_first(_HEADING_SELECTOR)
    return heading is not None and heading.text_lexbor().strip() == text


def _is_lead(node: LexborNode) -> bool:
    text = node.text_lexbor().strip()
    return (
        _LEAD_MIN_CHARS <= len(text) <= _LEAD_MAX_CHARS
        and (_LEAD_END.search(text) is not None or _is_subheadline(node, text))
        and FLAG_ATTRIBUTE not in node.attributes
        and node.css_first(f"[{FLAG_ATTRIBUTE}], h1") is None
        and link_share(node) < _LEAD_LINK_SHARE
    )


def leads(tree: LexborHTMLParser, nodes: list[LexborNode]) -> list[LexborNode]:
    """The standfirst: blocks of prose between the page's headline and the chosen content
    (a lead set as a large heading, an intro box), too small for the scoring to count. Only
    the few elements right after the ``h1`` that leads to the content (not a logo's ``h1`` in
    the site's header), and only whole sentences with little link text."""
    body = tree.body
    if body is None or not nodes:
        return []
    chosen = {node.mem_id for node in nodes}
    holding = _with_ancestors(nodes)  # the chosen nodes and their ancestors
    headlines = [
        h1
        for h1 in body.css("h1")
        if h1.mem_id not in holding and h1.text_lexbor().strip() and not _inside(h1, chosen)
    ]
    if not headlines:
        return []
    for headline in reversed(headlines[-_LEAD_HEADLINES:]):
        found, met = _leads_after(headline, chosen, holding)
        if met:
            return found
    return _leads_after(headlines[0], chosen, holding)[0]


def _leads_after(
    headline: LexborNode, chosen: set[int], holding: set[int]
) -> tuple[list[LexborNode], bool]:
    """The leads in the few elements after ``headline``, and whether the content came next."""
    found: list[LexborNode] = []
    current: LexborNode | None = headline
    for _ in range(_LEAD_STEPS):  # the next element in document order, skipping subtrees
        while current is not None and current.next is None:
            current = current.parent
            if current is None or current.mem_id in holding:
                return found, False  # past the content without meeting it
        if current is None:
            return found, False
        current = current.next
        while current is not None and current.mem_id in holding:
            if current.mem_id in chosen:
                return found, True
            current = current.child  # the content is further in
        if current is not None and current.tag_id not in _NOT_ELEMENTS and _is_lead(current):
            found.append(current)
    return found, False


def _inside(node: LexborNode, ids: set[int]) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.mem_id in ids:
            return True
        parent = parent.parent
    return False


def _word_count(text: str, words: int) -> int:
    """``words`` is how many pieces ``text`` splits into on whitespace; CJK characters count one
    word each."""
    if text.isascii() or _CJK.search(text) is None:  # isascii() is a flag check, not a scan
        return words
    return len(_CJK_OR_RUN.findall(text))


def collapsed_text(root: LexborNode) -> tuple[str, int]:
    """The text under ``root`` with every whitespace run made one space, trimmed, and how many
    words that leaves: exactly ``" ".join(words)`` and ``len(words)`` for ``words`` the text's
    ``str.split()``.

    Splitting a page's text builds one string per word (most of the cost of measuring it), so
    lexbor first joins the text nodes, each stripped, whitespace-only ones left out, with one
    space. That splits into the same words; when no whitespace is left in it but those single
    spaces (typical of text not indented in the markup), it is the answer as it stands.
    """
    text = root.text(deep=True, separator=" ", strip=True, skip_empty=True)
    if _is_collapsed(text):
        return text, text.count(" ") + 1 if text else 0
    words = text.split()
    return " ".join(words), len(words)


def _is_collapsed(text: str) -> bool:
    # ASCII only: beyond it str.split() knows more whitespace (no-break spaces, …) than is
    # looked for here. Each test is one C scan of the text.
    return (
        text.isascii()
        and "  " not in text
        and not any(space in text for space in _ASCII_SPACES_BUT_SPACE)
        and not text.startswith(" ")
        and not text.endswith(" ")
    )


def _choose(tree: LexborHTMLParser, cleaner: Cleaner, flagged: list[LexborNode]) -> Choice | None:
    body = tree.body
    if body is None:
        return None
    choice = choose_content(body, skip_flagged=bool(flagged))
    if choice is None and flagged:
        choice = choose_content(body, skip_flagged=False)  # the names misled: score them all
    if choice is None:
        root = fallback_root(tree)
        return Choice([root], scored=False) if root is not None else None
    _widen_to_sections(choice)
    return choice


# A page of sections (a service or product page built of blocks, a landing page): its prose is
# many short blocks far apart, none of them an article's length, and the scoring finds some of
# them. The content is the block that holds them all, less its furniture; an article's prose
# has one long run, and a stray box beside it does not widen it.
_MIN_SECTION_CHARS = 100  # a part this long counts: not a badge, a price or a popup's line
_MIN_SECTIONS = 2
_MAX_SECTION_CHARS = 1500  # a longer run of prose is an article's body: it stands alone
_PAGE_TAGS = tag_ids({"html", "body"})


def _widen_to_sections(choice: Choice) -> None:
    """When the content chosen is several short parts in different places, it becomes their
    nearest common ancestor (not the whole body); the parts are remembered, so that no block
    holding one of them is removed afterwards for its name or its links."""
    nodes = choice.nodes
    if len(nodes) < _MIN_SECTIONS or len({_parent_id(node) for node in nodes}) == 1:
        return  # one part, or siblings: already one block of the page
    sizes = [visible_chars(node) for node in nodes]
    if max(sizes) > _MAX_SECTION_CHARS:
        return
    if sum(size >= _MIN_SECTION_CHARS for size in sizes) < _MIN_SECTIONS:
        return
    common = _common_ancestor(nodes)
    if common is None or common.tag_id in _PAGE_TAGS:
        return
    choice.parts = list(nodes)
    choice.nodes[:] = [common]


def _parent_id(node: LexborNode) -> int | None:
    parent = node.parent
    return parent.mem_id if parent is not None else None


def _common_ancestor(nodes: list[LexborNode]) -> LexborNode | None:
    """The nearest node that holds all of ``nodes`` (none of which holds another)."""
    others = [_with_ancestors([node]) for node in nodes[1:]]
    current = nodes[0].parent
    while current is not None:
        if all(current.mem_id in ids for ids in others):
            return current
        current = current.parent
    return None


def main_content(tree: LexborHTMLParser) -> MainContent:
    """Remove the boilerplate from ``tree`` (in place), choose the content, and measure it."""
    cleaner = Cleaner.for_tree(tree)
    cleaner.strip_boilerplate()
    body = tree.body
    flagged = cleaner.flagged(body) if body is not None else []
    choice = _choose(tree, cleaner, flagged)
    nodes: list[LexborNode] = []
    texts: list[str] = []
    words = 0
    scored = choice is not None and choice.scored
    if choice is not None:
        cleaner.strip_flagged(flagged, choice)
        if choice.scored:
            strip_link_blocks(choice)
            strip_repeated_blocks(choice)
            strip_orphan_headings(choice)
            choice.nodes[:0] = leads(tree, choice.nodes)
        nodes = choice.nodes
        for node in nodes:
            text, count = collapsed_text(node)
            if text:
                texts.append(text)
                words += count
    return _measured(nodes, scored, texts, words)


def _measured(nodes: list[LexborNode], scored: bool, texts: list[str], words: int) -> MainContent:
    text = " ".join(texts)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return MainContent(nodes, scored, text, _word_count(text, words), f"sha256:{digest}")


def chosen_content(tree: LexborHTMLParser, nodes: list[LexborNode]) -> MainContent:
    """``nodes`` as the content (what a request's selectors chose), with only what is never
    content (scripts, styles, form controls) removed from them."""
    _unwrap_noscript_pages(tree)
    _strip_never_content(tree)
    texts: list[str] = []
    words = 0
    for node in nodes:
        text, count = collapsed_text(node)
        if text:
            texts.append(text)
            words += count
    return _measured(nodes, False, texts, words)


def whole_page(tree: LexborHTMLParser) -> MainContent:
    """The whole body as the content, navigation, headers and footers included; only what is
    never content (scripts, styles, form controls) is removed."""
    body = tree.body
    return chosen_content(tree, [body] if body is not None else [])
