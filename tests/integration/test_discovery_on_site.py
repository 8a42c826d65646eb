"""The crawl's pure rules, driven by a plain in-memory breadth-first loop over the real fetcher
and extractor, find exactly what the generated site's ground truth says (precision and recall
1.0), fetch nothing disallowed or out of scope, and fetch no page twice. The durable crawl keeps
the same rules and only moves the frontier into the database."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import pytest

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.domain.crawls import CrawlSpec, Scope, SitemapMode, discover, sitemap_candidates
from taskcrawler.domain.urls import crawl_key
from taskcrawler.extract import extract
from taskcrawler.fetch import Fetcher, MemoryHostLimiter
from taskcrawler.fetch.sitemaps import SitemapLimits, read_sitemaps
from tests.support.hostile import fetch_settings
from tests.support.site import Site, SiteServer

SITE_OPTIONS = {"seed": 7, "pages": 800, "crawl_delay": 0.01}


@dataclass
class Outcome:
    depth: dict[str, int] = field(default_factory=dict)  # the frontier: key -> depth
    fetched: set[str] = field(default_factory=set)
    disallowed: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    duplicates: set[str] = field(default_factory=set)


async def crawl(site: Site, spec: CrawlSpec) -> Outcome:
    # The crawl's rules are under test, not the fetch deadline: on a loaded host a page that
    # took longer than the usual 5 s would go missing and move its links a level deeper.
    settings = fetch_settings(
        allow_private_networks=True, respect_robots=True, fetch_timeout_seconds=60.0
    )
    fetcher = Fetcher(settings, resolver=site.resolver(), limiter=MemoryHostLimiter(16))
    scope = Scope.of(spec)
    outcome = Outcome()
    start = crawl_key(spec.url)
    outcome.depth[start] = 0
    queue: deque[str] = deque([start])
    try:
        if spec.sitemap is not SitemapMode.SKIP:
            report = await read_sitemaps(fetcher, spec.url, SitemapLimits())
            for candidate in sitemap_candidates(report.urls, spec, scope)[0]:
                if candidate.key not in outcome.depth:
                    outcome.depth[candidate.key] = candidate.depth
                    queue.append(candidate.key)
        while queue:
            batch = [queue.popleft() for _ in range(min(len(queue), 16))]
            await asyncio.gather(
                *(visit(fetcher, spec, scope, key, outcome, queue) for key in batch)
            )
    finally:
        await fetcher.close()
    return outcome


async def visit(
    fetcher: Fetcher, spec: CrawlSpec, scope: Scope, key: str, outcome: Outcome, queue: deque[str]
) -> None:
    try:
        page = await fetcher.fetch(key)
    except FetchError as exc:
        if exc.code == ErrorCode.ROBOTS_DISALLOWED:
            outcome.disallowed.add(key)
        else:
            outcome.failed.add(key)
        return
    outcome.fetched.add(key)
    if spec.sitemap is SitemapMode.ONLY:
        return
    extraction = extract(page.body, url=page.final_url, charset=page.charset, formats=("links",))
    canonical = extraction.metadata["canonical_url"]
    found = discover(page.final_url, extraction.links, canonical, outcome.depth[key], spec, scope)
    if found.duplicate_of is not None:
        outcome.duplicates.add(key)
    for candidate in found.candidates:
        if candidate.key not in outcome.depth:
            outcome.depth[candidate.key] = candidate.depth
            queue.append(candidate.key)


CASES: list[dict[str, Any]] = [
    {},
    {"allow_subdomains": True},
    {"allow_external": True},
    {"max_depth": 1},
    {"max_depth": 0},
    {"sitemap": "skip"},
    {"sitemap": "only"},
    {"include_paths": ["^/(docs|blog)/", "^/$"], "exclude_paths": ["7$"]},
]


@pytest.mark.parametrize("options", CASES, ids=repr)
async def test_exactly_the_pages_in_scope(site_server: SiteServer, options: dict[str, Any]) -> None:
    site = site_server.site
    assert site is not None
    truth = site.expected_crawl(**options)
    outcome = await crawl(site, CrawlSpec.create(site.start_url, **options))

    assert outcome.depth == truth.pages  # every page found, nothing else, at its depth
    assert outcome.disallowed == truth.disallowed
    assert outcome.failed == truth.failing
    assert outcome.fetched == truth.fetchable - truth.failing
    assert outcome.duplicates == truth.twins & outcome.fetched
    # Nothing disallowed or out of scope was requested, and no page twice.
    pages = [url for url in site_server.fetched if not url.endswith(("/robots.txt", ".xml", ".gz"))]
    assert len(pages) == len(set(pages))
    assert {crawl_key(url) for url in pages} == outcome.fetched | outcome.failed
    assert not any("/private/" in url for url in site_server.fetched)
