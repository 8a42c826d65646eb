"""Texts, links and raw archives of pages: written with the outcome, read by the API and by
``taskcrawler reextract``."""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from isal import igzip
from sqlalchemy.engine import Connection

from taskcrawler.domain.pages import (
    Archived,
    Capture,
    ContentRecord,
    FetchedPage,
    Link,
    Reextracted,
    Screenshot,
    StoredLink,
)
from taskcrawler.domain.scrape_options import ScrapeOptions
from taskcrawler.storage.backend import Backend
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.rows import formats_of, url_key, utcnow
from taskcrawler.storage.tables import job_contents, job_links, job_screenshots, jobs, page_archive

#: Fast compression: the archive is written for every page, on the worker's hot path, and ISA-L
#: at level 1 measured three times as fast as zlib's level 1 for the same size (plain gzip).
ARCHIVE_COMPRESSLEVEL = 1
#: A batch archiving up to this many bytes is packed on the event loop (about 4 ms here).
INLINE_PACK_BYTES = 2 * 1024 * 1024
#: The files of a job's screenshot and pdf actions are rows of ``job_contents`` (base64 text)
#: whose format starts with this; they are never one of the job's texts.
CAPTURE_PREFIX = "action-"
_CAPTURE_NAMES = {"screenshot": "png", "pdf": "pdf"}


def capture_format(kind: str, index: int) -> str:
    """The ``job_contents`` format of a job's ``index``-th file of ``kind``."""
    return f"{CAPTURE_PREFIX}{_CAPTURE_NAMES[kind]}-{index}"


def _capture_rows(job_id: UUID, captures: Sequence[Capture]) -> list[dict[str, Any]]:
    counted: dict[str, int] = {}
    rows = []
    for capture in captures:
        index = counted.get(capture.kind, 0)
        counted[capture.kind] = index + 1
        body = base64.b64encode(capture.data).decode("ascii")
        rows.append({"job_id": job_id, "format": capture_format(capture.kind, index), "body": body})
    return rows


def _link_key(url: str) -> str:
    try:
        return url_key(url)
    except ValueError:  # a link TaskCrawler could not scrape itself is still recorded
        return hashlib.sha256(url.encode()).hexdigest()


@dataclass(slots=True)
class ContentRows:
    """The rows a batch of records writes, built before the transaction that writes them."""

    job_ids: list[UUID] = field(default_factory=list)
    texts: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)
    archives: list[dict[str, Any]] = field(default_factory=list)
    screenshots: list[dict[str, Any]] = field(default_factory=list)
    # The jobs whose earlier texts, links and archive are deleted first. Links and the archive
    # are replaced only when the record carries them.
    retexted: list[UUID] = field(default_factory=list)
    relinked: list[UUID] = field(default_factory=list)
    rearchived: list[UUID] = field(default_factory=list)
    reshot: list[UUID] = field(default_factory=list)
    # The jobs whose actions' files are replaced (kept by a record that made none).
    recaptured: list[UUID] = field(default_factory=list)

    def only(self, job_ids: set[UUID]) -> ContentRows:
        """The rows of ``job_ids`` alone (the jobs a transaction found it still holds)."""
        return ContentRows(
            [i for i in self.job_ids if i in job_ids],
            [row for row in self.texts if row["job_id"] in job_ids],
            [row for row in self.links if row["job_id"] in job_ids],
            [row for row in self.archives if row["job_id"] in job_ids],
            [row for row in self.screenshots if row["job_id"] in job_ids],
            [i for i in self.retexted if i in job_ids],
            [i for i in self.relinked if i in job_ids],
            [i for i in self.rearchived if i in job_ids],
            [i for i in self.reshot if i in job_ids],
            [i for i in self.recaptured if i in job_ids],
        )


def content_rows(records: Sequence[ContentRecord]) -> ContentRows:
    with_links = [r for r in records if r.content.links is not None]
    return ContentRows(
        job_ids=[r.job_id for r in records],
        texts=[
            {"job_id": r.job_id, "format": fmt, "body": body}
            for r in records
            for fmt, body in r.content.texts.items()
        ]
        + [row for r in records for row in _capture_rows(r.job_id, r.content.captures or ())],
        links=[_link_row(r, link) for r in with_links for link in r.content.links or ()],
        archives=[
            _archive_row(r.job_id, r.content.archive)
            for r in records
            if r.content.archive is not None
        ],
        screenshots=[
            _screenshot_row(r.job_id, r.content.screenshot)
            for r in records
            if r.content.screenshot is not None
        ],
        retexted=[r.job_id for r in records if r.replaces],
        relinked=[r.job_id for r in with_links if r.replaces],
        rearchived=[r.job_id for r in records if r.replaces and r.content.archive is not None],
        reshot=[r.job_id for r in records if r.replaces and r.content.screenshot is not None],
        recaptured=[r.job_id for r in records if r.replaces and r.content.captures is not None],
    )


