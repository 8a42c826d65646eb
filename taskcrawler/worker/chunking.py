"""Format ``chunks``: after extraction, a page's Markdown is chunked, embedded and stored.

A page whose Markdown, chunking and model are those its stored chunks were made from is not
embedded again (a ``304`` never gets here: it is not extracted). Chunking runs in a thread and
embedding in the embedder's own (or on its server), both under the embedder's deadline, so the
event loop keeps fetching. What fails here fails the attempt with its own error code:
``vectors_unavailable`` (PostgreSQL without pgvector, final) or ``embedding_failed`` (retried
when the embedder may recover).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass, replace

from taskcrawler.domain import ErrorCode, Outcome, StorageUnavailable
from taskcrawler.domain.chunks import (
    CHUNKS_FORMAT,
    EmbeddedChunk,
    PageChunks,
    embedded_text,
)
from taskcrawler.domain.errors import VectorsUnavailable
from taskcrawler.domain.storable import storable_text
from taskcrawler.embed import Embedder, EmbeddingFailed
from taskcrawler.extract.chunking import ChunkingConfig, chunk_page
from taskcrawler.storage.ports import ChunkRepository
from taskcrawler.worker.content import format_failed

log = logging.getLogger(__name__)

#: Part of what a page's chunks are made from: chunks made before they carried their context
#: (the page's title) are made again on the page's next fetch.
CONTEXT_VERSION = 1


@dataclass(frozen=True, slots=True)
class PageChunker:
    store: ChunkRepository
    embedder: Embedder
    config: ChunkingConfig
    timeout_seconds: float = 60.0

    def source_hash(self, markdown: str, title: str | None) -> str:
        made_of = (
            f"{self.embedder.model}\0{self.config.target_tokens}\0{self.config.overlap_tokens}\0"
            f"{CONTEXT_VERSION}\0{title or ''}\0"
        )
        return hashlib.sha256((made_of + markdown).encode()).hexdigest()

    async def attach(self, outcome: Outcome, markdown: str | None) -> Outcome:
        """``outcome`` with its page's chunks stored and counted in ``result``, or the failure
        that kept them from being stored."""
        try:
            count = await self._store(outcome, storable_text(markdown or ""))
        except VectorsUnavailable as exc:
            return _failed(outcome, ErrorCode.VECTORS_UNAVAILABLE, str(exc), transient=False)
        except EmbeddingFailed as exc:
            log.warning("embedding failed for %s: %s", outcome.job.url, exc)
            return _failed(outcome, ErrorCode.EMBEDDING_FAILED, str(exc), transient=exc.transient)
        except StorageUnavailable as exc:
            return _failed(
                outcome, ErrorCode.EMBEDDING_FAILED, f"chunks not stored: {exc}", transient=True
            )
        result = dict(outcome.result or {})
        result["chunks"] = {"count": count, "model": self.embedder.model}
        return replace(outcome, result=result)

    async def _store(self, outcome: Outcome, markdown: str) -> int | None:
        """How many chunks the page has now; None when they are unchanged."""
        job = outcome.job
        if not await self.store.vectors_available():
            raise VectorsUnavailable(
                "this PostgreSQL has no pgvector: install it, then run `taskcrawler reindex`"
            )
        title = outcome.scraped_title
        source_hash = self.source_hash(markdown, title)
        if await self.store.source_hash(job.id) == source_hash:
            return None
        try:
            chunks = await asyncio.wait_for(
                asyncio.to_thread(chunk_page, markdown, title, self.config), self.timeout_seconds
            )
        except TimeoutError:
            raise EmbeddingFailed("chunking overran its deadline", transient=False) from None
        vectors = await self.embedder.embed([embedded_text(c.context, c.text) for c in chunks])
        page = PageChunks(
            job_id=job.id,
            owner=job.owner,
            crawl_id=getattr(job, "crawl_id", None),
            model=self.embedder.model,
            dim=len(vectors[0]) if vectors else 0,
            chunks=[EmbeddedChunk(c, v) for c, v in zip(chunks, vectors, strict=True)],
        )
        await self.store.replace(page, source_hash, lease_token=job.lease_token)
        return len(chunks)


async def with_chunks(
    chunker: PageChunker | None, outcome: Outcome, markdown: str | None
) -> Outcome:
    """What the worker calls after extracting a page: chunks when the job asked for them."""
    if not outcome.succeeded or CHUNKS_FORMAT not in outcome.job.formats:
        return outcome
    if chunker is None:
        message = "this worker has no embedder"
        return _failed(outcome, ErrorCode.EMBEDDING_FAILED, message, transient=False)
    return await chunker.attach(outcome, markdown)


def _failed(outcome: Outcome, code: ErrorCode, message: str, *, transient: bool) -> Outcome:
    return format_failed(outcome, code, message, transient=transient)
