"""Author, published date and site name: where each comes from, and that hostile input cannot
break or bloat them."""

from __future__ import annotations

import json
from datetime import date, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from taskcrawler.extract import extract
from taskcrawler.extract.authorship import MAX_AUTHOR_CHARS, MAX_SITE_NAME_CHARS, iso_date
from taskcrawler.extract.content import names_boilerplate

URL = "https://news.example.com/2021/03/04/story"


def meta(head: str, body: str = "", url: str = URL) -> dict[str, object]:
    page = f"<html><head>{head}</head><body>{body}<p>{'Words of the story. ' * 20}</p></body>"
    return extract(page.encode(), url=url).metadata


def json_ld(value: object) -> str:
    return f'<script type="application/ld+json">{json.dumps(value)}</script>'


def test_json_ld_article_wins_and_follows_references_into_the_graph() -> None:
    graph = {
        "@graph": [
            {"@type": "WebSite", "@id": "#site", "name": "The Example"},
            {"@type": ["Person"], "@id": "#jane", "name": "Jane Writer"},
            {
                "@type": "NewsArticle",
                "author": {"@id": "#jane"},
                "datePublished": "2021-03-04T09:15:00+01:00",
                "publisher": {"@type": "Organization", "name": "Example Media"},
            },
        ]
    }
    found = meta(json_ld(graph) + '<meta name="author" content="Someone Else">')
    assert found["author"] == "Jane Writer"
    assert found["published_date"] == "2021-03-04T09:15:00+01:00"
    assert found["site_name"] == "The Example"  # the WebSite's name before the publisher's


def test_a_site_named_as_author_is_not_an_author() -> None:
    article = {"@type": "Article", "author": {"@type": "Organization", "name": "Example Media"}}
    found = meta(json_ld(article) + '<meta name="author" content="Jane Writer">')
    assert found["author"] == "Jane Writer"


def test_several_authors_are_joined() -> None:
    article = {"@type": "BlogPosting", "author": [{"name": "A. One"}, {"name": "B. Two"}]}
    assert meta(json_ld(article))["author"] == "A. One, B. Two"


def test_meta_tags_when_there_is_no_json_ld() -> None:
    found = meta(
        '<meta property="og:site_name" content="Daily &amp;#039;Example&amp;#039;">'
        '<meta property="article:published_time" content="2020-02-17T12:31:49Z">'
        '<meta name="author" content="By Kab Niang">'
    )
    assert found["site_name"] == "Daily 'Example'"  # an entity escaped twice reads right
    assert found["published_date"] == "2020-02-17T12:31:49+00:00"
    assert found["author"] == "Kab Niang"


def test_visible_byline_and_time_element() -> None:
    found = meta(
        "",
        '<p class="byline">Veröffentlicht von <a rel="author" href="/a">Chris Jung</a></p>'
        '<span class="entry-date">26. Oktober 2018</span>',
        url="https://example.com/post",
    )
    assert found["author"] == "Chris Jung"
    assert found["published_date"] == "2018-10-26"


def test_a_byline_and_a_date_after_first_matches_that_say_nothing() -> None:
    found = meta(
        "",
        '<span class="author">https://example.com/authors</span>'
        '<div class="post-meta">Filed under News</div>'
        '<p class="byline">By Jane Doe</p>'
        '<time datetime="2019-05-06">May 6</time>',
        url="https://example.com/post",
    )
    assert found["author"] == "Jane Doe"
    assert found["published_date"] == "2019-05-06"


def test_only_the_first_twenty_candidates_are_read() -> None:
    silent = '<span class="date">soon</span>' * 20
    found = meta("", f'{silent}<time datetime="2019-05-06"></time>', url="https://example.com/x")
    assert found["published_date"] is None
    found = meta(
        "", f'{silent[:-30]}<time datetime="2019-05-06"></time>', url="https://example.com/x"
    )
    assert found["published_date"] == "2019-05-06"


