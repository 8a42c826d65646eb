"""The nesting cut-off (taskcrawler.extract.nesting): hostile depth is flattened, the rest kept."""

import glob

from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser, LexborNode

from taskcrawler.extract import extract
from taskcrawler.extract.nesting import (
    MAX_NESTING_DEPTH,
    SCAN_ABOVE_TAGS,
    _deep_tags,
    limit_nesting,
)

CORPUS = sorted(glob.glob("tests/corpus/*.html"))


def depth(html: str) -> int:
    """The element depth of the tree lexbor builds (iterative: the tree may be deep)."""
    tree = LexborHTMLParser(html)
    deepest = 0
    stack: list[tuple[LexborNode, int]] = [(tree.root, 1)] if tree.root is not None else []
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        child = node.child
        while child is not None:
            if child.tag and not child.tag.startswith("-"):
                stack.append((child, level + 1))
            child = child.next
    return deepest


def words(html: str) -> list[str]:
    body = LexborHTMLParser(html).body
    return (body.text(separator=" ") if body is not None else "").split()


def nested(tag: str, levels: int, inner: str = "deep") -> str:
    return "<html><body>" + f"<{tag}>" * levels + inner + f"</{tag}>" * levels + "</body></html>"


def test_200000_levels_are_cut_to_the_limit_and_keep_their_text() -> None:
    html = nested("div", 200_000)
    cut = limit_nesting(html)
    assert depth(cut) <= MAX_NESTING_DEPTH + 3  # html, body, and the text's parent
    assert depth(cut) >= MAX_NESTING_DEPTH
    assert words(cut) == ["deep"]


def test_the_page_goes_on_after_the_deep_part() -> None:
    html = nested("div", 50_000, "deep") + "<p>after</p><a href='/x'>link</a>"
    cut = limit_nesting(html)
    assert words(cut) == ["deep", "after", "link"]
    result = extract(html.encode(), url="http://x.test/", formats=("metadata", "text", "links"))
    assert [link.url for link in result.links] == ["http://x.test/x"]
    assert "after" in (result.text or "")


def test_pages_with_few_tags_are_not_scanned() -> None:
    html = nested("div", SCAN_ABOVE_TAGS // 2 - 10)
    assert limit_nesting(html) is html


def test_real_pages_are_left_as_they_are() -> None:
    for path in CORPUS:
        with open(path, encoding="utf-8", errors="replace") as page:
            html = page.read()
        assert limit_nesting(html, scan_above=0) is html, path


def test_what_does_not_nest_is_not_counted() -> None:
    """Void elements, implied end tags, SVG's self-closing tags, comments and script text do
    not deepen the tree, so thousands of them cut nothing."""
    many = 3 * MAX_NESTING_DEPTH
    html = "<html><body><div>" + "".join(
        (
            "<br><img src=x><input>" * many,
            "<p>para" * many,
            "<ul>" + "<li>item" * many + "</ul>",
            "<svg>" + "<path d='M0'/>" * many + "</svg>",
            "<!-- <div> -->" * many,
            "<script>" + "'<div>'+" * many + "1</script>",
            "<table>" + "<tr><td>cell" * many + "</table>",
        )
    )
    assert limit_nesting(html, scan_above=0) is html


def test_a_self_closing_div_still_nests_in_html() -> None:
    html = "<html><body>" + "<div/>" * 20_000 + "x"
    assert depth(html[:200_000]) > MAX_NESTING_DEPTH  # what lexbor makes of it
    assert depth(limit_nesting(html)) <= MAX_NESTING_DEPTH + 3


def test_stray_end_tags_do_not_hide_depth() -> None:
    html = "<html><body>" + "</b>" * 15_000 + "<div>" * 20_000 + "x"
    assert depth(limit_nesting(html)) <= MAX_NESTING_DEPTH + 3


def test_unclosed_comments_and_scripts_end_the_scan() -> None:
    for opening in ("<!--", "<script>", "<style>", "<textarea>"):
        html = "<html><body>" + opening + "<div>" * 20_000
        assert limit_nesting(html) is html  # all of it is a comment or text, as lexbor sees it


_tags = st.sampled_from(["div", "span", "section", "b", "ul", "li", "p", "td", "svg", "br", "a"])


# One strategy for the whole test, not one built in every draw: Hypothesis works out each new
# strategy's properties anew.
_PARTS = st.lists(
    st.one_of(
        _tags.map(lambda t: f"<{t}>"),
        _tags.map(lambda t: f"</{t}>"),
        _tags.map(lambda t: f"<{t} a='>'/>"),
        st.sampled_from(["<!--", "-->", "<script>", "</script>", "<", ">", "<!doctype>"]),
        st.text(max_size=5),
    ),
    max_size=60,
)


@st.composite
def _markup(draw: st.DrawFn) -> str:
    """Markup of every shape: nesting, stray and missing end tags, comments, raw text."""
    return "".join(draw(_PARTS))


@settings(max_examples=500, deadline=None)
@given(_markup(), st.integers(min_value=1, max_value=8))
def test_only_whole_tags_are_cut_and_the_cut_is_final(html: str, limit: int) -> None:
    spans = _deep_tags(html, limit)
    position = 0
    for start, end in spans:
        assert position <= start < end <= len(html)
        assert html[start] == "<"
        assert html[end - 1] == ">" or end == len(html)
        position = end
    cut = limit_nesting(html, max_depth=limit, scan_above=0)
    assert len(cut) == len(html) - sum(end - start for start, end in spans)
    assert _deep_tags(cut, limit) == []
