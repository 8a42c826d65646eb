"""What a web search engine is and takes: the port its adapter implements. A module of its
own, so that the adapter and the package that picks it (``build_web_search``) need not import
each other."""

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
