"""Chunks: what both backends do the same way (reading, replacing a page's, re-embedding), in
SQLAlchemy Core. Search and the vectors' own storage differ: see ``postgres/chunks.py`` and
``sqlite/chunks.py``, which build on :class:`ChunkStoreBase`."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import Any
from uuid import UUID

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain.chunks import (
    UNEMBEDDED,
    Chunk,
    PageChunks,
    Ranked,
    SearchHit,
    SearchQuery,
    StaleChunk,
    StoredChunk,
)
from taskcrawler.domain.jobs import JobStatus
from taskcrawler.domain.urls import host_filter
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.tables import (
    UTCDateTime,
    chunks,
    jobs,
    monitor_crawls,
    monitor_pages,
)

#: What a search answers with: the chunk, and the page it is from (what a reader cites).
HIT_COLUMNS = (
    chunks.c.job_id,
    jobs.c.url,
    jobs.c.scraped_title,
    chunks.c.chunk_index,
    chunks.c.text,
    chunks.c.heading_path,
    chunks.c.start_offset,
    chunks.c.end_offset,
    sa.func.coalesce(jobs.c.fetched_at, jobs.c.finished_at, type_=UTCDateTime()).label(
        "fetched_at"
    ),
)


def hit(row: Any, score: float) -> SearchHit:
    heading_path = row.heading_path
    if isinstance(heading_path, str):  # raw SQL on PostgreSQL: jsonb as its text
        heading_path = orjson.loads(heading_path)
    return SearchHit(
        job_id=row.job_id,
        url=row.url,
        title=row.scraped_title,
        chunk_index=row.chunk_index,
        text=row.text,
        score=float(score),
        heading_path=tuple(heading_path or ()),
        start=row.start_offset,
        end=row.end_offset,
        fetched_at=row.fetched_at,
    )


def read_ranking(hits: Sequence[SearchHit]) -> list[Ranked]:
    """``hits`` (best first) as a ranking whose chunks are read already."""
    return [Ranked((h.job_id, h.chunk_index), h.score, h) for h in hits]


#: The chunks of the ids ``:ids`` with what a search answers: built once, as building and
#: keying a statement for SQLAlchemy's cache costs more than running it.
HITS_BY_ID = (
    sa.select(chunks.c.id, *HIT_COLUMNS)
    .join(jobs, jobs.c.id == chunks.c.job_id)
    .where(chunks.c.id.in_(sa.bindparam("ids", expanding=True)))
)


async def read_hits(conn: AsyncConnection, ids: Sequence[Hashable]) -> dict[Hashable, SearchHit]:
    """The chunks of ``ids`` that still exist, by id (their scores 0)."""
    return {row.id: hit(row, 0.0) for row in await conn.execute(HITS_BY_ID, {"ids": list(ids)})}


def like_prefix(prefix: str) -> str:
    """A LIKE pattern for the strings that start with ``prefix`` (its wildcards escaped by
    ``\\``)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def chunk_rows(page: PageChunks, source_hash: str) -> list[dict[str, Any]]:
    """A row per chunk; ``vector`` is each backend's to encode."""
    return [
        {
            "job_id": page.job_id,
            "owner": page.owner,
            "crawl_id": page.crawl_id,
            "chunk_index": item.chunk.index,
            "text": item.chunk.text,
            "heading_path": list(item.chunk.heading_path),
            "token_count": item.chunk.token_count,
            "context": item.chunk.context,
            "start_offset": item.chunk.start,
            "end_offset": item.chunk.end,
            "model": page.model,
            "dim": page.dim,
            "source_hash": source_hash,
            "vector": item.vector,
        }
        for item in page.chunks
    ]


def scope(query: SearchQuery) -> list[sa.ColumnElement[bool]]:
    """The caller's own chunks, narrowed by the query's filters: conditions on ``chunks`` and,
    for the page's host, URL and fetch time, on ``jobs`` (which the statement joins)."""
    return [chunks.c.owner == query.owner, *narrowing(query)]


