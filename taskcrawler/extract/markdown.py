"""Main content to Markdown (CommonMark + GFM tables/strikethrough) or to plain text.

A small converter over the selectolax tree rather than a BeautifulSoup-based library: one parse per
page, and the boilerplate was already removed from that same tree. Block elements become blocks
separated by a blank line; inline elements are rendered into the paragraph being built. Trees deeper
than ``MAX_DEPTH`` are flattened to text so that hostile nesting cannot exhaust the Python stack.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Set

from selectolax.lexbor import LexborNode

from taskcrawler.extract.scoring import CROSS_REFERENCE, first_tagged
from taskcrawler.extract.tree import COMMENT_ID, TEXT_ID, tag_id, tag_ids
from taskcrawler.extract.urls import Resolver

MAX_DEPTH = 80
#: Characters of link and picture URLs one rendering writes at most; past them, links are their
#: text and pictures are left out. A relative URL resolves against a base (or a page URL) of
#: 2 KB, so ``<a href=b>x</a>`` (17 bytes) wrote 2 KB: a 100 KB page made 10 MB of Markdown, a
#: page at the body limit would have made gigabytes. 100,000 links of 160 characters fit.
MAX_URL_CHARS = 16 * 1024 * 1024
#: Quotes nested deeper are not marked again: each level's "> " went on every line of what it
#: holds, so 79 nested quotes around a ``<pre>`` of 250,000 short lines (a 500 KB page, parsed
#: in a thread, without a deadline) made 40 MB of Markdown in 7 s of CPU.
MAX_QUOTE_NESTING = 8
#: Lists nested deeper do not indent what they hold: each level's indent went on every line
#: inside it, so 40 nested lists numbered from 999999999 around a ``<pre>`` of 200,000 short
#: lines (a 400 KB page, parsed in a thread) made 88 MB of Markdown in 8 s of CPU.
MAX_LIST_NESTING = 8
_BREAK = "\x00br\x00"
# Around every emphasis run, until the paragraph is joined: whether a marker can open or
# close depends on the characters beside it, which only the joined paragraph has.
_OPENS = "\x01"
_CLOSES = "\x02"
# An emphasis run with no other run inside: its marker and its text.
_STUCK = re.compile(r"[^\W_]\x01|\x02[^\W_]")  # a run with a letter right beside it
_LINK_END = re.compile(r"\]\([^()\s]*\)$")
_RUN = re.compile(r"\x01(\*+|~~)([^\x01\x02]+?)\1\x02")
_EDGE_BREAKS = re.compile(r"^(?:\s|\x00br\x00)+|(?:\s|\x00br\x00)+$")
_CONTAINERS = frozenset(
    {"address", "article", "aside", "body", "center", "dd", "details", "dialog", "div", "dt"}
    | {"fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup", "legend", "li"}
    | {"main", "nav", "section", "summary"}
)
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = (
    _CONTAINERS
    | frozenset(_HEADINGS)
    | frozenset({"p", "ul", "ol", "dl", "blockquote", "pre", "table", "hr", "menu", "caption"})
)
_BLOCK_CSS = ", ".join(sorted(_BLOCKS))
_SPACED = _BLOCKS | frozenset({"td", "th", "tr", "thead", "tbody", "tfoot"})
_STRONG = frozenset({"strong", "b"})
_EMPHASIS = frozenset({"em", "i", "cite", "dfn"})
_STRIKE = frozenset({"del", "s", "strike"})
_CODE = frozenset({"code", "kbd", "samp", "tt", "var"})
_ATOMIC = _CODE | frozenset({"img"})
_SKIP = frozenset({"head", "title", "script", "style", "template", "noscript", "-comment"})
# The same sets as lexbor's tag ids, which the walks compare (see tree.tag_id).
_BLOCK_IDS = tag_ids(_BLOCKS)
_OWN_BLOCK_IDS = tag_ids(_BLOCKS - _CONTAINERS)
_HEADING_IDS = {tag_id(name): level for name, level in _HEADINGS.items()}
_SPACED_IDS = tag_ids(_SPACED)
_STRONG_IDS = tag_ids(_STRONG)
_EMPHASIS_IDS = tag_ids(_EMPHASIS)
_STRIKE_IDS = tag_ids(_STRIKE)
_CODE_IDS = tag_ids(_CODE)
_ATOMIC_IDS = tag_ids(_ATOMIC)
_SKIP_IDS = tag_ids(_SKIP - {"-comment"}) | {COMMENT_ID}
_A, _BR, _IMG, _LI, _UL, _OL, _MENU = map(tag_id, ("a", "br", "img", "li", "ul", "ol", "menu"))
_PRE, _QUOTE, _TABLE, _HR, _DT, _TR = map(tag_id, ("pre", "blockquote", "table", "hr", "dt", "tr"))
_LIST_IDS = frozenset({_UL, _OL, _MENU})
_LISTS = frozenset({_UL, _OL})
# The blocks :meth:`MarkdownRenderer._block` does not render as their children's blocks.
_OWN_FORMS = frozenset(_HEADING_IDS) | _LIST_IDS | {_PRE, _QUOTE, _TABLE, _HR, _DT}
_LIST_PARTS = frozenset({_LI, _UL, _OL})
_ROW_GROUPS = tag_ids(("thead", "tbody", "tfoot"))
_CELLS = tag_ids(("td", "th"))

# Only what would otherwise be read as syntax: a "]" that would close a link or a reference
# definition, emphasis characters, backticks, a backslash before punctuation (which it would
# escape) or at the end of a run of text (markup may follow), a "<" that would open an HTML
# tag or an autolink. "[draft]", "C:\\Users", "a < b" and "<3" stay as they are written.
_ESCAPE = re.compile(r"[`*]|\\(?=[!-/:-@\[-`{-~]|$)|\](?=[(\[:])|(?<!\w)_|_(?!\w)|<(?=[A-Za-z/!?])")
_EMPTY_STRONG = re.compile(r"\*\*\*\*|\*\* \*\*")  # "**a****b**", "**a** **b**": one run
# What may stand before a "*" first on its line ("- ", "> ", "1. "): unescaped, it could open
# a list item.
_BLOCK_MARKERS = re.compile(r"(?:[ \t]*(?:[>*+-]|\d{1,9}[.)]))*[ \t]*")
# Escape pairs (read as one, so "\\\\*" is a backslash then a star), runs of our emphasis
# stars, link destinations (a "*" in a URL is neither).
_STARS_AND_SPACES = str.maketrans("", "", "\\* \t")
_STAR_TOKENS = re.compile(r"\\.|\*+|\]\([^)]*\)")
#: CommonMark reads an ordered list item's number of 1-9 digits only (and no sign): a longer
#: ``start`` makes no list, and repeated on each item it made a 100 KB page 86 MB of Markdown.
_MAX_LIST_START = 999_999_999
# What would start a block at the start of a paragraph: an ATX heading ("#" then a space), a
# quote, a bullet ("-", "+" then a space), a thematic break ("---", "- - -"), a table's pipe,
# an ordered item ("12." or "12)" then a space). "#hashtag", "-5 °C", "+49 30" and "2019.12"
# are text to CommonMark and stay as written.
_BLOCK_START = re.compile(
    r"^(?:#{1,6}(?=[ \t]|$)|>|[+-](?=[ \t]|$)|-[- \t]*$|\||\d{1,9}[.)](?=[ \t]|$))"
)
# After a hard line break, inside the paragraph: the same, but an ordered list can only
# interrupt a paragraph when it starts at 1 ("99. Kevin" is text there), and a line of only
# "=" would underline the lines before it into a heading.
_LINE_CONTINUES = re.compile(
    r"^(?:#{1,6}(?=[ \t]|$)|>|[+-](?=[ \t]|$)|-[- \t]*$|=+[ \t]*$|\||0*1[.)](?=[ \t]|$))"
)
# The first characters either of them can match (a digit aside: any of Unicode's).
_BLOCK_START_CHARS = frozenset("#>+-|=")
# A heading's closing sequence: "## Vote #" would lose its "#".
_CLOSING_HASHES = re.compile(r"(?<= )#+$")
# Whitespace that is not already a single space: a lone space is left alone, so the common
# case (text that needs nothing) finds no match at all.
_SPACES = re.compile(r"[\t\r\n\f\v\u00a0][ \t\r\n\f\v\u00a0]*| [ \t\r\n\f\v\u00a0]+")
_BACKTICKS = re.compile(r"`+")
_PIXEL_SIZES = frozenset({"0", "1", "2", "0px", "1px", "2px"})
LAZY_SOURCES = ("data-src", "data-lazy-src", "data-original")
_DATA_IMAGE = "data:image/"
_PLACEHOLDER = re.compile(r"spacer|pixel|blank\.|transparent\.|loader|1x1", re.IGNORECASE)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_MARKUP = str.maketrans("", "", "*_[]\\`#>|")
_SENTENCE_END = re.compile(r"[.!?:;\"\u201d\u00bb)\u2026\u3002\uff01\uff1f]\s*$")
MAX_TAIL_LINES = 2
MAX_TAIL_CHARS = 60
# A picture's credit, alone on its line or closing a caption: "Foto: dpa", "Photograph by
# Ann Lee", "(Bild: Getty)", "Chloe Kim will es wissen. © AFP / K. Kudryavtsev". Captions are
# about the pictures beside the text, not part of it (a figcaption is left out the same way).
_CREDIT_LINE_CHARS = 250
_CREDIT = r"(?:photos?|fotos?|bild(?:er)?|images?|credits?|photo credits?|crédits? photos?)"
_CREDIT_START = re.compile(rf"\W*(?:{_CREDIT}\s?:|photograph(?:ed)? by\b|©)", re.IGNORECASE)
_CREDIT_END = re.compile(
    r"(?:(?:\(|\b)(?:photos?|fotos?|bild|image|credits?|crédito|copyright)\s?:\s?[^.!?:]{1,60}"
    r"\)?|©\s?[^.!?]{1,60})$",
    re.IGNORECASE,
)
_CREDIT_END_CHARS = 90  # the longest ending _CREDIT_END can match
_CREDIT_BLOCK_CHARS = 4 * _CREDIT_LINE_CHARS  # Markdown's link targets: measured again later
_LANG = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)")


def _children(node: LexborNode) -> Iterator[LexborNode]:
    return node.iter(include_text=True)


class MarkdownRenderer:
    """Renders one subtree; ``markdown=False`` gives plain text with the same block structure."""

    def __init__(
        self, resolver: Resolver, *, markdown: bool, keep_data_images: bool = False
    ) -> None:
        self.resolver = resolver
        self.markdown = markdown
        #: Inline ``data:image/…`` pictures stay (else they are left out, as a URL-less image).
        self.keep_data_images = keep_data_images
        # Inside a table cell: GFM reads a cell as inline text, nothing in it starts a block.
        self._in_cell = 0
        self._quoted = 0  # the quotes around the node being rendered
        self._listed = 0  # the lists around it
        # The blocks that are a data table, a list or code: never a trailing furniture line.
        self._structured: set[str] = set()
        self._url_chars = MAX_URL_CHARS  # left to write (see MAX_URL_CHARS)

    def render(
        self, nodes: list[LexborNode], *, title: str | None = None, trim_tail: bool = False
    ) -> str:
        """The blocks of ``nodes`` (each rendered as a container), a title first if given.
        ``trim_tail`` drops the short lines that end the content without ending a sentence."""
        blocks: list[str] = []
        self._structured.clear()
        self._url_chars = MAX_URL_CHARS
        for node in nodes:
            tag = node.tag_id
            if tag in _OWN_BLOCK_IDS:
                blocks.extend(self._block(node, tag, 1))
            else:
                blocks.extend(self.blocks(node, 0))
        if trim_tail:
            _trim_tail(blocks, self._structured)
        longest = _CREDIT_BLOCK_CHARS if self.markdown else _CREDIT_LINE_CHARS
        # Every credit has a colon, a "©" or a "photograph by" (see _is_credit): three scans in
        # C spare most blocks a call.
        blocks = [
            block
            for block in blocks
            if len(block) > longest
            or (":" not in block and "©" not in block and "hotograph" not in block)
            or not self._is_credit(block)
        ]
        if self.markdown:
            blocks = [_free_stars(block) if "\\*" in block else block for block in blocks]
        if title:
            blocks.insert(0, f"# {title}" if self.markdown else title)
        return _canonical("\n\n".join(blocks).strip())

    def _is_credit(self, block: str) -> bool:
        """A paragraph of one short line that is a picture's credit or ends with one. Not a
        heading, list, table or quote, nor (in Markdown) one holding the picture itself."""
        # Every credit has a colon (not a URL's), a "©" or a "photograph by": a few scans in
        # C reject nearly every block.
        if "©" not in block and "hotograph" not in block:
            colons = block.count(":")
            if not colons or colons == block.count("://"):
                return False
        if "\n" in block or "\t" in block:
            return False
        if self.markdown:
            if "![" in block or block[:1] in "#-|>" or block[:1].isdigit():
                return False
            if "](" in block:  # the link's text, not its target
                block = _LINK_TARGET.sub("]", block).replace("[", "").replace("]", "")
            block = block.replace("\\", "").strip("*_ ")
            if len(block) > _CREDIT_LINE_CHARS:
                return False
        block = block.strip()
        if _CREDIT_START.match(block) is not None:
            return True
        tail = max(0, len(block) - _CREDIT_END_CHARS)
        # a credit at the end has its colon or its sign there
        if block.find(":", tail) < 0 and block.find("©", tail) < 0:
            return False
        return _CREDIT_END.search(block, tail) is not None

    # -- blocks ---------------------------------------------------------------------------

    def blocks(self, node: LexborNode, depth: int) -> list[str]:
        """The children of ``node`` as a list of blocks."""
        if depth > MAX_DEPTH:
            return self._flat(node)
        only = _only_text(node)
        if only is not None:  # a plain paragraph, most blocks: the loop below, unrolled
            text = self._text_block(only)
            return [text] if text else []
        blocks: list[str] = []
        inline: list[str] = []
        for child in _children(node):
            tag = child.tag_id
            if tag == TEXT_ID:
                text = child.text_content or ""
                # Whitespace before a paragraph's first word (the markup's indentation
                # between blocks, most text nodes here) is stripped from the paragraph anyway.
                if inline or not text.isspace():
                    inline.append(self._text(text))
            elif tag in _BLOCK_IDS:
                if inline:
                    self._flush(inline, blocks)
                blocks.extend(self._block(child, tag, depth + 1))
            elif tag == _BR:
                inline.append(_BREAK)
            elif tag in _SKIP_IDS:
                continue
            elif (
                tag not in _ATOMIC_IDS
                and _has_elements(child)
                and first_tagged(child, _BLOCK_IDS, _BLOCK_CSS) is not None
            ):
                # An inline element around blocks (the parser's adoption agency makes these
                # out of unclosed <a>/<b>): Markdown cannot nest blocks in it, keep the blocks.
                self._flush(inline, blocks)
                blocks.extend(self.blocks(child, depth + 1))
            else:
                inline.append(self._inline(child, tag, depth + 1))
        self._flush(inline, blocks)
        return blocks

    def _flat(self, node: LexborNode) -> list[str]:
        text = self._paragraph(self._text(node.text(deep=True, separator=" ")))
        return [text] if text else []

    def _block(self, node: LexborNode, tag: int, depth: int) -> list[str]:
        """``node`` (whose ``tag_id`` is ``tag``) as blocks."""
        if tag not in _OWN_FORMS:  # a paragraph, a container: one lookup for the commonest
            return self.blocks(node, depth)
        level = _HEADING_IDS.get(tag)
        if level is not None:
            return self._heading(node, level, depth)
        if tag in _LIST_IDS:
            return self._list(node, ordered=tag == _OL, depth=depth)
        if tag == _PRE:
            return self._pre(node)
        if tag == _QUOTE:
            return self._quote(node, depth)
        if tag == _TABLE:
            return self._table(node, depth)
        if tag == _HR:
            return ["---"] if self.markdown else []
        if tag == _DT and self.markdown:
            text = self._paragraph(self._inline_children(node, depth), block_start=False)
            return [f"**{text}**"] if text else []
        return self.blocks(node, depth)

    def _text_block(self, text: str, *, block_start: bool = True) -> str:
        """A block that holds one text node, ``text``: what
        ``self._paragraph(self._text(text), block_start=block_start, collapsed=True)`` is, in
        fewer calls (most blocks are one text node; a call costs more than each step here)."""
        text = _collapse(text)
        markdown = self.markdown
        if markdown and _has_special(text):
            text = _ESCAPE.sub(_backslashed, text)
        if _BREAK in text:
            return self._paragraph(text, block_start=block_start, collapsed=True)
        line = text.strip()
        if not markdown or not line:
            return line
        if block_start and not self._in_cell and _may_start_block(line):
            line = _BLOCK_START.sub(_escape_marker, line)
        return _inline_syntax(line)

    def _flush(self, inline: list[str], blocks: list[str]) -> None:
        if not inline:  # between two blocks: nothing to join
            return
        text = self._paragraph(inline)
        inline.clear()
        if text:
            blocks.append(text)

    def _paragraph(
        self, parts: list[str] | str, *, block_start: bool = True, collapsed: bool = False
    ) -> str:
        """One paragraph's inline parts as one block. ``block_start=False`` for text that
        CommonMark reads as inline only (a heading's, a table cell's): its start needs no
        escape to not open a block. ``collapsed``: ``parts`` is one text :meth:`_text` made,
        its whitespace collapsed already (looking for runs again costs a scan per kind)."""
        joined = parts if isinstance(parts, str) else "".join(parts)
        if _BREAK not in joined:  # most paragraphs: one line, no list of lines to build
            line = (joined if collapsed else _collapse(joined)).strip()
            if not self.markdown or not line:
                return line
            if block_start and not self._in_cell and _may_start_block(line):
                line = _BLOCK_START.sub(_escape_marker, line)
            return _inline_syntax(line)
        lines = [_collapse(line).strip() for line in joined.split(_BREAK)]
        if not self.markdown:
            return "\n".join(line for line in lines if line)
        # A hard line break as CommonMark has it from Markdown itself: two trailing spaces.
        lines = [line for line in lines if line]
        if not self._in_cell:
            if block_start and lines and _may_start_block(lines[0]):
                lines[0] = _BLOCK_START.sub(_escape_marker, lines[0])
            lines[1:] = [
                _LINE_CONTINUES.sub(_escape_marker, line) if _may_start_block(line) else line
                for line in lines[1:]
            ]
        return _inline_syntax("  \n".join(lines))

    def _heading(self, node: LexborNode, level: int, depth: int) -> list[str]:
        only = _only_text(node)
        if only is not None:  # a heading of plain text, most of them
            text = self._text_block(only, block_start=False)
        else:
            inner = self._inline_children(node, depth).replace(_BREAK, " ")
            text = self._paragraph(inner, block_start=False)
        if not text:
            return []
        if not self.markdown or self._in_cell:  # a cell holds one line: the heading's text
            return [text]
        if "#" in text:  # a closing sequence to escape, maybe
            text = _CLOSING_HASHES.sub(_escape_hashes, text)
        return [f"{'#' * level} {text}"]

    def _list(self, node: LexborNode, *, ordered: bool, depth: int) -> list[str]:
        self._listed += 1
        try:
            return self._list_items(node, ordered=ordered, depth=depth)
        finally:
            self._listed -= 1

    def _list_items(self, node: LexborNode, *, ordered: bool, depth: int) -> list[str]:
        indent = self._listed <= MAX_LIST_NESTING
        try:
            number = int(node.attributes.get("start") or 1)
        except ValueError:
            number = 1
        if not 0 <= number <= _MAX_LIST_START:
            number = 1  # no number CommonMark reads, and one of 4,000 digits on every item
        items: list[str] = []
        for child in node.iter():
            tag = child.tag_id
            if tag in _LISTS and items:  # a list directly in a list: belongs to the last item
                nested = self._list(child, ordered=tag == _OL, depth=depth + 1)
                items[-1] += "".join("\n" + _indent(block, "  " * indent) for block in nested)
                continue
            if tag not in _LIST_PARTS and child.css_first("li") is not None:
                items.extend(self._list(child, ordered=ordered, depth=depth + 1))  # <ul><a><li>
                continue
            if tag == _LI:
                blocks = self.blocks(child, depth + 1)
            else:
                blocks = self._block_or_inline(child, depth)
            if not blocks:
                continue
            marker = f"{number}." if ordered else "-"
            number += 1
            items.append(_list_item(marker, blocks, indent=indent))
        return [self._mark("\n".join(items))] if items else []

    def _block_or_inline(self, node: LexborNode, depth: int) -> list[str]:
        tag = node.tag_id
        if tag in _BLOCK_IDS:
            return self._block(node, tag, depth + 1)
        text = self._paragraph(self._inline(node, tag, depth + 1))
        return [text] if text else []

    def _pre(self, node: LexborNode) -> list[str]:
        code = node.text(deep=True).strip("\n")
        if not code.strip():
            return []
        if not self.markdown:
            return [self._mark(code)]
        inner = node.css_first("code")
        classes = node.attributes.get("class") or ""
        if inner is not None:
            classes += " " + (inner.attributes.get("class") or "")
        match = _LANG.search(classes)
        longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
        fence = "`" * max(3, longest + 1)
        return [self._mark(f"{fence}{match.group(1) if match else ''}\n{code}\n{fence}")]

    def _quote(self, node: LexborNode, depth: int) -> list[str]:
        self._quoted += 1
        try:
            blocks = self.blocks(node, depth)
        finally:
            self._quoted -= 1
        if not self.markdown or not blocks or self._quoted >= MAX_QUOTE_NESTING:
            return blocks
        body = "\n\n".join(blocks)
        return ["\n".join(f"> {line}" if line else ">" for line in body.split("\n"))]

    # -- tables ---------------------------------------------------------------------------

    def _rows(self, table: LexborNode) -> list[list[LexborNode]]:
        rows: list[list[LexborNode]] = []
        for part in table.iter():
            tag = part.tag_id
            if tag in _ROW_GROUPS:
                trs = [tr for tr in part.iter() if tr.tag_id == _TR]
            elif tag == _TR:
                trs = [part]
            else:
                continue
            rows.extend([c for c in tr.iter() if c.tag_id in _CELLS] for tr in trs)
        return [row for row in rows if row]

    def _table(self, node: LexborNode, depth: int) -> list[str]:
        rows = self._rows(node)
        columns = max((len(row) for row in rows), default=0)
        # A layout table, not data (css() matches the node itself, hence "> 1").
        if columns < 2 or len(node.css("table")) > 1:
            return [b for row in rows for cell in row for b in self.blocks(cell, depth + 1)]
        caption = node.css_first("caption")
        out = self.blocks(caption, depth + 1) if caption is not None else []
        cells = [[self._cell(cell, depth) for cell in row] for row in rows]
        cells = _filled([row for row in cells if any(row)], columns)
        if not cells:
            return out
        if not self.markdown:
            return [*out, self._mark("\n".join("\t".join(row) for row in cells))]
        lines = [_table_row(cells[0]), _table_row(["---"] * columns)]
        lines.extend(_table_row(row) for row in cells[1:])
        return [*out, self._mark("\n".join(lines))]

    def _mark(self, block: str) -> str:
        """``block`` is a data table, a list or code: the content's own, where it ends too."""
        self._structured.add(block)
        return block

    def _cell(self, cell: LexborNode, depth: int) -> str:
        self._in_cell += 1
        try:
            blocks = self.blocks(cell, depth + 1)
        finally:
            self._in_cell -= 1
        text = " ".join(blocks)
        text = " ".join(text.split())
        return text.replace("|", "\\|") if self.markdown else text

    # -- inline ---------------------------------------------------------------------------

    def _inline_children(self, node: LexborNode, depth: int) -> str:
        if depth > MAX_DEPTH:
            return self._text(node.text(deep=True, separator=" "))
        only = _only_text(node)
        if only is not None:  # a heading's or a link's text, most often
            return self._text(only)
        parts: list[str] = []
        for child in _children(node):
            tag = child.tag_id
            if tag == TEXT_ID:
                parts.append(self._text(child.text_content or ""))
            elif tag == _BR:
                parts.append(_BREAK)
            elif tag not in _SKIP_IDS:
                parts.append(self._inline(child, tag, depth + 1))
        return "".join(parts)

    def _inline(self, node: LexborNode, tag: int, depth: int) -> str:
        """``node`` (whose ``tag_id`` is ``tag``) as inline text."""
        if tag == _IMG:
            return self._image(node)
        if tag in _CODE_IDS:
            return self._code(node.text(deep=True))
        inner = self._inline_children(node, depth)
        if tag in _SPACED_IDS:
            return f" {inner} "
        if not self.markdown:
            return inner
        if tag == _A:
            return self._link(node, inner)
        if tag in _STRONG_IDS:
            return _wrap(inner, "**")
        if tag in _EMPHASIS_IDS:
            return _wrap(inner, "*")
        if tag in _STRIKE_IDS:
            return _wrap(inner, "~~")
        return inner

    def _link(self, node: LexborNode, inner: str) -> str:
        href = node.attributes.get("href")
        if href is None or href.strip().startswith("#"):
            return inner  # a jump within this page (a footnote, a section): only its text
        url = self._spent(self.resolver.resolve(href))
        label = inner.replace(_BREAK, " ").strip()
        if url is None or not label:
            return inner
        lead = " " if inner[:1].isspace() else ""
        trail = " " if inner[-1:].isspace() else ""
        return f"{lead}[{label}]({_url(url)}){trail}"

    def _image(self, node: LexborNode) -> str:
        if not self.markdown:
            return ""
        attrs = node.attributes
        if any((attrs.get(side) or "").strip() in _PIXEL_SIZES for side in ("width", "height")):
            return ""  # a tracking pixel or a spacer
        # Lazy loading puts the picture in a data-* attribute and a placeholder in src.
        source = next((attrs[key] for key in LAZY_SOURCES if attrs.get(key)), attrs.get("src"))
        if self.keep_data_images and (source or "").startswith(_DATA_IMAGE):
            alt = self._escape(" ".join((attrs.get("alt") or "").split()))
            return f"![{alt}]({_url((source or '').strip())})"
        url = self.resolver.resolve(source)  # data: URIs (inline base64) resolve to None
        if url is None or _PLACEHOLDER.search(url.rpartition("/")[2]) is not None:
            return ""
        if self._spent(url) is None:
            return ""
        alt = self._escape(" ".join((attrs.get("alt") or "").split()))
        return f"![{alt}]({_url(url)})"

    def _spent(self, url: str | None) -> str | None:
        """``url``, counted against what the rendering may still write; None past that."""
        if url is None or len(url) > self._url_chars:
            return None
        self._url_chars -= len(url)
        return url

    def _code(self, text: str) -> str:
        text = " ".join(text.split())
        if not text:
            return ""
        if not self.markdown:
            return text
        longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
        ticks = "`" * (longest + 1)
        pad = " " if text.startswith("`") or text.endswith("`") else ""
        return f"{ticks}{pad}{text}{pad}{ticks}"

    def _text(self, text: str) -> str:
        return self._escape(_collapse(text))

    def _escape(self, text: str) -> str:
        if not self.markdown or not _has_special(text):
            return text
        return _ESCAPE.sub(_backslashed, text)


