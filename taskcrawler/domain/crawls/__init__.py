"""Crawls, without I/O: what a crawl asks for (:mod:`.spec`), a crawl as stored and shown
(:mod:`.state`), which URLs belong to it (:mod:`.scope`), and what one fetched page adds to its
frontier (:mod:`.discovery`). The URLs' key a crawl deduplicates on is
:func:`~taskcrawler.domain.urls.crawl_key`.
"""

from taskcrawler.domain.crawls.discovery import (
    Discovery,
    LinkLike,
    discover,
    matches_search,
    sitemap_candidates,
    sitemap_keys,
)
from taskcrawler.domain.crawls.scope import Scope, Verdict, site_of
from taskcrawler.domain.crawls.spec import (
    CRAWL_COMPLETED_EVENT,
    CRAWL_FIELDS,
    CRAWL_PAGE_EVENT,
    DEFAULT_LIMIT,
    DEFAULT_MAX_LIMIT,
    DEFAULT_WEBHOOK_EVENTS,
    MAX_DEPTH,
    MAX_PATTERNS,
    WEBHOOK_EVENTS,
    CrawlSpec,
    InvalidCrawlSpec,
    PageOptions,
    Sitemap,
    SitemapMode,
    stored_webhook_events,
)
from taskcrawler.domain.crawls.state import Crawl, CrawlCounts, CrawlStatus
from taskcrawler.domain.pages import Candidate
from taskcrawler.domain.urls import crawl_key

__all__ = [
    "CRAWL_COMPLETED_EVENT",
    "CRAWL_FIELDS",
    "CRAWL_PAGE_EVENT",
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_LIMIT",
    "DEFAULT_WEBHOOK_EVENTS",
    "MAX_DEPTH",
    "MAX_PATTERNS",
    "WEBHOOK_EVENTS",
    "Candidate",
    "Crawl",
    "CrawlCounts",
    "CrawlSpec",
    "CrawlStatus",
    "Discovery",
    "InvalidCrawlSpec",
    "LinkLike",
    "PageOptions",
    "Scope",
    "Sitemap",
    "SitemapMode",
    "Verdict",
    "crawl_key",
    "discover",
    "matches_search",
    "site_of",
    "sitemap_candidates",
    "sitemap_keys",
    "stored_webhook_events",
]
