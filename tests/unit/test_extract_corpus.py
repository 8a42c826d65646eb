"""Extraction on a corpus of real-world-shaped pages kept in tests/corpus/."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest

from taskcrawler.extract import FORMATS, Extraction, extract
from taskcrawler.extract.links import MAX_LINKS_PER_PAGE
from taskcrawler.extract.metadata import MAX_HEADINGS

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
NEWS_URL = "https://news.example.com/world/2024/03/river-valley-plan"
SCHEMA_KEYS = {
    "title",
    "description",
    "canonical_url",
    "language",
    "open_graph",
    "twitter",
    "json_ld",
    "json_ld_errors",
    "hreflang",
    "favicon",
    "headings",
    "word_count",
    "content_hash",
    "links",
    "author",
    "published_date",
    "site_name",
}


def load(name: str, *, url: str = NEWS_URL, charset: str | None = None, **kw: object) -> Extraction:
    return extract((CORPUS / name).read_bytes(), url=url, charset=charset, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.html")), ids=lambda p: p.name)
def test_every_corpus_page_has_the_whole_schema_and_is_storable(path: Path) -> None:
    result = extract(path.read_bytes(), url=NEWS_URL, formats=FORMATS)
    assert set(result.metadata) == SCHEMA_KEYS
    assert set(result.metadata["links"]) == {"internal", "external", "nofollow", "truncated"}
    assert set(result.metadata["headings"]) == {"h1", "h2"}
    assert result.metadata["content_hash"].startswith("sha256:")
    assert result.title == result.metadata["title"]
    orjson.dumps(result.metadata)  # what the worker stores must serialize
    assert isinstance(result.markdown, str)
    assert isinstance(result.text, str)
    assert isinstance(result.html, str)
    assert "\ufffd" not in (result.text or ""), "a corpus page was decoded wrongly"


def test_news_article_metadata() -> None:
    meta = load("news_article.html").metadata
    assert meta["title"] == (
        "River valley plan: council says bridge repairs will cost more | The Daily Example"
    )
    assert meta["description"].startswith("The council says its plan")
    assert meta["canonical_url"] == NEWS_URL
    assert meta["language"] == "en-GB"
    assert meta["open_graph"]["type"] == "article"
    assert meta["open_graph"]["image"] == "https://news.example.com/img/2024/03/bridge-1200.jpg"
    assert "published_time" not in meta["open_graph"]  # article:* is not og:*
    assert meta["twitter"]["card"] == "summary_large_image"
    assert meta["hreflang"]["fr"] == "https://news.example.com/fr/monde/2024/03/plan-vallee"
    assert set(meta["hreflang"]) == {"en-gb", "fr", "x-default"}
    assert meta["favicon"] == "https://news.example.com/favicon-32.png"
    assert [item["@type"] for item in meta["json_ld"]] == ["NewsArticle", "BreadcrumbList"]
    assert meta["json_ld_errors"] == []
    assert meta["headings"] == {
        "h1": ["River valley plan will cost more, council says"],
        "h2": ["What happens next", "Key dates"],
    }
    assert meta["links"]["internal"] > 100
    assert meta["links"]["nofollow"] >= 1


def test_news_article_main_content_has_no_boilerplate() -> None:
    result = load("news_article.html", formats=["markdown", "text"])
    text = result.text or ""
    assert text.startswith("River valley plan will cost more, council says")
    assert "the council leader said" in text
    for boilerplate in (
        "We use cookies",
        "Skip to content",
        "Most read",
        "Related stories",
        "comments",
        "Get the morning briefing",
        "Share on X",
        "Advertisement",
        "2024 The Daily Example",
        "window.__cfg",
        "margin:",
        "Topics:",
    ):
        assert boilerplate not in text, boilerplate
    assert 400 < result.metadata["word_count"] < 900
    # word_count is measured on the raw main text; the text format adds block structure, and
    # the headline when it sits above the content rather than in it
    headline_words = len(result.metadata["headings"]["h1"][0].split())
    words = result.metadata["word_count"]
    assert min(abs(words - len(text.split())), abs(words + headline_words - len(text.split()))) <= 5


def test_content_hash_is_stable_and_tracks_the_main_text_only() -> None:
    body = (CORPUS / "news_article.html").read_bytes()
    first = extract(body, url=NEWS_URL).metadata["content_hash"]
    assert extract(body, url=NEWS_URL, formats=FORMATS).metadata["content_hash"] == first
    # Boilerplate changes (a new "most read" list, another ad config) do not change it ...
    noisy = body.replace(b"Most read", b"Most popular").replace(b"window.__cfg1 ", b"window.x ")
    assert extract(noisy, url=NEWS_URL).metadata["content_hash"] == first
    # ... but an edit to the article does.
    edited = body.replace(b"We will not cut corners", b"We will cut corners")
    assert extract(edited, url=NEWS_URL).metadata["content_hash"] != first


def test_content_hash_is_sha256_of_the_normalized_main_text() -> None:
    html = b"<html><body><main><p>Hello   \n world</p></main></body></html>"
    meta = extract(html, url="https://example.com/").metadata
    assert meta["content_hash"] == "sha256:" + hashlib.sha256(b"Hello world").hexdigest()
    assert meta["word_count"] == 2


def test_malformed_markup() -> None:
    result = load("malformed.html", url="https://x.example/dir/", formats=["markdown"])
    assert result.title == "Malformed page"
    assert result.metadata["description"] == "unquoted-description"
    assert result.metadata["headings"]["h1"] == ["Welcome to my home page"]
    markdown = result.markdown or ""
    assert "[unquoted link](https://x.example/dir/page2.html)" in markdown
    assert "| cell one | cell two |" in markdown
    assert "- item one\n- item two" in markdown
    assert "hidden by the comment" not in markdown


def test_page_without_head() -> None:
    meta = load("no_head.html", url="https://example.com/a/b").metadata
    assert meta["title"] == "A page without a head"  # falls back to og:title
    assert meta["headings"]["h2"] == ["Only a subheading"]
    assert meta["links"] == {"internal": 1, "external": 1, "nofollow": 0, "truncated": False}
    assert meta["word_count"] > 10


def test_many_json_ld_blocks_one_broken() -> None:
    meta = load("jsonld_many.html").metadata
    types = [item.get("@type") for item in meta["json_ld"]]
    assert types == ["Product", "Organization", "WebSite", "BreadcrumbList", None, "Review"]
    assert meta["json_ld"][4] == {"@graph": [{"@type": "WebPage", "@id": "#page"}]}
    review = meta["json_ld"][5]
    assert review["reviewBody"] == "Sehr gut\nbequem"  # raw newline in a string: tolerated
    assert isinstance(review["id"], float)  # beyond 64 bits: kept storable
    assert len(meta["json_ld_errors"]) == 1
    assert meta["json_ld_errors"][0]["index"] == 3
    assert meta["language"] == "de"


def test_base_href_and_hreflang() -> None:
    result = load("base_href_hreflang.html", url="https://example.com/docs/", formats=["links"])
    meta = result.metadata
    assert meta["canonical_url"] == "https://static.example.net/docs/v2/index.html"
    assert meta["hreflang"] == {
        "en": "https://static.example.net/en/docs/",
        "ja": "https://example.com/ja/docs/",
        "pt-BR": "https://static.example.net/docs/pt-br/",
        "x-default": "https://example.com/docs/",
    }
    assert meta["favicon"] == "https://static.example.net/docs/v2/img/favicon.ico"
    urls = {link.url: link for link in result.links}
    assert set(urls) == {
        "https://static.example.net/docs/v2/guide/intro.html",
        "https://static.example.net/docs/v1/changes.html",
        "https://static.example.net/docs/v2/?page=2",
        "https://example.com/blog/",
        "https://www.example.com/about",
    }
    # internal means: same site as the page (example.com, www. ignored), not as <base>
    assert urls["https://example.com/blog/"].internal
    assert urls["https://www.example.com/about"].internal
    assert not urls["https://static.example.net/docs/v1/changes.html"].internal
    assert meta["links"] == {"internal": 2, "external": 3, "nofollow": 0, "truncated": False}


@pytest.mark.parametrize(
    ("name", "charset", "encoding", "title", "phrase"),
    [
        ("windows1251_meta.html", None, "cp1251", "Новости дня", "прошёл снег"),
        ("shift_jis.html", None, "cp932", "東京の天気予報", "最高気温は十八度"),
        ("utf8_declared_latin1.html", None, "cp1252", "Café crème à Paris", "très chaud"),
        ("utf8_declared_latin1.html", "utf-8", "cp1252", "Café crème à Paris", "À bientôt"),
        ("bom_utf8.html", None, "utf-8", "Grüße aus Köln", "großartig"),
        ("bom_utf8.html", "iso-8859-1", "utf-8", "Grüße aus Köln", "Schöne Grüße"),
        ("utf16le_bom.html", None, "utf-16-le", "Ελληνικά κείμενα", "Καλημέρα κόσμε"),
        ("no_charset_cp1252.html", None, "cp1252", "Résumé \u2013 \u201csmart\u201d", "señor"),
        ("japanese_utf8.html", None, "utf-8", "日本語のブログ記事", "嵐山"),
        ("arabic_rtl.html", None, "utf-8", "الصفحة الرئيسية - أخبار اليوم", "مكتبة عامة"),
        ("windows1251_meta.html", "windows-1251", "cp1251", "Новости дня", "Москве"),
    ],
)
def test_encodings(name: str, charset: str | None, encoding: str, title: str, phrase: str) -> None:
    result = load(name, charset=charset, formats=["text"])
    assert result.encoding == encoding
    assert result.title == title
    assert phrase in (result.text or "")


def test_header_charset_wins_over_meta() -> None:
    body = '<meta charset="utf-8"><title>Привет</title>'.encode("koi8-r")
    assert extract(body, url="https://e.com/", charset="koi8-r").title == "Привет"


def test_non_latin_word_counts() -> None:
    ja = load("japanese_utf8.html").metadata
    assert ja["language"] == "ja"
    assert ja["headings"]["h2"] == ["おすすめの場所"]
    assert ja["word_count"] > 40  # CJK characters count one each, not one per sentence
    ar = load("arabic_rtl.html", formats=["text"])
    assert ar.metadata["language"] == "ar"
    assert ar.metadata["word_count"] == 5 + 12 + 9  # h1 and two sentences, not the nav
    assert "جميع الحقوق محفوظة" not in (ar.text or "")  # the footer
    ru = load("windows1251_meta.html").metadata
    assert ru["word_count"] == 2 + 11


def test_aspnet_form_wrapping_the_whole_page_is_not_removed() -> None:
    result = load("aspnet_form.html", url="https://corp.example.com/report.aspx", formats=["text"])
    text = result.text or ""
    assert "Revenue grew by twelve percent" in text
    assert "Shareholders will vote" in text
    assert "Contact" not in text  # the flagged sidebar block inside it is removed
    assert result.metadata["word_count"] > 30


def test_huge_page_generated_at_test_time() -> None:
    paragraph = "<p>" + "word " * 40 + '<a href="/p/{i}">more</a></p>\n'
    rows = "".join(paragraph.replace("{i}", str(i)) for i in range(20_000))
    body = f"<html><head><title>Huge</title></head><body><main>{rows}</main></body></html>"
    data = body.encode()
    assert len(data) > 1_000_000
    result = extract(data, url="https://example.com/", formats=FORMATS)
    assert result.title == "Huge"
    assert result.metadata["word_count"] == 20_000 * 41
    assert result.metadata["links"]["internal"] == 20_000
    assert result.metadata["links"]["truncated"] is True
    assert [link.url for link in result.links] == [
        f"https://example.com/p/{i}" for i in range(MAX_LINKS_PER_PAGE)
    ]
    assert (result.markdown or "").count("\n\n") == 20_000 - 1


def test_deeply_nested_markup_does_not_exhaust_the_stack() -> None:
    body = ("<div>" * 50_000 + "deep text" + "</div>" * 50_000).encode()
    result = extract(body, url="https://example.com/", formats=FORMATS)
    assert "deep text" in (result.markdown or "")
    assert "deep text" in (result.text or "")
    assert result.metadata["word_count"] == 2


def test_metadata_only_leaves_the_other_formats_empty() -> None:
    result = load("news_article.html")
    assert result.markdown is None
    assert result.text is None
    assert result.html is None
    assert result.links == []
    assert result.metadata["links"]["internal"] > 0  # counts are always there


def test_html_format_is_the_decoded_page() -> None:
    raw = (CORPUS / "windows1251_meta.html").read_bytes()
    result = extract(raw, url="https://e.com/", formats=["html"])
    assert result.html == raw.decode("cp1251")


def test_unknown_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown formats"):
        extract(b"<p>x</p>", url="https://e.com/", formats=["pdf"])


def test_worker_call_shape_still_works() -> None:
    result = extract(b"<title> A \n title </title>", url="https://e.com/", charset=None)
    assert result.title == "A title"
    assert result.metadata["title"] == "A title"


def test_json_ld_type_is_matched_without_regard_to_case_and_other_scripts_are_ignored() -> None:
    body = b"""<html><head>
    <script type="Application/LD+JSON">{"@type": "A"}</script>
    <script type="application/json">{"@type": "not linked data"}</script>
    <script>var x = {"@type": "code"};</script>
    <script type="application/ld+json">[{"@type": "B"}, {"@type": "C"}]</script>
    </head><body><p>text</p></body></html>"""
    meta = extract(body, url="https://example.com/").metadata
    assert [item["@type"] for item in meta["json_ld"]] == ["A", "B", "C"]


def test_headings_keep_document_order_up_to_the_cap() -> None:
    h2s = "".join(f"<h2>Section {i}</h2><p>x</p>" for i in range(MAX_HEADINGS + 20))
    body = f"<html><body><h2>  </h2>{h2s}<h1>Late\n title</h1></body></html>".encode()
    headings = extract(body, url="https://example.com/").metadata["headings"]
    assert headings["h1"] == ["Late title"]
    assert headings["h2"] == [f"Section {i}" for i in range(MAX_HEADINGS)]
