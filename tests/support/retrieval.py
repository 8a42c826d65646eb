"""Retrieval quality over the knowledge base of :mod:`tests.support.rag_corpus`: index its
pages through extraction, chunking and an embedder, then ask its questions in each mode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast
from uuid import UUID

from taskcrawler.domain.chunks import EmbeddedChunk, PageChunks, SearchMode, SearchQuery
from taskcrawler.domain.jobs import NewJob
from taskcrawler.embed import Embedder
from taskcrawler.extract import extract
from taskcrawler.extract.chunking import ChunkingConfig, chunk_markdown
from taskcrawler.service.search import SearchService
from taskcrawler.storage import Storage
from taskcrawler.worker.chunking import embedded_text
from tests.support.rag_corpus import TOPICS, page

BASE = "http://kb.test/kb/"


@dataclass(frozen=True, slots=True)
class Quality:
    mode: SearchMode
    top1: float
    mrr: float  # mean reciprocal rank within the first 10 (0 when not found)


async def index_corpus(storage: Storage, embedder: Embedder, owner: str = "") -> list[UUID]:
    """Every page of the corpus as a job with its chunks; the jobs' ids, by topic."""
    created = await storage.jobs.create_jobs(
        [NewJob(f"{BASE}{n}", owner=owner) for n in range(len(TOPICS))], redispatch_after=30
    )
    ids = [c.job.id for c in created]
    config = ChunkingConfig()
    for n, job_id in enumerate(ids):
        markdown = extract(page(n).encode(), url=f"{BASE}{n}", formats=["markdown"]).markdown
        chunks = chunk_markdown(markdown or "", config)
        vectors = await embedder.embed([embedded_text(c) for c in chunks])
        await storage.chunks.replace(
            PageChunks(
                job_id=job_id,
                owner=owner,
                crawl_id=None,
                model=embedder.model,
                dim=len(vectors[0]),
                chunks=[EmbeddedChunk(c, v) for c, v in zip(chunks, vectors, strict=True)],
            ),
            f"hash-{n}",
        )
    return ids


async def measure(storage: Storage, embedder: Embedder, ids: list[UUID]) -> list[Quality]:
    search = SearchService(cast(Any, None), storage.chunks, embedder)
    found = []
    for mode in SearchMode:
        top1 = 0
        reciprocal = 0.0
        for n, topic in enumerate(TOPICS):
            hits = await search.search(SearchQuery("", topic.question, k=10, mode=mode))
            ranked = list(dict.fromkeys(hit.job_id for hit in hits))
            if ranked and ranked[0] == ids[n]:
                top1 += 1
            if ids[n] in ranked:
                reciprocal += 1 / (ranked.index(ids[n]) + 1)
        found.append(Quality(mode, top1 / len(TOPICS), reciprocal / len(TOPICS)))
    return found
