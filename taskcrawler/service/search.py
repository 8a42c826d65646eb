"""Search over the caller's chunks: semantic (vectors), keyword (full-text), or hybrid (both,
fused by reciprocal rank); and a page's chunks as stored."""

from __future__ import annotations

from dataclasses import replace
from uuid import UUID

from taskcrawler.domain.chunks import (
    CHUNKS_FORMAT,
    SearchHit,
    SearchMode,
    SearchQuery,
    StoredChunk,
    reciprocal_rank_fusion,
)
from taskcrawler.domain.errors import Conflict, EmbedderUnavailable, VectorsUnavailable
from taskcrawler.domain.keys import Caller
from taskcrawler.embed import Embedder, EmbeddingFailed
from taskcrawler.service.jobs import JobService
from taskcrawler.storage.ports import ChunkRepository

#: Each ranking a hybrid search fuses looks this many times deeper than ``k`` (at least
#: ``HYBRID_MIN_DEPTH``): a chunk second in one list and absent from the other's first ``k``
#: may still be among the best of both.
HYBRID_DEPTH_FACTOR = 3
HYBRID_MIN_DEPTH = 30
#: How much the keyword ranking counts in a hybrid search, the semantic one counting 1: on the
#: knowledge base of the retrieval test, 0.5 found more answers first than 1 (docs/how-to/rag.md).
KEYWORD_WEIGHT = 0.5


class SearchService:
    def __init__(self, jobs: JobService, chunks: ChunkRepository, embedder: Embedder) -> None:
        self.jobs = jobs
        self.chunks = chunks
        self.embedder = embedder

    async def chunks_of(self, caller: Caller, job_id: UUID) -> list[StoredChunk]:
        await self.jobs.with_format(caller, job_id, CHUNKS_FORMAT)
        return await self.chunks.list_for_job(job_id, owner=caller.owner)

    async def search(self, query: SearchQuery) -> list[SearchHit]:
        """The ``query.k`` best chunks of ``query.owner``'s. A hybrid search where the database
        has no vectors is a keyword search; a semantic one is refused (:class:`Conflict`)."""
        if query.mode is SearchMode.KEYWORD:
            return await self.chunks.keyword(query)
        if query.mode is SearchMode.SEMANTIC:
            try:
                return await self._semantic(query)
            except VectorsUnavailable as exc:
                raise Conflict(
                    f"semantic search is unavailable: {exc}; search with mode keyword or "
                    "hybrid meanwhile"
                ) from None
        depth = max(HYBRID_MIN_DEPTH, HYBRID_DEPTH_FACTOR * query.k)
        deeper = replace(query, k=depth)
        keyword = await self.chunks.keyword(deeper)
        try:
            semantic = await self._semantic(deeper)
        except VectorsUnavailable:
            return keyword[: query.k]
        found = {(hit.job_id, hit.chunk_index): hit for hit in [*keyword, *semantic]}
        fused = reciprocal_rank_fusion(
            [
                [(hit.job_id, hit.chunk_index) for hit in semantic],
                [(hit.job_id, hit.chunk_index) for hit in keyword],
            ],
            weights=(1.0, KEYWORD_WEIGHT),
        )
        return [replace(found[key], score=score) for key, score in fused[: query.k]]

    async def _semantic(self, query: SearchQuery) -> list[SearchHit]:
        if not await self.chunks.vectors_available():
            raise VectorsUnavailable("this PostgreSQL has no pgvector")
        try:
            [vector] = await self.embedder.embed([query.text])
        except EmbeddingFailed as exc:
            raise EmbedderUnavailable(str(exc)) from None
        return await self.chunks.semantic(query, model=self.embedder.model, vector=vector)

    async def vectors(self) -> str:
        """For readiness: ``ok``, or why pages cannot be chunked and searched by meaning."""
        if await self.chunks.vectors_available():
            return "ok"
        return "unavailable: PostgreSQL has no pgvector (format chunks fails, search is keyword)"