def _inline_syntax(text: str) -> str:
    """A paragraph's links, emphasis and strong runs as CommonMark reads them."""
    if "](" in text and _touches_a_word(text):
        text = _whole_word_links(text)
    if _OPENS in text:
        text = _flank(text)
    return _EMPTY_STRONG.sub(_merge_strong, text) if "**" in text else text


def _canonical(text: str) -> str:
    """The text in one spelling of each character (NFC): ``ü`` written as ``u`` and a combining
    diaeresis is the same ``ü`` a search for it types. Soft hyphens stay, as the page wrote
    them."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def _has_special(text: str) -> bool:
    """Whether ``text`` holds a character ``_ESCAPE`` may escape: most text holds none. A
    search for one character is a memchr in C, ten times faster than a regex's character
    class."""
    return "\\" in text or "`" in text or "*" in text or "_" in text or "]" in text or "<" in text


def _only_text(node: LexborNode) -> str | None:
    """The text of ``node`` when its one child is a text node, else None."""
    first = node.child
    if first is None or first.tag_id != TEXT_ID or first.next is not None:
        return None
    return first.text_content or ""


def _has_elements(node: LexborNode) -> bool:
    """False for the common inline element that holds only text (a link, a bold word): no
    block can be inside it, and no CSS query need look."""
    first = node.child
    return first is not None and (first.tag_id != TEXT_ID or first.next is not None)


def _plain(block: str) -> str:
    """A rendered block without Markdown syntax, enough to judge its length and last word."""
    if "](" in block:
        block = _LINK_TARGET.sub("]", block)
    return " ".join(block.translate(_MARKUP).split())


def _trim_tail(blocks: list[str], structured: Set[str]) -> None:
    """Short lines after the text's last sentence ("Back to all news", "Photo: …", "More on
    this topic") are the page's furniture, not the text's last words. A table, list or code
    block is not such a line: the content chosen holds it, and link lists are gone by now
    (``strip_link_blocks``), so it ends the text as much as in its middle."""
    for _ in range(MAX_TAIL_LINES):
        if len(blocks) < 2 or blocks[-1] in structured:
            return
        last = _plain(blocks[-1])
        if (
            len(last) > MAX_TAIL_CHARS
            or _SENTENCE_END.search(last) is not None
            or CROSS_REFERENCE.match(last) is not None
        ):
            return
        blocks.pop()


def _free_stars(block: str) -> str:
    """The escapes of the block's literal stars that no reader needs, removed: the backslash
    splits the word ("Kund\\*innen") for whoever reads the Markdown as text.

    A star is syntax only if it can open or close emphasis (CommonMark's flanking rules) and
    finds a partner. A star with space on both sides ("2 * 3") can do neither. A literal star
    outside every emphasis run of the block, and the only one there that could open or close,
    has no partner: our own runs pair among themselves before it is reached. Counted over the
    whole block (a list, a table: several inline runs), which only ever counts more stars than
    one run has. Left escaped: a star first on its line (a list item), one touching another
    star (it would join that run), a line of stars ("* * *", a separator, not a rule), and
    every star near code, whose backslashes are its own."""
    if "`" in block:
        return block
    inside = 0  # open emphasis runs of our own
    free: list[tuple[int, bool]] = []  # escaped stars outside every run: backslash, active
    active = 0
    lines: dict[int, tuple[int, bool]] = {}  # a line's start: where its markers end, all stars
    line_start = scanned = 0  # the lines are found as the scan goes: linear in the block
    for match in _STAR_TOKENS.finditer(block):
        token, start, end = match.group(), match.start(), match.end()
        if token[0] == "*":
            opens, closes = _flanking(block[start - 1 : start] or " ", block[end : end + 1] or " ")
            if closes and inside:
                inside -= 1
            elif opens:
                inside += 1
        elif token == "\\*" and not inside:
            before, after = block[start - 1 : start] or " ", block[end : end + 1] or " "
            if "*" in (before, after) or block.startswith("\\*", end):
                continue
            newline = block.rfind("\n", scanned, start)
            if newline >= 0:
                line_start = newline + 1
            scanned = start
            markers_end, only_stars = _line_of(block, line_start, lines)
            if markers_end == start or only_stars:
                continue
            opens, closes = _flanking(before, after)
            active += opens or closes
            free.append((start, opens or closes))
    if active > 1:  # they could pair: only the ones that can do neither go free
        free = [(at, can) for at, can in free if not can]
    for at, _ in reversed(free):
        block = block[:at] + block[at + 1 :]
    return block


def _line_of(block: str, start: int, lines: dict[int, tuple[int, bool]]) -> tuple[int, bool]:
    """For the line of ``block`` that begins at ``start``: where its block markers end ("- ",
    "> ", "1. "), and whether it holds only stars and spaces. Each line is read once however
    many stars it has (``lines`` remembers), so a hostile block of stars stays linear."""
    if start not in lines:
        end = block.find("\n", start)
        line = block[start : end if end >= 0 else len(block)]
        markers = _BLOCK_MARKERS.match(block, start)
        lines[start] = (
            markers.end() if markers else start,
            not line.translate(_STARS_AND_SPACES),
        )
    return lines[start]


def _flanking(before: str, after: str) -> tuple[bool, bool]:
    """Whether a star run between ``before`` and ``after`` is left- and right-flanking (for
    ``*``: can open, can close); a line's start and end count as a space."""
    space_before, space_after = before.isspace(), after.isspace()
    punct_before, punct_after = _is_punctuation(before), _is_punctuation(after)
    left = not space_after and (not punct_after or space_before or punct_before)
    right = not space_before and (not punct_before or space_after or punct_after)
    return left, right


def _is_punctuation(char: str) -> bool:
    return unicodedata.category(char)[0] in "PS"


def _may_start_block(line: str) -> bool:
    """Whether ``line`` begins with a character that can begin what ``_BLOCK_START`` or
    ``_LINE_CONTINUES`` match; most lines begin with a letter, and need no regex at all.
    (``isdigit()`` holds for every character ``\\d`` matches, and a few more.)"""
    first = line[:1]
    return first in _BLOCK_START_CHARS or first.isdigit()


def _escape_marker(match: re.Match[str]) -> str:
    """``# x`` -> ``\\# x``; ``1. x`` -> ``1\\. x`` (what CommonMark needs to not see a block)."""
    marker = match.group()
    return f"{marker[:-1]}\\{marker[-1]}" if marker[0].isdigit() else f"\\{marker}"


def _escape_hashes(match: re.Match[str]) -> str:
    return "\\" + match.group()


def _collapse(text: str) -> str:
    """Whitespace runs made one space. Most text needs nothing, which a few scans for the
    characters ``_SPACES`` takes tell (each a search in C, where ``isprintable()`` looks every
    character up in Unicode's tables)."""
    if (
        "\n" in text
        or "  " in text
        or "\t" in text
        or "\xa0" in text
        or "\r" in text
        or "\x0c" in text
        or "\x0b" in text
    ):
        return _SPACES.sub(" ", text)
    return text


# A link that starts or ends inside a word ("s[elbst gemachten](…)", "[Kund](…)innen"): the
# markup's boundary, not the author's; a reader clicks the whole word. Only letters that go on
# in lower case: "ElaVegan[CLICK HERE](…)" and "[Quelle](…)Abbildung" are two words missing a
# space, "[hoch](…)1" a footnote's number. Labels with brackets or escapes are left alone.
_WORD_THEN_LINK = re.compile(r"(?<![\w\\\]])([^\W\d_]+)\[(?=[^\W\d_])([^\[\]\\]*\]\()")
_LINK_THEN_WORD = re.compile(r"((?<!!)\[[^\[\]\\]*[^\W\d_])(\]\([^()\s]*\))([^\W\d_]+)")


def _join_word_before(match: re.Match[str]) -> str:
    before, rest = match.group(1), match.group(2)
    return f"[{before}{rest}" if rest[0].islower() else match.group()


def _join_word_after(match: re.Match[str]) -> str:
    label, target, after = match.groups()
    return f"{label}{after}{target}" if after[0].islower() else match.group()


def _touches_a_word(text: str) -> bool:
    """Whether a "[" follows a letter or a link's ")" is followed by one: a walk from
    bracket to bracket, where the regexes below would try every position of the text."""
    at = text.find("[")
    while at >= 0:
        if at and text[at - 1].isalpha():
            return True
        at = text.find("[", at + 1)
    at = text.find("](")
    while at >= 0:
        end = text.find(")", at + 2)
        if end < 0:
            return False
        if text[end + 1 : end + 2].isalpha():
            return True
        at = text.find("](", end)
    return False


def _whole_word_links(text: str) -> str:
    text = _WORD_THEN_LINK.sub(_join_word_before, text)
    return _LINK_THEN_WORD.sub(_join_word_after, text)


def _backslashed(match: re.Match[str]) -> str:
    return "\\" + match.group()


def _merge_strong(match: re.Match[str]) -> str:
    return "" if match.group() == "****" else " "


def _wrap(inner: str, mark: str) -> str:
    """``mark`` around ``inner``'s text; the spaces and line breaks at its edges go outside,
    where a marker next to them could neither open nor close (``**Question?  \n**Answer``)."""
    core = inner.strip()
    if _BREAK in core:
        core = _EDGE_BREAKS.sub("", core)
    if not core or all(map(_is_punctuation, core)):  # "**.**": nothing a reader would stress
        return inner
    start = inner.find(core)
    lead, trail = inner[:start], inner[start + len(core) :]
    if _BREAK not in lead:
        lead = " " if lead else ""
    if _BREAK not in trail:
        trail = " " if trail else ""
    return f"{lead}{_OPENS}{mark}{core}{mark}{_CLOSES}{trail}"


def _flank(text: str) -> str:
    """Emphasis markers where CommonMark can read them, ``_OPENS``/``_CLOSES`` removed. A
    closing marker after punctuation and right before a letter cannot close (``**33%**of``,
    ``**Zweck:**Vermeidung``), an opening one after a letter and right before punctuation
    cannot open (``verhelfen**, den**``): the punctuation at that edge goes outside the
    markers (``**33**%of``), the text stays as it was. Runs with emphasis inside are left
    as they are."""
    if _STUCK.search(text) is None:  # most runs have a space or punctuation beside them
        return text.replace(_OPENS, "").replace(_CLOSES, "")
    pieces: list[str] = []
    done = 0
    for match in _RUN.finditer(text):
        start, end = match.span()
        mark, core = match.group(1), match.group(2)
        head, tail = "", ""
        if start and _is_word(text[start - 1]):
            head, core = _split_edge(core, leading=True)
        if end < len(text) and _is_word(text[end]):
            core, tail = _split_edge(core, leading=False)
        if (head or tail) and core:
            pieces.append(f"{text[done:start]}{head}{mark}{core}{mark}{tail}")
            done = end
    pieces.append(text[done:])
    return "".join(pieces).replace(_OPENS, "").replace(_CLOSES, "")


def _split_edge(core: str, *, leading: bool) -> tuple[str, str]:
    """``core`` split into its punctuation and spaces at one edge and the rest: ("", core)
    when that edge has no punctuation."""
    if leading:
        if core.startswith(("[", "![")):  # a link's or image's own bracket
            return "", core
        at = 0
        while at < len(core) and (_is_edge(core[at]) or core[at] == "\\"):
            at += 1
        rest = core[at:].lstrip()
        edge = core[: len(core) - len(rest)]
        return (edge, rest) if edge.strip() else ("", core)
    if core.endswith(")") and _LINK_END.search(core):  # a link's own parenthesis
        return core, ""
    at = len(core)
    while at and _is_edge(core[at - 1]):
        at -= 1
    if at and core[at - 1] == "\\" and (at < 2 or core[at - 2] != "\\"):
        at -= 1  # the escape goes with the character it escapes
    rest = core[:at].rstrip()
    edge = core[len(rest) :]
    return (rest, edge) if edge.strip() else (core, "")


def _is_word(char: str) -> bool:
    return char.isalnum()


def _is_edge(char: str) -> bool:
    """What may move past a marker: punctuation and spaces, not another marker nor an
    escape's backslash (which stays with what it escapes)."""
    return char not in "*~\\\x01\x02" and (char.isspace() or _is_punctuation(char))


def _url(url: str) -> str:
    """A link destination that cannot break out of ``(...)``."""
    if any(ch in url for ch in " ()<>"):
        return (
            url.replace(" ", "%20")
            .replace("(", "%28")
            .replace(")", "%29")
            .replace("<", "%3C")
            .replace(">", "%3E")
        )
    return url


def _indent(block: str, pad: str) -> str:
    return "\n".join(pad + line if line else line for line in block.split("\n"))


def _list_item(marker: str, blocks: list[str], *, indent: bool = True) -> str:
    pad = " " * (len(marker) + 1) * indent
    first, *rest = blocks
    item = f"{marker} {_indent(first, pad)[len(pad) :]}"
    return item + "".join("\n" + _indent(block, pad) for block in rest)


def _filled(rows: list[list[str]], columns: int) -> list[list[str]]:
    """``rows`` filled out with empty cells to ``columns``, when that at most doubles the cells
    of the table; else only the header row (its width is the table's), and the other rows are
    left short, as GFM allows (it fills them in). One row of 10,000 cells over 10,000 rows of
    one cell each made a 140 KB page 300 MB of Markdown and 1.4 GB of memory."""
    if columns * len(rows) <= 2 * sum(len(row) for row in rows):
        return [row + [""] * (columns - len(row)) for row in rows]
    return [row + [""] * (columns - len(row)) for row in rows[:1]] + rows[1:]


def _table_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"
