"""A SearXNG instance's JSON API: ``GET {url}/search?q=…&format=json&pageno=n``.

SearXNG answers a page of about ten results; pages are read until the query's ``limit`` is
met, the engine has no more, or :data:`MAX_PAGES`. One deadline covers every page, each
answer is read up to ``max_response_bytes``, and what the engine says is checked
(:func:`~taskcrawler.domain.web_search.results_of`): never passed on as it came.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

import aiohttp

from taskcrawler.common.http_json import AnswerNotJSON, AnswerTooLarge, read_json
from taskcrawler.domain.web_search import (
    MAX_RESULTS,
    WebQuery,
    WebResult,
    WebSearchFailed,
    results_of,
)
from taskcrawler.websearch.base import SearxngConfig

log = logging.getLogger(__name__)

#: Pages of results asked for at most, whatever the limit (ten a page: a limit of 100).
MAX_PAGES = 10
_CATEGORIES = {"web": "general", "news": "news", "images": "images"}


class Searxng:
    def __init__(self, config: SearxngConfig) -> None:
        self._config = config
        self._endpoint = config.url.rstrip("/") + "/search"
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(headers={"Accept": "application/json"})
        return self._session

    async def search(self, query: WebQuery) -> list[WebResult]:
        """The engine's results, its first page at least: a later page that fails or comes
        too late ends the reading, and what the earlier pages gave is the answer."""
        found: list[WebResult] = []
        try:
            async with asyncio.timeout(self._config.timeout_seconds):
                await self._read_pages(query, found)
        except TimeoutError:
            if not found:
                raise WebSearchFailed(
                    f"the search engine did not answer within {self._config.timeout_seconds:g} s"
                ) from None
        return [
            _numbered(result, position)
            for position, result in enumerate(found[: query.limit], start=1)
        ]

    async def _read_pages(self, query: WebQuery, found: list[WebResult]) -> None:
        """Pages of results into ``found``, each URL once, until the limit is met or a page
        brings nothing new."""
        seen: set[str] = set()
        for page in range(1, MAX_PAGES + 1):
            try:
                results = results_of(await self._page(query, page), _unlimited(query))
            except WebSearchFailed as exc:
                if not found:
                    raise
                log.warning("searxng page %d not read: %s", page, exc)
                return
            fresh = [result for result in results if result.url not in seen]
            if not fresh:
                return
            for result in fresh:
                seen.add(result.url)
                found.append(result)
            if len(found) >= query.limit:
                return

    async def _page(self, query: WebQuery, page: int) -> object:
        params = {
            "q": query.query,
            "format": "json",
            "pageno": str(page),
            "categories": _CATEGORIES[query.source],
        }
        if query.language:
            params["language"] = query.language
        if query.time_range:
            params["time_range"] = query.time_range
        try:
            async with self._client().get(self._endpoint, params=params) as response:
                if response.status != 200:
                    raise WebSearchFailed(f"the search engine answered {response.status}")
                return await read_json(response, self._config.max_response_bytes)
        except AnswerTooLarge:
            raise WebSearchFailed("the search engine's answer is too large") from None
        except AnswerNotJSON:
            raise WebSearchFailed(
                "the search engine did not answer JSON (is its json format enabled?)"
            ) from None
        except aiohttp.ClientError as exc:
            log.warning("searxng at %s: %s", self._endpoint, type(exc).__name__)
            raise WebSearchFailed("the search engine could not be reached") from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _unlimited(query: WebQuery) -> WebQuery:
    """The query without its limit: a page's results are all read, the limit applies to all."""
    return replace(query, limit=MAX_RESULTS)


def _numbered(result: WebResult, position: int) -> WebResult:
    return replace(result, position=position)
