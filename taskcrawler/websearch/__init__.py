"""Web search engines: a query in, result URLs out. The one kind is a SearXNG instance the
operator runs (``TASKCRAWLER_SEARXNG_URL``), as Firecrawl's self-hosted edition uses one."""

from __future__ import annotations

from taskcrawler.websearch.base import (
    SearxngConfig,
    WebSearch,
)


def build_web_search(config: SearxngConfig) -> WebSearch:
    from taskcrawler.websearch.searxng import Searxng

    return Searxng(config)


__all__ = ["SearxngConfig", "WebSearch", "build_web_search"]
