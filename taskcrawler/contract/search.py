"""A page's chunks, and the search over every page's chunks."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, Field

from taskcrawler.contract.base import Id, Instant, RequestModel
from taskcrawler.domain.chunks import SearchHit, SearchLeg, SearchMode, SearchQuery, StoredChunk
from taskcrawler.domain.urls import MAX_URL_LENGTH

_START = (
    "Where the chunk starts in the page's Markdown (the job's `markdown` content), in characters."
)
_END = "Where it ends there (exclusive): `markdown[start:end]` is the passage it was cut from."


class ChunkOut(BaseModel):
    index: int
    text: str
    heading_path: list[str]
    token_count: int
    start: int | None = Field(
        None, description=_START + " None for chunks made before offsets were kept."
    )
    end: int | None = Field(None, description=_END)

    @classmethod
    def of(cls, chunk: StoredChunk) -> ChunkOut:
        return cls(
            index=chunk.index,
            text=chunk.text,
            heading_path=list(chunk.heading_path),
            token_count=chunk.token_count,
            start=chunk.start,
            end=chunk.end,
        )


class ChunkList(BaseModel):
    chunks: list[ChunkOut]
    model: str | None = Field(None, description="The model that embedded them.")


class SearchResult(BaseModel):
    """A chunk found, with what a RAG pipeline needs to cite it."""

    job_id: UUID
    url: str
    title: str | None
    chunk_index: int
    text: str
    score: float = Field(
        description="Higher is better: cosine similarity (semantic), the share of the query's "
        "weight the chunk matches by BM25, 0 to 1 (keyword), the fusion of both (hybrid), or "
        "the reranker's relevance (when one re-scored the results); comparable within one "
        "answer."
    )
    heading_path: list[str] = Field(description="The headings the chunk sits under.")
    start: int | None = Field(description=_START)
    end: int | None = Field(description=_END)
    fetched_at: datetime | None = Field(description="When the page was fetched (UTC).")

    @classmethod
    def of(cls, hit: SearchHit) -> SearchResult:
        return cls(
            job_id=hit.job_id,
            url=hit.url,
            title=hit.title,
            chunk_index=hit.chunk_index,
            text=hit.text,
            score=hit.score,
            heading_path=list(hit.heading_path),
            start=hit.start,
            end=hit.end,
            fetched_at=hit.fetched_at,
        )


class SearchResults(BaseModel):
    results: list[SearchResult]
    legs: list[SearchLeg] = Field(
        description="The rankings the results come from: a hybrid search answers with "
        '["keyword"] alone when the query could not be embedded in time '
        "(TASKCRAWLER_SEARCH_EMBED_TIMEOUT_SECONDS) or the database has no vectors."
    )


#: The most chunks one search returns, and the longest query.
MAX_K = 100
MAX_QUERY_CHARS = 1000


class SearchIn(RequestModel):
    """What ``GET /api/v1/search`` takes (as query parameters)."""

    q: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for.")
    k: int = Field(10, ge=1, le=MAX_K, description="How many chunks, the best first.")
    mode: Literal["hybrid", "semantic", "keyword"] = Field(
        "hybrid",
        description="semantic (embeddings), keyword (BM25) or hybrid (both, each weighed by "
        "how much it knows of the query).",
    )
    crawl_id: Id | None = Field(None, description="Only the pages of this crawl.")
    job_id: Id | None = Field(None, description="Only this page.")
    host: str | None = Field(
        None, min_length=1, max_length=255, description="Only the pages of this host."
    )
    url_prefix: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_URL_LENGTH,
        description="Only the pages whose URL starts with this.",
    )
    monitor_id: Id | None = Field(None, description="Only the pages this monitor watches.")
    fetched_after: Instant | None = Field(None, description="Only pages fetched at or after.")
    fetched_before: Instant | None = Field(None, description="Only pages fetched before.")
    rerank: bool = Field(
        True,
        description="Re-score the best results with the configured reranker "
        "(TASKCRAWLER_RERANK_URL); without one, nothing changes.",
    )

    def query(self, owner: str) -> SearchQuery:
        return SearchQuery(
            owner,
            self.q,
            k=self.k,
            mode=SearchMode(self.mode),
            crawl_id=self.crawl_id,
            job_id=self.job_id,
            host=self.host,
            url_prefix=self.url_prefix,
            monitor_id=self.monitor_id,
            fetched_after=self.fetched_after,
            fetched_before=self.fetched_before,
            rerank=self.rerank,
        )
