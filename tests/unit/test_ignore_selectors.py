"""Ignore selectors: the accepted subset of CSS, every refusal naming the item, removal that
agrees with lexbor's own matching, and no selector that makes a page slow to read."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from taskcrawler.domain.selectors import (
    MAX_IGNORE_SELECTORS,
    IgnoreSelector,
    InvalidSelector,
    SelectorGroup,
    parse_ignore_selectors,
)
from taskcrawler.extract import extract
from taskcrawler.extract.ignore import remove_ignored


def parse(*values: str) -> tuple[IgnoreSelector, ...]:
    return parse_ignore_selectors(list(values))


# --- the grammar ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        (".ad", ".ad"),
        ("#visits", "#visits"),
        ("span.date", "span.date"),
        ("*", "*"),
        ("time[datetime]", "time[datetime]"),
        ("[data-ad = banner]", '[data-ad="banner"]'),
        ("div[class*='ad-']", 'div[class*="ad-"]'),
        ('[id^="promo"][id$=x]', '[id^="promo"][id$="x"]'),
        ("a[rel~=sponsored], a[lang|=en]", 'a[rel~="sponsored"]'),
        ("  main   .stamp  ", "main .stamp"),
        ("main>.stamp", "main > .stamp"),
        ("h2 + p", "h2 + p"),
        ("été .prix", "été .prix"),
        ("--x", "--x"),
        ('[title="a, b > c"]', '[title="a, b > c"]'),
    ],
)
def test_accepted_selectors_are_written_canonically(written: str, canonical: str) -> None:
    assert parse(written)[0].css == canonical


def test_a_selector_is_split_at_its_descendant_combinators() -> None:
    (selector,) = parse("main .card > .meta + time span")
    assert selector.groups == (
        SelectorGroup("main", 0),
        SelectorGroup(".card > .meta + time", 1),
        SelectorGroup("span", 0),
    )
    assert str(selector) == "main .card > .meta + time span"


def test_comma_lists_count_each_part_and_duplicates_go() -> None:
    assert [s.css for s in parse(".a, .b", ".b", " .a ")] == [".a", ".b"]
    with pytest.raises(InvalidSelector, match="each part of a comma-separated one counted") as e:
        parse(", ".join(f".c{i}" for i in range(MAX_IGNORE_SELECTORS + 1)))
    assert e.value.field == "ignore_selectors"


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ("time", "ignore_selectors", "a list of CSS selectors"),
        ([".a"] * (MAX_IGNORE_SELECTORS + 1), "ignore_selectors", "at most 20"),
        ([".a", ""], "ignore_selectors[1]", "non-empty"),
        ([".a", "   "], "ignore_selectors[1]", "non-empty"),
        ([3], "ignore_selectors[0]", "non-empty CSS selector"),
        (["." + "a" * 200], "ignore_selectors[0]", "at most 200 characters"),
        (["li:nth-child(2)"], "ignore_selectors[0]", "pseudo-classes"),
        (["div:has(p)"], "ignore_selectors[0]", "pseudo-classes"),
        (["p::before"], "ignore_selectors[0]", "pseudo-classes"),
        (["h2 ~ p"], "ignore_selectors[0]", "~ combinator"),
        (["a[href*=ad i]"], "ignore_selectors[0]", "flags"),
        (["[x=" + "a" * 65 + "]"], "ignore_selectors[0]", "at most 64"),
        (["[x='unterminated]"], "ignore_selectors[0]", "unterminated"),
        (["[x='a\\'b']"], "ignore_selectors[0]", "backslashes"),
        (["[x=12]"], "ignore_selectors[0]", "identifier or a quoted string"),
        (["[x"], "ignore_selectors[0]", "expected \\] or one of"),
        (["[x=y"], "ignore_selectors[0]", "expected \\] after"),
        (["[|x]"], "ignore_selectors[0]", "namespaces"),
        (["svg|rect"], "ignore_selectors[0]", "namespaces"),
        (["\\31 23"], "ignore_selectors[0]", "escapes"),
        (["a\\b"], "ignore_selectors[0]", "escapes"),
        (["#"], "ignore_selectors[0]", "an id after #"),
        (["div."], "ignore_selectors[0]", "class name after"),
        (["> p"], "ignore_selectors[0]", "expected a selector"),
        (["p >"], "ignore_selectors[0]", "expected a selector"),
        (["a,,b"], "ignore_selectors[0]", "expected a selector"),
        (["a *b"], "ignore_selectors[0]", "unexpected 'b'"),
        (["a a a a a a a a a"], "ignore_selectors[0]", "more than 8"),
        (["p { color: red }"], "ignore_selectors[0]", "unexpected '{'"),
    ],
)
def test_refusals_name_the_item_and_say_why(values: Any, field: str, message: str) -> None:
    with pytest.raises(InvalidSelector, match=message) as caught:
        parse_ignore_selectors(values)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


def test_a_refusal_says_where() -> None:
    with pytest.raises(InvalidSelector) as caught:
        parse_ignore_selectors([".ok", "main  .x:hover"])
    assert caught.value.message.endswith("(at character 9 of 'main  .x:hover')")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_text_is_accepted_or_refused_cleanly(text: str) -> None:
    try:
        parsed = parse_ignore_selectors([text])
    except InvalidSelector:
        return
    tree = LexborHTMLParser("<p>x</p>")
    for selector in parsed:  # lexbor reads whatever was accepted
        for group in selector.groups:
            tree.css(group.css)
        tree.css(selector.css)


# --- removal agrees with lexbor ---------------------------------------------------------------

_TAGS = ("div", "section", "span", "b")  # tags the HTML parser never moves around
_CLASSES = ("a", "b")
_MAX_DEPTH = 3

# Every strategy is built once, here: Hypothesis works out a new strategy's properties when it is
# first drawn from, and with one built in every draw that cost several times the draws (and
# ten times the removals checked). The values drawn are the same.
_TAG = st.sampled_from(_TAGS)
_CLASS_LISTS = st.lists(st.sampled_from(_CLASSES), max_size=2, unique=True)
_DATA_K = st.sampled_from(["1", "12", "2"])


@st.composite
def _element(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(_TAG)
    classes = draw(_CLASS_LISTS)
    attrs = f' class="{" ".join(classes)}"' if classes else ""
    if draw(st.booleans()):
        attrs += f' data-k="{draw(_DATA_K)}"'
    children = "" if depth >= _MAX_DEPTH else "".join(draw(_CHILDREN[depth + 1]))
    return f"<{tag}{attrs}>{tag[0]}{children}</{tag}>"


_CHILDREN = {depth: st.lists(_element(depth), max_size=3) for depth in range(1, _MAX_DEPTH + 1)}
_HEAD = st.sampled_from(["", "*", *_TAGS])
_PARTS = st.lists(
    st.sampled_from([".a", ".b", "[data-k]", '[data-k="1"]', '[data-k^="1"]']), max_size=2
)


@st.composite
def _compound(draw: st.DrawFn) -> str:
    head = draw(_HEAD)
    parts = draw(_PARTS)
    return head + "".join(parts) or draw(_TAG)


_COMPOUNDS = st.lists(_compound(), min_size=1, max_size=4)
_COMBINATOR = st.sampled_from([" ", " > ", " + "])


@st.composite
def _selector(draw: st.DrawFn) -> str:
    compounds = draw(_COMPOUNDS)
    out = compounds[0]
    for compound in compounds[1:]:
        out += draw(_COMBINATOR) + compound
    return out


def _removed_by_lexbor(html: str, selectors: tuple[IgnoreSelector, ...]) -> str:
    """What removing lexbor's own matches of the whole selectors leaves (small pages only:
    this is the matching that backtracks)."""
    tree = LexborHTMLParser(html)
    assert tree.root is not None
    seen: set[int] = set()
    nodes = []
    for node in tree.root.css(", ".join(selector.css for selector in selectors)):
        if node.mem_id not in seen and node.tag not in ("html", "head", "body"):
            seen.add(node.mem_id)
            nodes.append(node)
    for node in reversed(nodes):
        node.decompose()
    return str(tree.html)


@settings(max_examples=300, deadline=None)
@given(
    body=st.lists(_element(), min_size=1, max_size=4).map("".join),
    written=st.lists(_selector(), min_size=1, max_size=3),
)
def test_removal_matches_what_lexbor_matches(body: str, written: list[str]) -> None:
    html = f"<html><head></head><body>{body}</body></html>"
    selectors = parse_ignore_selectors(written)
    tree = LexborHTMLParser(html)
    remove_ignored(tree, selectors)
    assert tree.html == _removed_by_lexbor(html, selectors)


def test_selectors_match_the_page_as_parsed_not_as_shrunk() -> None:
    """``.a + .b`` still matches after ``.a`` is removed too: order does not matter."""
    html = '<html><body><i class="a">1</i><i class="b">2</i><i class="c">3</i></body></html>'
    for order in ([".a", ".a + .b"], [".a + .b", ".a"], ["body .a", ".a + .b"]):
        tree = LexborHTMLParser(html)
        remove_ignored(tree, parse(*order))
        assert tree.body is not None
        assert tree.body.text() == "3", order


def test_selectors_travel_to_a_child_process() -> None:
    """Big pages are extracted in a child process: the selectors go there pickled."""
    selectors = parse("main .a > b", "#x")
    assert pickle.loads(pickle.dumps(selectors)) == selectors


def test_html_head_and_body_stay() -> None:
    tree = LexborHTMLParser("<html><head><title>T</title></head><body><p>x</p></body></html>")
    remove_ignored(tree, parse("html", "body", "head", "html body"))
    assert tree.html == "<html><head><title>T</title></head><body><p>x</p></body></html>"
    remove_ignored(tree, parse("html p", "head title"))
    assert tree.html == "<html><head></head><body></body></html>"


# --- nothing makes a page slow ----------------------------------------------------------------

DEPTH = 3000


def _nested(depth: int) -> LexborHTMLParser:
    return LexborHTMLParser("<html><body>" + "<div>" * depth + "x" + "</div>" * depth)


def test_descendant_chains_cost_one_walk_on_a_deep_page() -> None:
    """lexbor's own matching of ``p div div div div`` backtracks over every choice of
    ancestors: 236 s for 300 nested divs here, and 3,000 would never finish. The test holds no
    clock: a backtracking matcher would simply outlive its deadline."""
    tree = _nested(DEPTH)
    remove_ignored(tree, parse("p div div div div", "section div div div div div div div"))
    assert tree.html is not None and tree.html.count("<div>") == DEPTH  # nothing matched

    tree = _nested(DEPTH)
    remove_ignored(tree, parse("div div div div div"))
    # The fifth div and its subtree go: four stay, the outermost matches' ancestors.
    assert tree.html == "<html><head></head><body>" + "<div>" * 4 + "</div>" * 4 + "</body></html>"


def test_a_mix_of_child_and_descendant_combinators_on_a_deep_page() -> None:
    tree = _nested(DEPTH)
    remove_ignored(tree, parse("body > div div > div > div div"))
    # body > div (1), any deeper div (2), then two children (3, 4), then any deeper div (5).
    assert tree.html == "<html><head></head><body>" + "<div>" * 4 + "</div>" * 4 + "</body></html>"


# --- extraction -------------------------------------------------------------------------------

PAGE = b"""<html><head><title>Prices</title>
<meta name="description" content="Our prices"></head>
<body><main><h1>Prices</h1>
<p>Widget: $19.99 <span class="stamp">as of 10:42:07</span></p>
<div class="promo">Buy <a href="/ad/7">now</a></div>
<p>Gadget: $5.00</p><p id="visits">Visitor 10234</p></main></body></html>"""


def test_extraction_reads_the_page_without_the_ignored_parts() -> None:
    ignore = parse(".stamp", "div.promo", "#visits")
    result = extract(
        PAGE, url="https://shop.test/", formats=("markdown", "text", "html", "links"), ignore=ignore
    )
    plain = extract(PAGE, url="https://shop.test/", formats=("markdown", "text"))
    assert result.text == "Prices\n\nWidget: $19.99\n\nGadget: $5.00"
    assert result.markdown is not None and "10:42" not in result.markdown
    assert "Visitor" not in result.markdown and "Buy" not in result.markdown
    assert plain.text is not None and "10:42:07" in plain.text and "Visitor 10234" in plain.text
    assert result.links == [] and result.metadata["links"]["internal"] == 0  # the ad link went
    assert result.metadata["word_count"] < plain.metadata["word_count"]
    assert result.metadata["content_hash"] != plain.metadata["content_hash"]
    assert result.html is not None and "10:42:07" in result.html  # html: the page as fetched
    assert result.title == "Prices"
