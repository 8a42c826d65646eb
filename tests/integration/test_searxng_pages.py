"""A SearXNG search reads pages of results: what the first pages gave is kept when a later one
fails or comes too late, and only a search with nothing to show fails."""

from __future__ import annotations

import pytest

from taskcrawler.domain.web_search import WebQuery, WebSearchFailed
from taskcrawler.websearch.base import SearxngConfig
from taskcrawler.websearch.searxng import Searxng
from tests.support.fake_services import fake_searxng

SITE = "http://pages.test/"


@pytest.mark.parametrize(("breakage", "deadline"), [("fail", 10.0), ("stall", 1.0)])
async def test_a_later_page_that_fails_keeps_the_earlier_results(
    breakage: str, deadline: float
) -> None:
    async with fake_searxng(SITE) as (fake, url):
        fake.broken_from, fake.breakage = 2, breakage
        engine = Searxng(SearxngConfig(url, timeout_seconds=deadline))
        try:
            found = await engine.search(WebQuery("anything", limit=25))
        finally:
            await engine.close()
    assert [r.url for r in found] == [f"{SITE}title/page-{n}" for n in range(10)]
    assert [r.position for r in found] == list(range(1, 11))


@pytest.mark.parametrize(("breakage", "deadline"), [("fail", 10.0), ("stall", 0.5)])
async def test_a_first_page_that_fails_fails_the_search(breakage: str, deadline: float) -> None:
    async with fake_searxng(SITE) as (fake, url):
        fake.broken_from, fake.breakage = 1, breakage
        engine = Searxng(SearxngConfig(url, timeout_seconds=deadline))
        try:
            with pytest.raises(WebSearchFailed):
                await engine.search(WebQuery("anything", limit=25))
        finally:
            await engine.close()
