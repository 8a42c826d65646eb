"""Retrieval quality over the knowledge base of :mod:`tests.support.rag_corpus`: index its
pages through extraction, chunking and an embedder, then ask its questions in each mode."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast
from uuid import UUID

import sqlalchemy as sa

from taskcrawler.domain.chunks import (
    EmbeddedChunk,
    PageChunks,
    SearchMode,
    SearchQuery,
    embedded_text,
)
from taskcrawler.domain.jobs import NewJob
from taskcrawler.embed import Embedder
from taskcrawler.extract import extract
from taskcrawler.extract.chunking import ChunkingConfig, chunk_page
from taskcrawler.service.search import SearchService
from taskcrawler.storage import Storage
from taskcrawler.storage.tables import jobs
from tests.support.rag_corpus import TOPICS, page

BASE = "http://kb.test/kb/"


@dataclass(frozen=True, slots=True)
class Quality:
    mode: SearchMode
    top1: float
    mrr: float  # mean reciprocal rank within the first 10 (0 when not found)


@dataclass(frozen=True, slots=True)
class Page:
    url: str
    html: str


async def index_corpus(storage: Storage, embedder: Embedder, owner: str = "") -> list[UUID]:
    """Every page of the corpus as a job with its chunks; the jobs' ids, by topic."""
    pages = [Page(f"{BASE}{n}", page(n)) for n in range(len(TOPICS))]
    return await index_pages(storage, embedder, pages, owner=owner)


async def index_pages(
    storage: Storage, embedder: Embedder, pages: Sequence[Page], *, owner: str = "", batch: int = 64
) -> list[UUID]:
    """Each page as a completed job of its own, extracted, chunked, embedded and stored as the
    worker does (``batch`` pages embedded at a time); the jobs' ids, in order."""
    ids: list[UUID] = []
    for start in range(0, len(pages), 1000):
        created = await storage.jobs.create_jobs(
            [NewJob(p.url, owner=owner) for p in pages[start : start + 1000]], redispatch_after=30
        )
        ids.extend(c.job.id for c in created)
    config = ChunkingConfig()
    for start in range(0, len(pages), batch):
        extracted = [
            extract(p.html.encode(), url=p.url, formats=["markdown"])
            for p in pages[start : start + batch]
        ]
        titled = [
            {"b_id": job_id, "b_title": e.title}
            for job_id, e in zip(ids[start : start + batch], extracted, strict=True)
        ]
        async with storage.db.write() as conn:
            await conn.execute(
                jobs.update()
                .where(jobs.c.id == sa.bindparam("b_id"))
                .values(scraped_title=sa.bindparam("b_title")),
                titled,
            )
        chunked = [chunk_page(e.markdown or "", e.title, config) for e in extracted]
        vectors = await embedder.embed(
            [embedded_text(c.context, c.text) for cs in chunked for c in cs]
        )
        at = 0
        for n, chunks in enumerate(chunked):
            mine, at = vectors[at : at + len(chunks)], at + len(chunks)
            await storage.chunks.replace(
                PageChunks(
                    job_id=ids[start + n],
                    owner=owner,
                    crawl_id=None,
                    model=embedder.model,
                    dim=len(mine[0]) if mine else 0,
                    chunks=[EmbeddedChunk(c, v) for c, v in zip(chunks, mine, strict=True)],
                ),
                f"hash-{start + n}",
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
