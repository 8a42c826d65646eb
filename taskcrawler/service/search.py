"""Search over the caller's chunks: semantic (vectors), keyword (BM25), or hybrid (both, each
weighed by how much it knows of the query); and a page's chunks as stored."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from uuid import UUID

from taskcrawler.domain.chunks import (
    CHUNKS_FORMAT,
    FUSION_DEPTH,
    Ranked,
    SearchHit,
    SearchLeg,
    SearchMode,
    SearchQuery,
    StoredChunk,
    chunk_context,
    confidence_fusion,
    embedded_text,
)
from taskcrawler.domain.errors import Conflict, EmbedderUnavailable, VectorsUnavailable
from taskcrawler.domain.keys import Caller
from taskcrawler.embed import Embedder, EmbeddingFailed
from taskcrawler.rerank import Reranker, RerankFailed
from taskcrawler.service.jobs import JobService
from taskcrawler.storage.ports import ChunkRepository

#: Each ranking a hybrid search fuses looks this many times deeper than ``k`` (at least
#: ``FUSION_DEPTH``, where the fusion reads each ranking's spread): a chunk second in one list
#: and absent from the other's first ``k`` may still be among the best of both.
HYBRID_DEPTH_FACTOR = 3

log = logging.getLogger(__name__)

SEMANTIC_LEG: SearchLeg = "semantic"
KEYWORD_LEG: SearchLeg = "keyword"


@dataclass(frozen=True, slots=True)
class SearchAnswer:
    hits: list[SearchHit]
    #: The rankings the hits come from: a hybrid search whose query could not be embedded (in
    #: time) or whose database has no vectors has the keyword one alone.
    legs: tuple[SearchLeg, ...]


class SearchService:
    def __init__(
        self,
        jobs: JobService,
        chunks: ChunkRepository,
        embedder: Embedder,
        reranker: Reranker | None = None,
        *,
        rerank_candidates: int = 30,
        query_embed_seconds: float = 5.0,
    ) -> None:
        self.jobs = jobs
        self.chunks = chunks
        self.embedder = embedder
        self.reranker = reranker
        self.rerank_candidates = rerank_candidates
        # A search answers someone waiting: the embedder's own retries (minutes, at worst)
        # must not hold it.
        self.query_embed_seconds = query_embed_seconds

    async def chunks_of(self, caller: Caller, job_id: UUID) -> list[StoredChunk]:
        await self.jobs.with_format(caller, job_id, CHUNKS_FORMAT)
        return await self.chunks.list_for_job(job_id, owner=caller.owner)

    async def search(self, query: SearchQuery) -> list[SearchHit]:
        """:meth:`answer`'s hits."""
        return (await self.answer(query)).hits

    async def answer(self, query: SearchQuery) -> SearchAnswer:
        """The ``query.k`` best chunks of ``query.owner``'s, and the rankings they come from. A
        hybrid search whose query cannot be embedded within ``query_embed_seconds``, or where
        the database has no vectors, is a keyword search; a semantic one is refused
        (:class:`EmbedderUnavailable`, :class:`Conflict`).

        With a reranker (and ``query.rerank``), the best ``rerank_candidates`` (``k`` if more)
        are re-scored by it; when it fails they keep their order."""
        if self.reranker is None or not query.rerank:
            return await self._ranked(query)
        found = await self._ranked(replace(query, k=max(query.k, self.rerank_candidates)))
        hits = await self._reranked(self.reranker, query.text, found.hits)
        return SearchAnswer(hits[: query.k], found.legs)

    async def _reranked(
        self, reranker: Reranker, text: str, hits: list[SearchHit]
    ) -> list[SearchHit]:
        passages = [
            embedded_text(chunk_context(hit.title, hit.heading_path), hit.text) for hit in hits
        ]
        try:
            scores = await reranker.rerank(text, passages)
        except RerankFailed as exc:
            log.warning("rerank failed, results keep their order: %s", exc)
            return hits
        rescored = [replace(hit, score=score) for hit, score in zip(hits, scores, strict=True)]
        return sorted(rescored, key=lambda hit: -hit.score)

    async def _ranked(self, query: SearchQuery) -> SearchAnswer:
        if query.mode is SearchMode.KEYWORD:
            return SearchAnswer(await self.chunks.keyword(query), (KEYWORD_LEG,))
        if query.mode is SearchMode.SEMANTIC:
            try:
                return SearchAnswer(await self._semantic(query), (SEMANTIC_LEG,))
            except VectorsUnavailable as exc:
                raise Conflict(
                    f"semantic search is unavailable: {exc}; search with mode keyword or "
                    "hybrid meanwhile"
                ) from None
        return await self._hybrid(query)

    async def _hybrid(self, query: SearchQuery) -> SearchAnswer:
        """Both rankings fused, and only the ``k`` chunks kept read, once: each ranking is
        :data:`FUSION_DEPTH` deep at least, and reading both rankings' chunks whole cost a
        search at 100,000 chunks 2-5 ms (a store that reads a ranking's chunks with it is not
        asked for them again)."""
        depth = max(FUSION_DEPTH, HYBRID_DEPTH_FACTOR * query.k)
        deeper = replace(query, k=depth)
        # The two legs at once: the keyword leg waits on the database while the query is
        # embedded and its vectors searched.
        keyword_leg = asyncio.ensure_future(self.chunks.keyword_ranking(deeper))
        try:
            semantic = await self._semantic_ranking_or_none(deeper)
        except BaseException:
            keyword_leg.cancel()
            # Wait for it to stop, and read what it raised, if it failed first: nothing else will.
            await asyncio.gather(keyword_leg, return_exceptions=True)
            raise
        keyword = await keyword_leg
        if semantic is None:
            return SearchAnswer(await self.chunks.hits(keyword[: query.k]), (KEYWORD_LEG,))
        found = {item.key: item for item in [*keyword, *semantic]}
        fused = confidence_fusion(
            [(item.key, item.score) for item in semantic],
            [(item.key, item.score) for item in keyword],
        )
        kept = [replace(found[key], score=score) for key, score in fused[: query.k]]
        return SearchAnswer(await self.chunks.hits(kept), (SEMANTIC_LEG, KEYWORD_LEG))

    async def _semantic_ranking_or_none(self, query: SearchQuery) -> list[Ranked] | None:
        """The semantic ranking, or None where this database has no vectors or the query could
        not be embedded (in time)."""
        try:
            vector = await self._query_vector(query)
        except VectorsUnavailable:
            return None
        except EmbedderUnavailable as exc:
            log.warning("hybrid search answers by keyword alone: %s", exc)
            return None
        return await self.chunks.semantic_ranking(query, model=self.embedder.model, vector=vector)

    async def _semantic(self, query: SearchQuery) -> list[SearchHit]:
        vector = await self._query_vector(query)
        return await self.chunks.semantic(query, model=self.embedder.model, vector=vector)

    async def _query_vector(self, query: SearchQuery) -> list[float]:
        if not await self.chunks.vectors_available():
            raise VectorsUnavailable("this PostgreSQL has no pgvector")
        try:
            async with asyncio.timeout(self.query_embed_seconds):
                [vector] = await self.embedder.embed([query.text], purpose="query")
        except EmbeddingFailed as exc:
            raise EmbedderUnavailable(str(exc)) from None
        except TimeoutError:
            raise EmbedderUnavailable("the query's embedding overran its deadline") from None
        return vector

    async def vectors(self) -> str:
        """For readiness: ``ok``, or why pages cannot be chunked and searched by meaning."""
        if await self.chunks.vectors_available():
            return "ok"
        return "unavailable: PostgreSQL has no pgvector (format chunks fails, search is keyword)"
