"""Sitemap parsing: every shape real sites use, and every way a hostile one is bounded."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import pytest

from taskcrawler.extract.sitemaps import (
    ParsedSitemap,
    SitemapKind,
    decompressed_chunks,
    parse_sitemap,
)
from tests.support.site import LAUGHS

BASE = "https://example.com/sitemap.xml"
MB = 1024 * 1024


def parse(body: bytes, *, max_bytes: int = 10 * MB, max_urls: int = 1000) -> ParsedSitemap:
    return parse_sitemap(body, url=BASE, max_bytes=max_bytes, max_urls=max_urls)


URLSET = b"""\xef\xbb\xbf  <?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc> https://example.com/a </loc><lastmod>2026-01-01</lastmod></url>
  <url><loc>/relative</loc></url>
  <url><loc>ftp://example.com/nope</loc></url>
  <url><loc></loc></url>
  <url><loc>https://example.com/b?x=1&amp;y=2</loc></url>
</urlset>"""


def test_a_urlset() -> None:
    parsed = parse(URLSET)
    assert parsed.kind is SitemapKind.URLSET
    assert parsed.urls == [
        "https://example.com/a",
        "https://example.com/relative",
        "https://example.com/b?x=1&y=2",
    ]
    assert parsed.sitemaps == [] and parsed.error is None and not parsed.truncated


def test_an_index_with_another_namespace_prefix() -> None:
    body = (
        b'<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sm:sitemap><sm:loc>https://example.com/s1.xml.gz</sm:loc></sm:sitemap>"
        b"<sm:sitemap><sm:loc>https://example.com/s2.xml</sm:loc></sm:sitemap>"
        b"<sm:url><sm:loc>https://example.com/not-in-an-index</sm:loc></sm:url>"
        b"</sm:sitemapindex>"
    )
    parsed = parse(body)
    assert parsed.kind is SitemapKind.INDEX
    assert parsed.sitemaps == ["https://example.com/s1.xml.gz", "https://example.com/s2.xml"]
    assert parsed.urls == []


def test_plain_text() -> None:
    body = b"https://example.com/a\r\n\n# comment\nhttps://example.com/b\nnot a url\nhttp://x.org/c"
    parsed = parse(body)
    assert parsed.kind is SitemapKind.TEXT
    assert parsed.urls == ["https://example.com/a", "https://example.com/b", "http://x.org/c"]


@pytest.mark.parametrize("members", [1, 3])
def test_gzip_whatever_the_name(members: int) -> None:
    """``members`` gzip members one after another (``gzip -c a b c``) make one document."""
    size = len(URLSET) // members + 1
    parts = [URLSET[i : i + size] for i in range(0, len(URLSET), size)]
    body = b"".join(gzip.compress(part) for part in parts) + b"\0\0trailing"
    parsed = parse(body)
    assert parsed.kind is SitemapKind.URLSET and parsed.error is None
    assert len(parsed.urls) == 3
    assert parsed.size == len(URLSET)


def test_a_corrupt_gzip_keeps_what_was_good() -> None:
    good = gzip.compress(URLSET)
    parsed = parse(good[:-30] + b"garbage" * 10)
    assert parsed.error is not None


def test_the_url_cap_stops_reading() -> None:
    body = b"<urlset>" + b"".join(
        f"<url><loc>https://example.com/{i}</loc></url>".encode() for i in range(5000)
    )
    parsed = parse(body + b"</urlset>", max_urls=100)
    assert len(parsed.urls) == 100 and parsed.truncated
    assert parsed.urls[-1] == "https://example.com/99"


def test_a_huge_plain_body_is_read_up_to_its_cap() -> None:
    body = b"https://example.com/x\n" * 200_000  # 4.4 MB
    parsed = parse(body, max_bytes=MB, max_urls=10**6)
    assert parsed.truncated and "bytes" in (parsed.error or "")
    assert parsed.size == MB
    assert 0 < len(parsed.urls) <= MB // len(b"https://example.com/x\n") + 1


def test_a_gzip_bomb_inflates_only_up_to_the_cap() -> None:
    """128 MB of spaces compress to about 128 KB; reading them costs less than the cap."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = b" " * MB
    bomb = deflater.compress(b"<urlset>") + b"".join(deflater.compress(block) for _ in range(128))
    bomb += deflater.flush()
    tracemalloc.start()
    try:
        parsed = parse(bomb, max_bytes=4 * MB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert parsed.truncated and parsed.size == 4 * MB
    assert peak < 2 * MB  # streamed: never the 4 MB read, let alone the 128 MB


def test_decompression_chunks_are_bounded() -> None:
    chunks = decompressed_chunks(gzip.compress(b"a" * (3 * MB)), 10 * MB)
    sizes = [len(chunk) for chunk in chunks]
    assert sum(sizes) == 3 * MB and max(sizes) <= 64 * 1024


@pytest.mark.parametrize(
    "body",
    [
        LAUGHS,
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b"<urlset><url><loc>https://example.com/&x;</loc></url></urlset>",
        b'<!DOCTYPE urlset SYSTEM "http://169.254.169.254/latest/meta-data/">'
        b"<urlset><url><loc>https://example.com/a</loc></url></urlset>",
    ],
    ids=["billion-laughs", "external-entity", "external-dtd"],
)
def test_a_doctype_is_refused_before_anything_is_expanded(body: bytes) -> None:
    parsed = parse(body)
    assert parsed.urls == [] and "DOCTYPE" in (parsed.error or "")


def test_deep_nesting_is_refused() -> None:
    body = b"<urlset>" + b"<x>" * 100_000 + b"</x>" * 100_000 + b"</urlset>"
    parsed = parse(body)
    assert parsed.urls == [] and "nested" in (parsed.error or "")


def test_malformed_xml_keeps_what_came_before() -> None:
    body = b"<urlset><url><loc>https://example.com/1</loc></url><url><loc>https://exa"
    parsed = parse(body)
    assert parsed.urls == ["https://example.com/1"]
    assert "malformed" in (parsed.error or "")


@pytest.mark.parametrize(
    "body",
    [b"", b"   \n", b"<html><body>Not found</body></html>", b"<rss><channel/></rss>", b"\x00\x01"],
)
def test_what_is_not_a_sitemap_lists_nothing(body: bytes) -> None:
    parsed = parse(body)
    assert parsed.urls == [] and parsed.sitemaps == []
    assert parsed.kind in (SitemapKind.UNKNOWN, SitemapKind.TEXT)


def test_an_endless_loc_is_not_kept() -> None:
    body = b"<urlset><url><loc>https://example.com/" + b"a" * 100_000 + b"</loc></url></urlset>"
    assert parse(body).urls == []