def narrowing(query: SearchQuery) -> list[sa.ColumnElement[bool]]:
    """:func:`scope`'s conditions but the owner's: the query's filters alone."""
    conditions: list[sa.ColumnElement[bool]] = []
    if query.crawl_id is not None:
        conditions.append(chunks.c.crawl_id == query.crawl_id)
    if query.job_id is not None:
        conditions.append(chunks.c.job_id == query.job_id)
    if query.host is not None:
        conditions.append(jobs.c.host == host_filter(query.host))
    if query.url_prefix is not None:
        # Not LIKE: SQLite's (the one this serves) takes an ASCII letter for either case.
        prefix = query.url_prefix
        conditions.append(sa.func.substr(jobs.c.url, 1, len(prefix)) == prefix)
    fetched = sa.func.coalesce(jobs.c.fetched_at, jobs.c.finished_at, type_=UTCDateTime())
    if query.fetched_after is not None:
        conditions.append(fetched >= query.fetched_after)
    if query.fetched_before is not None:
        conditions.append(fetched < query.fetched_before)
    if query.monitor_id is not None:
        pages = sa.select(monitor_pages.c.job_id).where(
            monitor_pages.c.monitor_id == query.monitor_id
        )
        rounds = sa.select(monitor_crawls.c.crawl_id).where(
            monitor_crawls.c.monitor_id == query.monitor_id
        )
        conditions.append(sa.or_(chunks.c.job_id.in_(pages), chunks.c.crawl_id.in_(rounds)))
    return conditions