async def prepare_content(records: Sequence[ContentRecord]) -> ContentRows:
    """:func:`content_rows` on the event loop, or in a thread when the batch's bodies are big.

    A thread only looks free (gzip and sha256 release the GIL): it takes the GIL back for every
    row, waits for a busy loop each time, and the commit waits for it, many times longer than
    the few milliseconds a usual batch costs on the loop. Big bodies would stall the loop, so
    a batch archiving more than :data:`INLINE_PACK_BYTES` goes to a thread.
    """
    if not records:
        return ContentRows()
    if _archived_bytes(records) <= INLINE_PACK_BYTES:
        return content_rows(records)
    return await asyncio.to_thread(content_rows, records)


def _archived_bytes(records: Sequence[ContentRecord]) -> int:
    archived = sum(len(r.content.archive.body) for r in records if r.content.archive is not None)
    return archived + sum(len(c.data) for r in records for c in r.content.captures or ())


def write_content(conn: Connection, backend: Backend, rows: ContentRows) -> None:
    """Write texts, links and archives inside the caller's transaction, replacing what an
    earlier run left. Links and the archive are replaced only when the record carried them."""
    if not rows.job_ids:
        return
    captured = job_contents.c.format.startswith(CAPTURE_PREFIX, autoescape=True)
    for table, replaced, which in (
        (job_contents, rows.retexted, ~captured),
        (job_contents, rows.recaptured, captured),
        (job_links, rows.relinked, None),
        (page_archive, rows.rearchived, None),
        (job_screenshots, rows.reshot, None),
    ):
        if replaced:
            stmt = table.delete().where(backend.any_of(table.c.job_id, replaced))
            conn.execute(stmt if which is None else stmt.where(which))
    for table, values in (
        (job_contents, rows.texts),
        (job_links, rows.links),
        (page_archive, rows.archives),
        (job_screenshots, rows.screenshots),
    ):
        if values:
            backend.insert_rows(conn, table, values)


def _link_row(record: ContentRecord, link: Link) -> dict[str, Any]:
    return {
        "job_id": record.job_id,
        "owner": record.owner,
        "url": link.url,
        "url_key": _link_key(link.url),
        "text": link.text or None,
        "rel": " ".join(link.rel) or None,
        "internal": link.internal,
        "nofollow": link.nofollow,
    }


def _archive_row(job_id: UUID, page: FetchedPage) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "fetched_at": page.fetched_at or utcnow(),
        "final_url": page.final_url,
        "http_status": page.status,
        "headers": page.headers,
        "content_type": page.content_type,
        "charset": page.charset,
        "sha256": hashlib.sha256(page.body).hexdigest(),
        "size": len(page.body),
        "body_gz": igzip.compress(page.body, compresslevel=ARCHIVE_COMPRESSLEVEL, mtime=0),
    }


def _screenshot_row(job_id: UUID, shot: Screenshot) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "taken_at": utcnow(),
        "width": shot.width,
        "height": shot.height,
        "cut": shot.cut,
        "png": shot.png,
    }


def _stored_link(row: Any) -> StoredLink:
    return StoredLink(
        id=row.id,
        job_id=row.job_id,
        url=row.url,
        text=row.text,
        rel=tuple((row.rel or "").split()),
        internal=row.internal,
        nofollow=row.nofollow,
        source_url=row._mapping.get("source_url"),
    )


class ContentStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @unavailable_on_connection_errors
    async def text(self, job_id: UUID, fmt: str) -> str | None:
        async with self.db.read() as conn:
            body = await conn.scalar(
                sa.select(job_contents.c.body).where(
                    job_contents.c.job_id == job_id, job_contents.c.format == fmt
                )
            )
        return str(body) if body is not None else None

    @unavailable_on_connection_errors
    async def texts_of(
        self, job_ids: Sequence[UUID], formats: Sequence[str]
    ) -> dict[UUID, dict[str, str]]:
        """The ``formats`` the jobs have stored, by job, in one query."""
        found: dict[UUID, dict[str, str]] = {job_id: {} for job_id in job_ids}
        if not job_ids or not formats:
            return found
        stmt = sa.select(job_contents.c.job_id, job_contents.c.format, job_contents.c.body).where(
            self.db.backend.any_of(job_contents.c.job_id, list(job_ids)),
            job_contents.c.format.in_(list(formats)),
        )
        async with self.db.read() as conn:
            for job_id, fmt, body in await conn.execute(stmt):
                found[job_id][fmt] = str(body)
        return found

    @unavailable_on_connection_errors
    async def screenshot(self, job_id: UUID) -> Screenshot | None:
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(job_screenshots).where(job_screenshots.c.job_id == job_id)
                )
            ).first()
        if row is None:
            return None
        return Screenshot(bytes(row.png), row.width, row.height, bool(row.cut))

    @unavailable_on_connection_errors
    async def capture(self, job_id: UUID, kind: str, index: int) -> bytes | None:
        """The ``index``-th file of the job's ``kind`` actions (screenshot, pdf), if stored."""
        body = await self.text(job_id, capture_format(kind, index))
        return None if body is None else base64.b64decode(body)

    @unavailable_on_connection_errors
    async def links_of(self, job_id: UUID, *, after: int = 0, limit: int = 100) -> list[StoredLink]:
        async with self.db.read() as conn:
            rows = await conn.execute(
                sa.select(job_links)
                .where(job_links.c.job_id == job_id, job_links.c.id > after)
                .order_by(job_links.c.id)
                .limit(limit)
            )
        return [_stored_link(row) for row in rows]

    @unavailable_on_connection_errors
    async def backlinks(
        self, owner: str, target_url: str, *, after: int = 0, limit: int = 100
    ) -> list[StoredLink]:
        """Links from ``owner``'s scraped pages to ``target_url`` (normalized), oldest first."""
        async with self.db.read() as conn:
            rows = await conn.execute(
                sa.select(job_links, jobs.c.url.label("source_url"))
                .join(jobs, jobs.c.id == job_links.c.job_id)
                .where(
                    job_links.c.owner == owner,
                    job_links.c.url_key == _link_key(target_url),
                    job_links.c.id > after,
                )
                .order_by(job_links.c.id)
                .limit(limit)
            )
        return [_stored_link(row) for row in rows]

    @unavailable_on_connection_errors
    async def rewrite_results(self, results: Sequence[Reextracted]) -> None:
        """Replace stored results with fresh extractions of the archived bodies."""
        rows = await prepare_content([r.record for r in results])
        backend = self.db.backend

        def rewrite(conn: Connection) -> None:
            conn.execute(
                jobs.update()
                .where(jobs.c.id == sa.bindparam("b_id"))
                .values(scraped_title=sa.bindparam("title"), result=sa.bindparam("result")),
                [{"b_id": r.record.job_id, "title": r.title, "result": r.result} for r in results],
            )
            write_content(conn, backend, rows)

        await self.db.run_write(rewrite)

    async def archived(self, *, batch: int = 200) -> AsyncIterator[list[Archived]]:
        """Every archived page, in batches, for re-extraction."""
        after: UUID | None = None
        while True:
            stmt = _ARCHIVED.order_by(page_archive.c.job_id).limit(batch)
            if after is not None:
                stmt = stmt.where(page_archive.c.job_id > after)
            async with self.db.read() as conn:
                rows = (await conn.execute(stmt)).all()
            if not rows:
                return
            yield [_archived(row) for row in rows]
            after = rows[-1].job_id


#: Archived bodies bigger than this are decompressed off the event loop.
INLINE_INFLATE_BYTES = 2 * 1024 * 1024


async def archived_copy(db: Database, job_id: UUID) -> Archived | None:
    """The job's stored raw page, with its formats and result, or None when none is kept."""
    async with db.read() as conn:
        row = (await conn.execute(_ARCHIVED.where(page_archive.c.job_id == job_id))).first()
    if row is None:
        return None
    if row.size > INLINE_INFLATE_BYTES:
        return await asyncio.to_thread(_archived, row)
    return _archived(row)


_ARCHIVED = sa.select(
    page_archive, jobs.c.formats, jobs.c.owner, jobs.c.url, jobs.c.result, jobs.c.options
).join(jobs, jobs.c.id == page_archive.c.job_id)


def _archived(row: Any) -> Archived:
    return Archived(
        job_id=row.job_id,
        owner=row.owner,
        formats=formats_of(row.formats),
        page=FetchedPage(
            url=row.url,
            final_url=row.final_url,
            status=row.http_status,
            headers=dict(row.headers),
            content_type=row.content_type,
            charset=row.charset,
            body=gzip.decompress(row.body_gz),
            fetched_at=row.fetched_at,
        ),
        result=row.result,
        options=ScrapeOptions.from_json(row.options),
    )
