"""Web search engines: a query in, result URLs out. The one kind is a SearXNG instance the
operator runs (``TASKCRAWLER_SEARXNG_URL``), as Firecrawl's self-hosted edition uses one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from taskcrawler.domain.web_search import WebQuery, WebResult


class WebSearch(Protocol):
    async def search(self, query: WebQuery) -> list[WebResult]:
        """The query's results, best first. Raises ``WebSearchFailed``."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class SearxngConfig:
    url: str  # the instance's base URL: {url}/search?format=json
    timeout_seconds: float = 10.0
    #: Bytes of one answer read at most.
    max_response_bytes: int = 4 * 1024 * 1024


def build_web_search(config: SearxngConfig) -> WebSearch:
    from taskcrawler.websearch.searxng import Searxng

    return Searxng(config)


__all__ = ["SearxngConfig", "WebSearch", "build_web_search"]
