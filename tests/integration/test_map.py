"""The map service against the generated site: exactly the in-scope URLs of its sitemaps and
start page (precision and recall 1.0), and nothing fetched but those."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from taskcrawler.bootstrap import api_parsers
from taskcrawler.common.processes import InThreads
from taskcrawler.domain.crawls import InvalidCrawlSpec, sitemap_keys
from taskcrawler.fetch import Fetcher, MemoryHostLimiter
from taskcrawler.fetch.sitemaps import URL_SLICE
from taskcrawler.service.mapping import MapRefused, MapService
from tests.support.hostile import fetch_settings
from tests.support.site import HOSTILE_HOSTS, Site, SiteServer


def make_service(site: Site, **settings: Any) -> MapService:
    values: dict[str, Any] = {"allow_private_networks": True, "respect_robots": True}
    values.update(settings)
    made = fetch_settings(**values)
    fetcher = Fetcher(made, resolver=site.resolver(), limiter=MemoryHostLimiter(8))
    return MapService(fetcher, made)


@pytest.fixture
async def mapper(site: Site) -> AsyncIterator[MapService]:
    service = make_service(site)
    yield service
    await service.fetcher.close()


def fetched_paths(site_server: SiteServer) -> set[str]:
    return {url.split(f":{site_server.port}", 1)[1] for url in site_server.fetched}


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"sitemap": "skip"},
        {"sitemap": "only"},
        {"allow_subdomains": True},
        {"include_paths": ["^/(docs|archive)/"]},
        {"exclude_paths": ["^/archive/", "/1"]},
        {"include_paths": ["^/shop/"], "exclude_paths": ["5$"]},
        {"search": "DOCS 1"},
        {"search": "archive 29"},
        {"search": "nothing-has-this"},
    ],
    ids=repr,
)
async def test_exactly_the_urls_in_scope(
    site_server: SiteServer, site: Site, mapper: MapService, options: dict[str, Any]
) -> None:
    result = await mapper.map(mapper.request(site.start_url, limit=100_000, **options))
    expected = site.expected_map(**options)
    found = set(result.links)
    assert found == expected  # precision and recall 1.0
    assert len(result.links) == len(found)  # each once
    assert not any("/private/" in url for url in site_server.fetched)
    pages = fetched_paths(site_server) - {"/robots.txt"}
    pages -= {path for path in pages if "sitemap" in path}
    assert pages <= {"/"}  # no page but the start page is fetched


async def test_the_default_is_sitemaps_and_links_in_order(site: Site, mapper: MapService) -> None:
    result = await mapper.map(mapper.request(site.start_url))
    assert result.links[0] == site.start_url
    home = site.pages[site.start_url]
    first_link = home.links[0].target
    assert result.links.index(first_link) < result.links.index(site.main("/archive/0"))
    assert len(result.links) == len(site.expected_map())
    assert [w for w in result.warnings if "private/sitemap.xml" in w]  # said, not hidden


async def test_twins_appear_once_as_their_key(site: Site, mapper: MapService) -> None:
    result = await mapper.map(mapper.request(site.start_url, limit=100_000))
    assert not any("utm_" in url or "#" in url for url in result.links)
    docs1 = site.main("/docs/1")  # linked from the home page with utm_ parameters
    assert result.links.count(docs1) == 1
    assert site.main("/shop/0?color=red") in result.links  # not a tracking parameter


async def test_the_limit_cuts_after_filtering(site: Site, mapper: MapService) -> None:
    result = await mapper.map(mapper.request(site.start_url, limit=7, search="archive"))
    assert len(result.links) == 7
    assert set(result.links) <= site.expected_map(search="archive")


async def test_nofollow_links_are_left_out(site: Site, mapper: MapService) -> None:
    result = await mapper.map(mapper.request(site.start_url, sitemap="skip"))
    assert site.main("/hidden/0") not in result.links
    assert site.main("/private/0") in result.links  # listed; robots.txt forbids fetching it


async def test_hostile_sitemaps_are_bounded(site_server: SiteServer, site: Site) -> None:
    service = make_service(
        site, sitemap_max_urls=500, sitemap_max_count=10, sitemap_max_bytes=1024 * 1024
    )
    try:
        for name in ("huge", "bomb", "deep", "loop", "many", "laughs"):
            url = f"http://{HOSTILE_HOSTS[name]}:{site_server.port}/"
            result = await service.map(service.request(url, sitemap="only", limit=100_000))
            assert len(result.links) <= 500, name
    finally:
        await service.fetcher.close()
    assert sum(1 for url in site_server.fetched if "many.test" in url) <= 11  # robots + 10


async def test_what_was_found_in_time_is_answered(site_server: SiteServer, site: Site) -> None:
    service = make_service(site, map_timeout_seconds=2)
    url = f"http://{HOSTILE_HOSTS['stalling']}:{site_server.port}/"
    try:
        result = await service.map(service.request(url))
    finally:
        await service.fetcher.close()
    assert result.links == [url, url + "linked"]
    assert any("stopped after 2 s" in warning for warning in result.warnings)


async def test_a_failed_start_page_is_a_warning(site: Site, mapper: MapService) -> None:
    result = await mapper.map(mapper.request(site.main("/missing/0"), sitemap="skip"))
    assert result.links == []
    assert result.warnings == ["start page: http_404: HTTP 404 Not Found"]


async def test_a_blocked_address_is_refused(site: Site) -> None:
    service = make_service(site, allow_private_networks=False)
    try:
        for mode in ("include", "only"):
            with pytest.raises(MapRefused, match="blocked_address"):
                await service.map(service.request(site.start_url, sitemap=mode))
    finally:
        await service.fetcher.close()


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 100_001}, "limit"),
        ({"include_paths": ["(?<=x)"]}, "include_paths[0]"),
        ({"sitemap": "always"}, "sitemap"),
        ({"search": "x" * 501}, "search"),
    ],
)
async def test_bad_requests_name_the_field(
    site: Site, mapper: MapService, options: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidCrawlSpec) as caught:
        mapper.request(site.start_url, **options)
    assert caught.value.field == field


async def test_parser_processes_map_what_threads_map(site_server: SiteServer, site: Site) -> None:
    """The API's runner: the start page parsed and every URL keyed in its processes."""
    service = make_service(site, sitemap_max_urls=20_000)
    service.runner = pool = api_parsers(service.settings)
    huge = f"http://{HOSTILE_HOSTS['huge']}:{site_server.port}/"
    try:
        result = await service.map(service.request(site.start_url, limit=100_000))
        assert set(result.links) == site.expected_map()
        assert len(result.links) == len(site.expected_map())
        sitemap = await service.map(service.request(huge, sitemap="only", limit=100_000))
    finally:
        await service.fetcher.close()
        await pool.aclose()
    listed = [f"http://{HOSTILE_HOSTS['huge']}/p/{n}" for n in range(20_000)]
    assert sitemap.links == listed  # in the sitemap's order
    assert "sitemaps: the urls cap was reached, the rest was not read" in sitemap.warnings


class FirstSliceOnly(InThreads):
    """Keys the first slice of sitemap URLs, and never answers for the others."""

    def __init__(self) -> None:
        self.keyed = 0

    async def run(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        if fn is sitemap_keys:
            self.keyed += 1
            if self.keyed > 1:
                await asyncio.Event().wait()
        return await super().run(fn, *args, **kwargs)


async def test_the_deadline_covers_keying_and_keeps_what_was_keyed(
    site_server: SiteServer, site: Site
) -> None:
    # Long enough for the first slice to be fetched and keyed on a busy machine, where 2 s is
    # not: the test waits it out, as the second slice never answers.
    service = make_service(site, sitemap_max_urls=3 * URL_SLICE, map_timeout_seconds=8)
    service.runner = FirstSliceOnly()
    huge = f"http://{HOSTILE_HOSTS['huge']}:{site_server.port}/"
    try:
        result = await service.map(service.request(huge, sitemap="only", limit=100_000))
    finally:
        await service.fetcher.close()
    assert result.links == [f"http://{HOSTILE_HOSTS['huge']}/p/{n}" for n in range(URL_SLICE)]
    assert any("stopped after 8 s" in warning for warning in result.warnings)
