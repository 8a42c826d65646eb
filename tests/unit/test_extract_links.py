"""URL resolution and outgoing links."""

from __future__ import annotations

from urllib.parse import urljoin

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from taskcrawler.extract import Link, extract
from taskcrawler.extract.urls import Resolver

PAGE = "https://example.com/dir/page.html?q=1"


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("/a", "https://example.com/a"),
        ("b/c", "https://example.com/dir/b/c"),
        ("../up", "https://example.com/up"),
        ("./same", "https://example.com/dir/same"),
        ("?x=2", "https://example.com/dir/page.html?x=2"),
        ("#frag", "https://example.com/dir/page.html?q=1"),
        ("//cdn.example.net/x#y", "https://cdn.example.net/x"),
        ("HTTP://Other.example/p", "http://Other.example/p"),
        ("  /padded\n/path  ", "https://example.com/padded/path"),
        ("\\back\\slash", "https://example.com/back/slash"),
        ("mailto:me@example.com", None),
        ("javascript:void(0)", None),
        ("tel:+123", None),
        ("data:text/html,hi", None),
        ("", None),
        ("   ", None),
        ("https://", None),
        ("https://[::1", None),
    ],
)
def test_resolve(href: str, expected: str | None) -> None:
    assert Resolver(PAGE).resolve(href) == expected


def test_base_href_is_used_and_may_be_relative() -> None:
    assert Resolver(PAGE, "/other/").resolve("x") == "https://example.com/other/x"
    assert (
        Resolver(PAGE, "https://cdn.example.net/v/").resolve("x") == "https://cdn.example.net/v/x"
    )
    assert Resolver(PAGE, "javascript:alert(1)").resolve("x") == "https://example.com/dir/x"


@pytest.mark.parametrize(
    ("page", "base", "href", "expected"),
    [
        # the page's own fragment is no part of what its links resolve against
        ("https://example.com/dir/page#top", None, "x", "https://example.com/dir/x"),
        ("https://example.com/dir/page#top", None, "?q", "https://example.com/dir/page?q"),
        ("https://example.com/dir/page#top", None, "#a", "https://example.com/dir/page"),
        ("https://example.com#top", None, "x", "https://example.com/x"),
        ("https://example.com/a?b#c?d", None, "?e", "https://example.com/a?e"),
        ("HTTPS://Example.com/a/b", None, "c", "https://Example.com/a/c"),
        ("https://example.com/a/b#f", "../c/", "d", "https://example.com/c/d"),
        # a page URL that does not split: relative links resolve against nothing of it
        ("http://[::1/broken", None, "x", "http://invalid/x"),
        ("http://[::1/broken", "https://cdn.net/", "x", "http://invalid/x"),
        ("file:///etc/page", None, "https://example.com/", "https://example.com/"),
    ],
)
def test_links_resolve_against_the_page_without_its_fragment(
    page: str, base: str | None, href: str, expected: str
) -> None:
    assert Resolver(page, base).resolve(href) == expected


def test_internal_means_same_host_ignoring_www() -> None:
    resolver = Resolver("https://www.example.com/")
    assert resolver.classify("https://example.com/x") == ("https://example.com/x", True)
    assert resolver.classify("https://EXAMPLE.com:443/") == ("https://EXAMPLE.com:443/", True)
    assert resolver.classify("https://blog.example.com/") == ("https://blog.example.com/", False)
    assert Resolver("https://example.com/", "https://cdn.net/").classify("/a") == (
        "https://cdn.net/a",
        False,
    )


_segment = st.text(alphabet="abcXYZ019-_.~%", min_size=1, max_size=6)
_hrefs = st.one_of(
    st.builds(lambda p: "/" + "/".join(p), st.lists(_segment, max_size=4)),
    st.builds(lambda p: "/".join(p), st.lists(_segment, min_size=1, max_size=4)),
    st.builds(lambda h, p: f"https://{h}.org/{p}", st.sampled_from(["a", "b-c", "x.y"]), _segment),
    st.builds(lambda q: f"?{q}", _segment),
)


