"""The main text, measured without splitting it where it can be, is what splitting it gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from taskcrawler.extract.content import _is_collapsed, collapsed_text

# Every kind of whitespace str.split() knows, and some it does not, with words around them.
_PIECES = st.sampled_from(
    [
        *(" ", "  ", "\t", "\n", "\n    ", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f"),
        *("\xa0", "\u2003", "\u3000", "\u200b"),
        *("word", "déjà", "日本語", "a", "-", "&amp;", "&nbsp;"),
    ]
)
_TAGS = st.sampled_from(["p", "span", "b", "div", "li", "h2", "pre", "td"])


# Built once, not in every draw: Hypothesis works out each new strategy's properties anew.
_COUNTS = st.integers(0, 5)
_RUNS = st.lists(_PIECES, max_size=6)
_MAX_DEPTH = 3


@st.composite
def _markup(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(_COUNTS)):
        if depth < _MAX_DEPTH and draw(st.booleans()):
            tag = draw(_TAGS)
            parts.append(f"<{tag}>{draw(_DEEPER[depth + 1])}</{tag}>")
        else:
            parts.append("".join(draw(_RUNS)))
    return "".join(parts)


_DEEPER = {depth: _markup(depth) for depth in range(1, _MAX_DEPTH + 1)}


def _split_reference(html: str) -> tuple[str, int]:
    root = LexborHTMLParser(f"<body>{html}</body>").body
    assert root is not None
    words = root.text(deep=True, separator=" ").split()
    return " ".join(words), len(words)


def _collapsed(html: str) -> tuple[str, int]:
    root = LexborHTMLParser(f"<body>{html}</body>").body
    assert root is not None
    return collapsed_text(root)


@settings(max_examples=500, deadline=None)
@given(_markup())
def test_collapsed_text_is_the_split_text_joined(html: str) -> None:
    assert _collapsed(html) == _split_reference(html)


def test_plain_paragraphs_come_back_as_they_are() -> None:
    html = "<h2>Queue 1</h2>\n<p>Lease worker fetch.</p>\n<p>Retry with jitter.</p>\n"
    assert _collapsed(html) == ("Queue 1 Lease worker fetch. Retry with jitter.", 8)


def test_only_single_spaces_inside_and_none_at_the_ends_is_collapsed() -> None:
    assert _is_collapsed("a b c") and _is_collapsed("")
    for text in ("a  b", " a", "a ", "a\nb", "a\tb", "a\x1cb", "a\xa0b", "日本 語"):
        assert not _is_collapsed(text), text


def test_indented_text_and_no_break_spaces_are_collapsed() -> None:
    html = "<p>\n   indented\n   text\xa0here </p><p>\x1cand\u3000more</p>"
    assert _collapsed(html) == ("indented text here and more", 5)


def test_no_text_is_no_words() -> None:
    assert _collapsed("<p> \n </p><div></div>") == ("", 0)
