"""Reading a site's sitemaps through the real fetcher, against the generated site and hostile
sitemap hosts: everything listed is found, nothing disallowed is fetched, every cap holds."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.sitemaps import SitemapLimits, read_sitemaps
from tests.support.hostile import fetch_settings
from tests.support.site import (
    DEEP_LEVELS,
    HOSTILE_HOSTS,
    HUGE_URLS,
    SiteServer,
)


def make_fetcher(site_server: SiteServer, **settings: Any) -> Fetcher:
    values: dict[str, Any] = {"allow_private_networks": True, "respect_robots": True}
    values.update(settings)
    assert site_server.site is not None
    return Fetcher(fetch_settings(**values), resolver=site_server.site.resolver())


@pytest.fixture
async def fetcher(site_server: SiteServer) -> AsyncIterator[Fetcher]:
    made = make_fetcher(site_server)
    yield made
    await made.close()


def hostile(site_server: SiteServer, name: str) -> str:
    return f"http://{HOSTILE_HOSTS[name]}:{site_server.port}/"


def fetched_paths(site_server: SiteServer) -> list[str]:
    return [url.split(str(site_server.port), 1)[1] for url in site_server.fetched]


async def test_every_listed_page_is_found_and_nothing_disallowed_fetched(
    site_server: SiteServer, fetcher: Fetcher
) -> None:
    site = site_server.site
    assert site is not None
    report = await read_sitemaps(fetcher, site.start_url, SitemapLimits())
    found = {url.split("?utm_")[0] for url in report.urls}
    assert found == set(site.sitemap_pages())
    assert len(report.urls) == len(set(report.urls))
    assert sorted(report.sitemaps) == sorted(site.reachable_sitemaps())
    assert not any("/private/" in url for url in site_server.fetched)
    assert [url for url, _ in report.errors] == [site.main("/private/sitemap.xml")]
    assert ErrorCode.ROBOTS_DISALLOWED in report.errors[0][1]
    assert report.capped == set()
    # Every sitemap (and robots.txt) was fetched once, and no page.
    assert (
        len(site_server.fetched)
        == len(set(site_server.fetched))
        == len(site.reachable_sitemaps()) + 1
    )


async def test_without_robots_the_sitemap_lines_are_still_read(site_server: SiteServer) -> None:
    fetcher = make_fetcher(site_server, respect_robots=False)
    site = site_server.site
    assert site is not None
    try:
        report = await read_sitemaps(fetcher, site.start_url, SitemapLimits())
    finally:
        await fetcher.close()
    assert site.main("/private/sitemap.xml") in report.sitemaps  # nothing forbids it now
    assert site.main("/secret/0") in report.urls


async def test_a_huge_sitemap_stops_at_the_url_cap(
    site_server: SiteServer, fetcher: Fetcher
) -> None:
    report = await read_sitemaps(
        fetcher, hostile(site_server, "huge"), SitemapLimits(max_urls=1000)
    )
    assert len(report.urls) == 1000 and "urls" in report.capped
    assert HUGE_URLS > 1000


async def test_a_huge_sitemap_stops_at_the_byte_cap(
    site_server: SiteServer, fetcher: Fetcher
) -> None:
    limits = SitemapLimits(max_bytes=64 * 1024, max_urls=10**6)
    report = await read_sitemaps(fetcher, hostile(site_server, "huge"), limits)
    assert 0 < len(report.urls) < 2000 and "bytes" in report.capped
    assert report.bytes_read <= 64 * 1024 + 1


async def test_a_gzip_file_bomb_inflates_only_to_the_cap(
    site_server: SiteServer, fetcher: Fetcher
) -> None:
    limits = SitemapLimits(max_bytes=2 * 1024 * 1024)
    report = await read_sitemaps(fetcher, hostile(site_server, "bomb"), limits)
    assert report.urls == [] and "bytes" in report.capped
    assert report.bytes_read == 2 * 1024 * 1024


async def test_a_content_encoding_bomb_is_too_large(site_server: SiteServer) -> None:
    fetcher = make_fetcher(site_server, sitemap_max_bytes=2 * 1024 * 1024)
    try:
        report = await read_sitemaps(fetcher, hostile(site_server, "encoded-bomb"), SitemapLimits())
    finally:
        await fetcher.close()
    assert report.urls == []
    assert any(ErrorCode.TOO_LARGE in error for _, error in report.errors)


async def test_nested_indexes_stop_at_the_depth_cap(
    site_server: SiteServer, fetcher: Fetcher
) -> None:
    report = await read_sitemaps(fetcher, hostile(site_server, "deep"), SitemapLimits(max_depth=3))
    assert "depth" in report.capped and report.urls == []
    levels = [path for path in fetched_paths(site_server) if path.startswith("/level-")]
    assert sorted(levels) == ["/level-1.xml", "/level-2.xml", "/level-3.xml"]
    assert DEEP_LEVELS > 3


async def test_indexes_in_a_loop_are_read_once_each(
    site_server: SiteServer, fetcher: Fetcher
) -> None:
    report = await read_sitemaps(fetcher, hostile(site_server, "loop"), SitemapLimits())
    assert sorted(fetched_paths(site_server)) == ["/b.xml", "/robots.txt", "/sitemap.xml"]
    assert report.capped == set() and report.urls == []


async def test_thousands_of_children_stop_at_the_count_cap(
    site_server: SiteServer, fetcher: Fetcher
) -> None:
    report = await read_sitemaps(fetcher, hostile(site_server, "many"), SitemapLimits(max_count=20))
    children = [path for path in fetched_paths(site_server) if path.startswith("/child-")]
    assert len(children) == 19  # the index is the 20th
    assert len(report.sitemaps) == 20 and len(report.urls) == 19
    assert "count" in report.capped


async def test_entity_expansion_is_refused(site_server: SiteServer, fetcher: Fetcher) -> None:
    report = await read_sitemaps(fetcher, hostile(site_server, "laughs"), SitemapLimits())
    assert report.urls == []
    assert any("DOCTYPE" in error for _, error in report.errors)


async def test_the_total_byte_cap_spans_sitemaps(site_server: SiteServer, fetcher: Fetcher) -> None:
    site = site_server.site
    assert site is not None
    limits = SitemapLimits(max_total_bytes=40_000)
    report = await read_sitemaps(fetcher, site.start_url, limits)
    assert "bytes" in report.capped
    assert report.bytes_read == 40_000
    assert len(report.sitemaps) < len(site.reachable_sitemaps())


async def test_a_page_fetch_still_refuses_what_a_sitemap_fetch_accepts(
    site_server: SiteServer, fetcher: Fetcher
) -> None:
    site = site_server.site
    assert site is not None
    gzipped = site.main("/sitemaps/archive.xml.gz")
    page = await fetcher.fetch_sitemap(gzipped)
    assert page.content_type == "application/gzip" and page.body[:2] == b"\x1f\x8b"
    with pytest.raises(FetchError) as caught:
        await fetcher.fetch(gzipped)
    assert caught.value.code == ErrorCode.UNSUPPORTED_CONTENT_TYPE


async def test_a_sitemap_fetch_obeys_the_guard(site_server: SiteServer) -> None:
    fetcher = make_fetcher(site_server, allow_private_networks=False)
    site = site_server.site
    assert site is not None
    try:
        with pytest.raises(FetchError) as caught:
            await fetcher.fetch_sitemap(site.main("/sitemap.xml"))
        report = await read_sitemaps(fetcher, site.start_url, SitemapLimits())
    finally:
        await fetcher.close()
    assert caught.value.code == ErrorCode.BLOCKED_ADDRESS
    assert report.urls == [] and site_server.fetched == []