class ChunkStoreBase:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def settle(self) -> None:
        """Nothing runs in the background here."""

    @unavailable_on_connection_errors
    async def source_hash(self, job_id: UUID) -> str | None:
        async with self.db.read() as conn:
            return (
                await conn.execute(
                    sa.select(chunks.c.source_hash).where(chunks.c.job_id == job_id).limit(1)
                )
            ).scalar()

    @unavailable_on_connection_errors
    async def replace(
        self, page: PageChunks, source_hash: str, *, lease_token: UUID | None = None
    ) -> None:
        """The page's chunks become ``page``'s, in one transaction; with a ``lease_token``,
        only while its job is still PROCESSING under that lease: a job cancelled while it was
        fetched keeps no chunks of the run that was stopped."""
        async with self.db.write() as conn:
            if lease_token is not None:
                held = await conn.scalar(
                    sa.select(jobs.c.id)
                    .where(
                        jobs.c.id == page.job_id,
                        jobs.c.lease_token == lease_token,
                        jobs.c.status == JobStatus.PROCESSING.value,
                    )
                    # PostgreSQL: a cancel waits for these chunks to commit, then sees them.
                    .with_for_update(read=True)
                )
                if held is None:
                    return
            await conn.execute(chunks.delete().where(chunks.c.job_id == page.job_id))
            if page.chunks:
                await self._insert(conn, chunk_rows(page, source_hash))

    @unavailable_on_connection_errors
    async def remake(self, job_id: UUID, made: Sequence[Chunk], *, counted: bool = False) -> bool:
        """If the job has chunks, or ``counted`` (its result counts its chunks: none, perhaps,
        of a Markdown that was empty), they become ``made``, not embedded (model
        :data:`UNEMBEDDED`, no vector) until a re-index: a page extracted again must not keep
        chunks whose offsets and text are of its old Markdown, nor lack the chunks of the text
        it has now; embedding here would hold a re-extraction up on the embedder. Whether its
        chunks were made again."""
        async with self.db.write() as conn:
            held = (
                await conn.execute(
                    sa.select(jobs.c.owner, jobs.c.crawl_id).where(jobs.c.id == job_id)
                )
            ).first()
            if held is None:
                return False
            if not counted:
                has = sa.select(chunks.c.job_id).where(chunks.c.job_id == job_id).limit(1)
                if (await conn.execute(has)).first() is None:
                    return False
            await conn.execute(chunks.delete().where(chunks.c.job_id == job_id))
            if made:
                rows = [
                    {
                        "job_id": job_id,
                        "owner": held.owner,
                        "crawl_id": held.crawl_id,
                        "chunk_index": chunk.index,
                        "text": chunk.text,
                        "heading_path": list(chunk.heading_path),
                        "token_count": chunk.token_count,
                        "context": chunk.context,
                        "start_offset": chunk.start,
                        "end_offset": chunk.end,
                        "model": UNEMBEDDED,
                        "dim": 0,
                        # No hash a page's Markdown gives: its next fetch embeds it.
                        "source_hash": "",
                        "vector": None,
                    }
                    for chunk in made
                ]
                await self._insert(conn, rows)
        return True

    async def _insert(self, conn: AsyncConnection, rows: Sequence[Mapping[str, Any]]) -> None:
        """``rows`` stored; a row's ``vector`` None stores none."""
        raise NotImplementedError

    async def semantic(
        self, query: SearchQuery, *, model: str, vector: Sequence[float]
    ) -> list[SearchHit]:
        raise NotImplementedError

    async def keyword(self, query: SearchQuery) -> list[SearchHit]:
        raise NotImplementedError

    async def semantic_ranking(
        self, query: SearchQuery, *, model: str, vector: Sequence[float]
    ) -> list[Ranked]:
        """:meth:`semantic`'s hits, read with their ranking."""
        return read_ranking(await self.semantic(query, model=model, vector=vector))

    async def keyword_ranking(self, query: SearchQuery) -> list[Ranked]:
        """:meth:`keyword`'s hits, read with their ranking."""
        return read_ranking(await self.keyword(query))

    async def hits(self, ranked: Sequence[Ranked]) -> list[SearchHit]:
        """The chunks of ``ranked`` with their scores there; those left unread (their keys the
        chunks' ids) read in one statement."""
        unread = [item.key for item in ranked if item.hit is None]
        read = await self._read_hits(unread) if unread else {}
        found = [(item, item.hit or read.get(item.key)) for item in ranked]
        return [replace(chunk, score=item.score) for item, chunk in found if chunk is not None]

    @unavailable_on_connection_errors
    async def _read_hits(self, ids: Sequence[Hashable]) -> dict[Hashable, SearchHit]:
        async with self.db.read() as conn:
            return await read_hits(conn, ids)

    @unavailable_on_connection_errors
    async def list_for_job(self, job_id: UUID, *, owner: str) -> list[StoredChunk]:
        stmt = (
            sa.select(
                chunks.c.chunk_index,
                chunks.c.text,
                chunks.c.heading_path,
                chunks.c.token_count,
                chunks.c.model,
                chunks.c.dim,
                chunks.c.start_offset,
                chunks.c.end_offset,
            )
            .where(chunks.c.job_id == job_id, chunks.c.owner == owner)
            .order_by(chunks.c.chunk_index)
        )
        async with self.db.read() as conn:
            rows = (await conn.execute(stmt)).all()
        return [
            StoredChunk(
                index=row.chunk_index,
                text=row.text,
                heading_path=tuple(row.heading_path),
                token_count=row.token_count,
                model=row.model,
                dim=row.dim,
                start=row.start_offset,
                end=row.end_offset,
            )
            for row in rows
        ]

    @unavailable_on_connection_errors
    async def stale(self, model: str, *, after_id: int = 0, limit: int = 256) -> list[StaleChunk]:
        """Chunks embedded by another model than ``model`` (or not at all), or made before
        chunks carried their context, by id, for a re-index."""
        stmt = (
            sa.select(chunks.c.id, chunks.c.text, chunks.c.heading_path, jobs.c.scraped_title)
            .join(jobs, jobs.c.id == chunks.c.job_id)
            .where(
                chunks.c.id > after_id,
                sa.or_(self._stale_condition(model), chunks.c.context.is_(None)),
            )
            .order_by(chunks.c.id)
            .limit(limit)
        )
        async with self.db.read() as conn:
            return [
                StaleChunk(row.id, row.text, tuple(row.heading_path), row.scraped_title)
                for row in await conn.execute(stmt)
            ]

    def _stale_condition(self, model: str) -> sa.ColumnElement[bool]:
        return chunks.c.model != model

    @unavailable_on_connection_errors
    async def count(self, *, owner: str | None = None) -> int:
        stmt = sa.select(sa.func.count()).select_from(chunks)
        if owner is not None:
            stmt = stmt.where(chunks.c.owner == owner)
        async with self.db.read() as conn:
            return int((await conn.execute(stmt)).scalar_one())
