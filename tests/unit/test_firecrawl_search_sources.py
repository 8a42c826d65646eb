"""A Firecrawl search of several sources asks them all at once: they share the request's
``timeout`` (taken in turn, three sources could take three times it), and one that fails ends
the others."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from taskcrawler.domain.keys import Caller
from taskcrawler.firecrawl.service import FirecrawlService, SearchAnswer

SOURCES = ("web", "news", "images")


class Sources:
    """A stand-in for :meth:`FirecrawlService.search` whose sources answer only once every
    source was asked: asked in turn, the first never would."""

    def __init__(self, failing: str | None = None) -> None:
        self.asked: list[tuple[str, bool]] = []
        self.all_asked = asyncio.Event()
        self.failing = failing
        self.cancelled: list[str] = []

    async def search(self, caller: Caller, query: Any, page: Any, **_: Any) -> SearchAnswer:
        source = cast(str, query)
        self.asked.append((source, page is not None))
        if len(self.asked) == len(SOURCES):
            self.all_asked.set()
        try:
            await self.all_asked.wait()
            if source == self.failing:
                raise LookupError(source)
            await asyncio.sleep(0 if self.failing is None else 5)
        except asyncio.CancelledError:
            self.cancelled.append(source)
            raise
        return SearchAnswer([], warning=source)


def _service(sources: Sources) -> FirecrawlService:
    service = FirecrawlService.__new__(FirecrawlService)
    service.search = sources.search  # type: ignore[method-assign]
    return service


async def _search(service: FirecrawlService) -> dict[str, SearchAnswer]:
    queries = {source: cast(Any, source) for source in SOURCES}
    return await asyncio.wait_for(
        service.search_sources(
            Caller(owner=""), queries, cast(Any, "page"), timeout_ms=1000, screenshot_url=None
        ),
        timeout=10,
    )


async def test_the_sources_are_asked_at_once_and_answer_in_their_order() -> None:
    sources = Sources()
    answers = await _search(_service(sources))
    assert [answer.warning for answer in answers.values()] == list(SOURCES)
    assert list(answers) == list(SOURCES)
    # Images are listed, never scraped.
    assert sorted(sources.asked) == [("images", False), ("news", True), ("web", True)]


async def test_a_source_that_fails_ends_the_others() -> None:
    sources = Sources(failing="news")
    with pytest.raises(LookupError):
        await _search(_service(sources))
    await asyncio.sleep(0)
    assert sorted(sources.cancelled) == ["images", "web"]
