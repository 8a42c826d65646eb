"""A cut-off for nesting depth, applied to the markup before lexbor parses it.

lexbor's tree builder walks the stack of open elements for many start tags (a ``<div>`` first
closes any ``<p>`` in button scope), so a parse costs about depth x tags: 10,000 nested divs took
0.33 s here, 40,000 took 5.6 s, 200,000 some 140 s. Browsers cap the depth as well (Blink at 512).
Past :data:`MAX_NESTING_DEPTH`, start tags are dropped, their text kept, and as many end tags
after them, so the tree stays about that deep and the parse about linear.

The scan is an estimate, not a parser: void elements, elements whose end tag is implied (``p``,
``li``, ``td``…) and self-closing tags in SVG or MathML do not count; comments and the raw text
of ``script``, ``style`` and the like are skipped. It reads each character a bounded number of
times, so a hostile page cannot make the scan itself slow; but it costs a third to a half of an
extraction's time. Pages with at most :data:`SCAN_ABOVE_TAGS` ``<`` skip it: even nested all
the way down they parse in about half a second, and that is 1,028 of the 1,032 pages of the
trafilatura evaluation corpus (none of the 1,032 nests past the cut-off).
"""

from __future__ import annotations

import re

#: Deeper start tags are dropped (Blink's limit: pages deeper than this render flattened there).
MAX_NESTING_DEPTH = 512
#: Pages with no more ``<`` than this are not scanned.
SCAN_ABOVE_TAGS = 10_000

#: A comment's start, or a whole tag: up to its ">" (or the end; a "<" inside is part of it,
#: as for the HTML tokenizer). Linear: each match consumes what it scans.
_TOKEN = re.compile(r"<(?:(!--)|(/?)([A-Za-z][^\s/>]*)[^>]*>?)")
_VOID = frozenset(
    [
        "area",
        "base",
        "basefont",
        "bgsound",
        "br",
        "col",
        "embed",
        "frame",
        "hr",
        "image",
        "img",
        "input",
        "keygen",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
#: Their end tag is implied by a sibling or a parent's end: a run of them does not nest.
_IMPLIED_END = frozenset(
    [
        "body",
        "caption",
        "colgroup",
        "dd",
        "dt",
        "head",
        "html",
        "li",
        "optgroup",
        "option",
        "p",
        "rb",
        "rp",
        "rt",
        "rtc",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
    ]
)
#: Their content is text up to their end tag: a ``<div>`` in a script is no element.
_RAW_TEXT = frozenset(
    [
        "iframe",
        "noembed",
        "noframes",
        "noscript",
        "plaintext",
        "script",
        "style",
        "textarea",
        "title",
        "xmp",
    ]
)
_FOREIGN = frozenset({"svg", "math"})
_RAW_TEXT_END = {name: re.compile(f"</{name}", re.IGNORECASE) for name in _RAW_TEXT}
_NOT_NESTING = _VOID | _IMPLIED_END | _RAW_TEXT


def limit_nesting(
    html: str, max_depth: int = MAX_NESTING_DEPTH, scan_above: int = SCAN_ABOVE_TAGS
) -> str:
    """``html`` with start tags past ``max_depth`` (and their end tags) removed; ``html``
    itself when none is that deep, or when it has no more than ``scan_above`` tags."""
    most = max(scan_above, max_depth)
    # No more "<" than characters: a page that short needs no count (a scan of every byte).
    if len(html) <= most or html.count("<") <= most:
        return html
    cuts = _deep_tags(html, max_depth)
    if not cuts:
        return html
    kept: list[str] = []
    position = 0
    for start, end in cuts:
        kept.append(html[position:start])
        position = end
    kept.append(html[position:])
    return "".join(kept)


def _deep_tags(html: str, max_depth: int) -> list[tuple[int, int]]:
    """The spans of the tags to drop, in order."""
    cuts: list[tuple[int, int]] = []
    depth = dropped = foreign = 0
    skip_to = 0  # the end of a comment or of raw text: tags before it are none
    for match in _TOKEN.finditer(html):
        start = match.start()
        if start < skip_to:
            continue
        comment, slash, name = match.groups()
        if comment:  # a comment runs to "-->", or to the end
            close = html.find("-->", match.end())
            skip_to = len(html) if close < 0 else close + 3
            continue
        name = name.lower()
        if slash:
            if name in _NOT_NESTING:
                continue
            if dropped:
                dropped -= 1
                cuts.append((start, match.end()))
            elif depth:
                depth -= 1
                if foreign and name in _FOREIGN:
                    foreign -= 1
            continue
        if name in _NOT_NESTING:
            if name in _RAW_TEXT:
                text_end = _RAW_TEXT_END[name].search(html, match.end())
                skip_to = len(html) if text_end is None else text_end.start()
            continue
        if foreign and match.group(0).endswith("/>"):
            continue  # self-closing in SVG and MathML (in HTML, "<div/>" is an open div)
        if depth >= max_depth:
            dropped += 1
            cuts.append((start, match.end()))
            continue
        depth += 1
        if name in _FOREIGN:
            foreign += 1
    return cuts
