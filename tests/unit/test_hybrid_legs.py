"""A hybrid search asks its two rankings at once, and answers by keyword when the query cannot
be embedded."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast
from uuid import uuid4

from taskcrawler.domain.chunks import Ranked, SearchHit, SearchQuery
from taskcrawler.embed import EmbeddingFailed
from taskcrawler.service.search import SearchService

JOB = uuid4()


def _hit(index: int, score: float) -> SearchHit:
    return SearchHit(JOB, f"http://a.test/{index}", None, index, f"chunk {index}", score)


class Chunks:
    """A store whose keyword ranking answers only once the query has been embedded."""

    def __init__(self, embedded: asyncio.Event) -> None:
        self.embedded = embedded
        self.keyword_cancelled = False

    async def vectors_available(self) -> bool:
        return True

    async def keyword_ranking(self, query: SearchQuery) -> list[Ranked]:
        try:
            await self.embedded.wait()
        except asyncio.CancelledError:
            self.keyword_cancelled = True
            raise
        return [Ranked(1, 0.9), Ranked(2, 0.5)]

    async def semantic_ranking(
        self, query: SearchQuery, *, model: str, vector: Any
    ) -> list[Ranked]:
        return [Ranked(2, 0.8), Ranked(3, 0.4)]

    async def hits(self, ranked: Sequence[Ranked]) -> list[SearchHit]:
        return [_hit(cast(int, item.key), item.score) for item in ranked]


class Embedder:
    model = "test/2"

    def __init__(self, embedded: asyncio.Event, *, fails: bool = False) -> None:
        self.embedded = embedded
        self.fails = fails

    async def embed(self, texts: Sequence[str], *, purpose: str = "document") -> list[list[float]]:
        await asyncio.sleep(0)  # the keyword leg is waiting by now, if it started
        if self.fails:
            raise EmbeddingFailed("the model is gone", transient=True)
        self.embedded.set()
        return [[1.0, 0.0]]


async def test_the_keyword_leg_runs_while_the_query_is_embedded() -> None:
    embedded = asyncio.Event()
    search = SearchService(cast(Any, None), cast(Any, Chunks(embedded)), Embedder(embedded))

    # One leg after the other would wait forever: the keyword leg waits for the embedding.
    hits = await asyncio.wait_for(search.search(SearchQuery("", "question", k=3)), 30)

    assert {hit.chunk_index for hit in hits} == {1, 2, 3}


async def test_an_embedder_failure_leaves_the_keyword_ranking_alone() -> None:
    embedded = asyncio.Event()
    embedded.set()  # the keyword leg need not wait
    search = SearchService(
        cast(Any, None), cast(Any, Chunks(embedded)), Embedder(embedded, fails=True)
    )

    found = await search.answer(SearchQuery("", "question", k=3))

    assert [hit.chunk_index for hit in found.hits] == [1, 2]
    assert found.legs == ("keyword",)