def test_date_from_the_url_last_and_nothing_invented() -> None:
    assert meta("")["published_date"] == "2021-03-04"
    found = meta("", url="https://example.com/about")
    assert found["published_date"] is None
    assert found["author"] is None
    assert found["site_name"] is None


def test_placeholders_and_handles_are_not_names() -> None:
    assert meta('<meta name="author" content="No Author">')["author"] is None
    assert meta('<meta name="author" content="@handle">')["author"] is None
    article = {"@type": "Article", "author": "<a href='/x'>Mateusz G</a> @mateuszg"}
    assert meta(json_ld(article))["author"] == "Mateusz G"


def test_iso_date_shapes() -> None:
    assert iso_date("2019-08-02") == "2019-08-02"
    assert iso_date("2019-08-02 10:00") == "2019-08-02T10:00:00"
    assert iso_date("2019-08-02T10:00:00.123+0200") == "2019-08-02T10:00:00+02:00"
    assert iso_date("13.01.2014") == "2014-01-13"
    assert iso_date("20190802") == "2019-08-02"
    assert iso_date("October 5th, 2013") == "2013-10-05"
    assert iso_date("5 de mayo de 2019") == "2019-05-05"
    assert iso_date("2019-02-30") is None
    assert iso_date("1970-01-01T00:00:00Z") is None  # a zero timestamp
    assert iso_date("yesterday") is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_iso_date_is_total_and_always_valid(text: str) -> None:
    found = iso_date(text)
    if found is not None:
        if "T" in found:
            datetime.fromisoformat(found)
        else:
            date.fromisoformat(found)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["@type", "@id", "@graph", "name", "author", "publisher"])
            | st.sampled_from(["datePublished", "dateCreated", "creator"])
            | st.text(max_size=5),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(_JSON)
def test_any_json_ld_gives_bounded_strings_or_none(value: object) -> None:
    found = meta(json_ld(value))
    for key in ("author", "published_date", "site_name"):
        assert found[key] is None or isinstance(found[key], str)
    assert len(found["author"] or "") <= MAX_AUTHOR_CHARS
    assert len(found["site_name"] or "") <= MAX_SITE_NAME_CHARS


def test_a_huge_graph_is_walked_only_so_far() -> None:
    graph = {"@graph": [{"@type": "Thing", "name": str(i)} for i in range(50_000)]}
    graph["@graph"].append({"@type": "Article", "author": "Too Late"})
    assert meta(json_ld(graph))["author"] is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_class_names_are_judged_without_error(names: str) -> None:
    assert names_boilerplate(names) in (True, False)


def test_class_names_judged() -> None:
    for names in ("comments-area", "post-meta", "main-nav", "textwidget", "ad ad-slot"):
        assert names_boilerplate(names), names
    for names in ("editorial-disclosure", "Teasers u-container", "post-ratings", "legend"):
        assert names_boilerplate(names), names
    for names in ("entry-content", "has-sidebar", "widget Blog", "post tag-news", "metadata"):
        assert not names_boilerplate(names), names
    # one teaser is often the article's own lead; a row of them is a list of other pages
    assert not names_boilerplate("article-teaser")
    # the article's furniture: the author's box, the date line, a call to action, embeds,
    # the categories it is filed under, recommendations of other pages
    for names in ("author-box", "post-date", "published-on", "cta", "embed-container"):
        assert names_boilerplate(names), names
    for names in ("entry-categories", "recommended-posts", "updated-time", "timestamp"):
        assert names_boilerplate(names), names
    # words that only look like them
    for names in ("validated", "candidate", "dated-list", "subcategory"):
        assert not names_boilerplate(names), names


def test_remembered_class_names_stay_bounded() -> None:
    for i in range(40_000):
        names_boilerplate(f"unique-{i} comment")
    info = names_boilerplate.cache_info()
    assert info.maxsize is not None
    assert info.currsize <= info.maxsize