@settings(max_examples=300, deadline=None)
@given(_hrefs)
def test_fast_paths_agree_with_urljoin(href: str) -> None:
    assume(href)  # an empty href is no link (urljoin would return the page itself)
    assume(href != "?")  # WHATWG: an empty query; urljoin keeps the page's query instead
    expected = urljoin(PAGE, href).partition("#")[0]
    assert Resolver(PAGE).resolve(href) == expected


def test_links_format() -> None:
    body = b"""<html><head><meta name="robots" content="index"></head><body>
    <nav><a href="/">Home</a></nav>
    <p><a href="/a" rel="Nofollow UGC">  first
       anchor </a> <a href="/a#again">dup</a> <a href="#top">top</a>
    <a href="https://ext.example.org/"><img src="x.png" alt="Logo of ext"></a>
    <a href="mailto:x@example.com">mail</a> <a href="/b" aria-label="Label B"></a>
    <map><area href="/area" alt="region"></map></p></body></html>"""
    result = extract(body, url="https://example.com/p", formats=["links"])
    assert result.links == [
        Link("https://example.com/", "Home", (), internal=True, nofollow=False),
        Link("https://example.com/a", "first anchor", ("nofollow", "ugc"), True, True),
        Link("https://ext.example.org/", "Logo of ext", (), internal=False, nofollow=False),
        Link("https://example.com/b", "Label B", (), internal=True, nofollow=False),
        Link("https://example.com/area", "", (), internal=True, nofollow=False),
    ]
    assert result.metadata["links"] == {
        "internal": 4,
        "external": 1,
        "nofollow": 1,
        "truncated": False,
    }


def test_meta_robots_nofollow_applies_to_every_link() -> None:
    body = b'<meta name="robots" content="noindex, nofollow"><a href="/a">a</a><a href="/b">b</a>'
    result = extract(body, url="https://example.com/", formats=["links"])
    assert all(link.nofollow for link in result.links)
    assert result.metadata["links"]["nofollow"] == 2


def test_link_counts_are_the_same_with_and_without_the_links_format() -> None:
    body = b"""<a href="/a">a</a><a href="/a">again</a><a href="a">rel</a><a href="//x.org/">x</a>
    <a rel="nofollow" href="https://x.org/y">y</a><a href="javascript:0">js</a>"""
    cheap = extract(body, url="https://example.com/", formats=["metadata"])
    full = extract(body, url="https://example.com/", formats=["links"])
    assert cheap.metadata["links"] == full.metadata["links"]
    assert cheap.metadata["links"] == {
        "internal": 1,
        "external": 2,
        "nofollow": 1,
        "truncated": False,
    }
    assert len(full.links) == 3


def test_link_is_frozen() -> None:
    link = Link("https://e.com/", "t", (), internal=True, nofollow=False)
    with pytest.raises(AttributeError):
        link.url = "x"  # type: ignore[misc]


def test_image_map_areas_keep_their_place_in_document_order() -> None:
    body = b"""<html><body><map><area href="/first"></map>
    <p><a href="/second">two</a><a href="/first">again</a></p></body></html>"""
    result = extract(body, url="https://example.com/", formats=["links"])
    assert [link.url for link in result.links] == [
        "https://example.com/first",
        "https://example.com/second",
    ]
    assert result.metadata["links"]["internal"] == 2


def test_link_targets_are_the_links_without_their_texts() -> None:
    body = b"""<meta name="robots" content="index"><a href="/a">Alpha</a>
    <a rel="nofollow sponsored" href="https://x.org/y"><img alt="Y"></a>
    <a href="/b" title="B"></a>"""
    full = extract(body, url="https://example.com/", formats=["links"])
    bare = extract(body, url="https://example.com/", formats=["link_targets"])
    assert [link.text for link in full.links] == ["Alpha", "Y", "B"]
    assert [link.text for link in bare.links] == ["", "", ""]
    assert [(link.url, link.rel, link.internal, link.nofollow) for link in bare.links] == [
        (link.url, link.rel, link.internal, link.nofollow) for link in full.links
    ]
    assert bare.metadata["links"] == full.metadata["links"]
