"""Property tests: extraction never raises and always returns the full, storable schema."""

from __future__ import annotations

import re

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskcrawler.extract import FORMATS, extract
from taskcrawler.extract.decode import decode_html

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_TAGS = [
    "html",
    "head",
    "body",
    "title",
    "meta",
    "link",
    "base",
    "a",
    "p",
    "div",
    "main",
    "article",
    "nav",
    "header",
    "footer",
    "form",
    "h1",
    "h2",
    "ul",
    "ol",
    "li",
    "table",
    "tr",
    "td",
    "th",
    "pre",
    "code",
    "b",
    "i",
    "img",
    "br",
    "script",
    "style",
    "svg",
    "blockquote",
    "template",
    "select",
    "area",
    "dl",
    "dt",
]
_ATTRS = [
    "href",
    "src",
    "rel",
    "charset",
    "content",
    "name",
    "property",
    "hreflang",
    "lang",
    "class",
    "id",
    "role",
    "hidden",
    "type",
    "start",
    "alt",
    "http-equiv",
]
_VALUES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "/x",
            "../y",
            "https://e.org/",
            "nofollow",
            "og:title",
            "utf-8",
            "shift_jis",
            "application/ld+json",
            "canonical",
            "icon",
            "alternate",
            "description",
            "twitter:image",
            "comment",
            "main",
            "-1",
            "1e9",
        ]
    ),
)
_attr = st.builds(lambda k, v: f' {k}="{v}"', st.sampled_from(_ATTRS), _VALUES)
_open = st.builds(
    lambda t, a: f"<{t}{''.join(a)}>", st.sampled_from(_TAGS), st.lists(_attr, max_size=3)
)
_close = st.builds(lambda t: f"</{t}>", st.sampled_from(_TAGS))
_chunk = st.one_of(
    _open,
    _close,
    st.text(max_size=20),
    st.sampled_from(
        [
            "{",
            "}",
            '{"@type":"X"}',
            "<!--",
            "-->",
            "&amp;",
            "&#0;",
            "\x00",
            "\ufeff",
            "`",
            "*",
            "|",
            "\n",
            "# ",
        ]
    ),
)
_html = st.lists(_chunk, max_size=60).map("".join)
_EMPTY_LINK = re.compile(r"(?<!!)\[\]\(")
_charsets = st.one_of(
    st.none(),
    st.sampled_from(
        ["utf-8", "latin-1", "shift_jis", "utf-16", "windows-1251", "nonsense", "utf-7", ""]
    ),
)


def _check(body: bytes, charset: str | None) -> None:
    result = extract(body, url="https://example.com/a/b?c=d", charset=charset, formats=FORMATS)
    orjson.dumps(result.metadata)
    assert result.title == result.metadata["title"]
    assert result.metadata["word_count"] >= 0
    for value in (result.markdown, result.text, result.html):
        assert isinstance(value, str)
        value.encode("utf-8")
    for link in result.links:
        assert link.url.startswith(("http://", "https://"))


@SETTINGS
@given(st.binary(max_size=2000), _charsets)
def test_arbitrary_bytes(body: bytes, charset: str | None) -> None:
    _check(body, charset)


@SETTINGS
@given(_html, _charsets, st.sampled_from(["utf-8", "utf-16-le", "cp1252", "shift_jis"]))
def test_arbitrary_html_ish_text(html: str, charset: str | None, encoding: str) -> None:
    _check(html.encode(encoding, "replace"), charset)


@SETTINGS
@given(_html)
def test_cheap_and_full_extractions_agree(html: str) -> None:
    body = html.encode()
    cheap = extract(body, url="https://example.com/")
    full = extract(body, url="https://example.com/", formats=FORMATS)
    assert cheap.metadata == full.metadata


@SETTINGS
@given(st.binary(max_size=500), _charsets)
def test_decode_is_deterministic_and_total(body: bytes, charset: str | None) -> None:
    assert decode_html(body, charset) == decode_html(body, charset)


@SETTINGS
@given(_html)
def test_rendered_content_is_bounded_and_clean(html: str) -> None:
    body = html.encode()
    result = extract(body, url="https://example.com/a/b?c=d", formats=("markdown", "text"))
    for output in (result.markdown or "", result.text or ""):
        # links become absolute (at most this page's URL longer than the href), nothing else
        # grows: the output stays within a small multiple of the input
        assert len(output) <= 8 * len(body) + 200
        assert "\n\n\n" not in output
        assert output == output.strip()
    markdown = result.markdown or ""
    # an image without alt text, `![](src)`, is fine Markdown; a link without a label is not
    assert _EMPTY_LINK.search(markdown) is None
    assert "data:" not in markdown.replace("data: ", "")  # no inline images


def test_many_flagged_blocks_nested_deep_and_wide() -> None:
    block = '<div class="comment share related widget_x">' * 300 + "x" + "</div>" * 300
    body = ("<main>" + "<p>" + "Real text, here. " * 40 + "</p>" + block * 20 + "</main>").encode()
    result = extract(body, url="https://example.com/", formats=FORMATS)
    assert (result.text or "").startswith("Real text, here.")


def test_image_without_alt_is_kept_and_empty_link_is_dropped() -> None:
    body = b'<main><p>Some words of text here. <img src="0"> <a href="/x"></a></p></main>'
    markdown = extract(body, url="https://example.com/a/b", formats=("markdown",)).markdown or ""
    assert "![](https://example.com/a/0)" in markdown
    assert _EMPTY_LINK.search(markdown) is None
