"""Finished jobs in export order (``jobs.export_seq``, migration 0008), with their texts and
archived responses, read a page at a time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import sqlalchemy as sa

from taskcrawler.domain.exports import ExportPosition, GzippedResponse
from taskcrawler.domain.jobs import Job, JobStatus
from taskcrawler.storage.content import CAPTURE_PREFIX
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.rows import JOB_COLUMNS, row_to_job
from taskcrawler.storage.tables import job_contents, jobs, page_archive

#: What an export holds: a result. A CANCELLED job has none.
EXPORTED_STATUSES = (JobStatus.COMPLETED.value, JobStatus.FAILED.value)


def _position() -> Any:
    return sa.tuple_(jobs.c.export_seq, jobs.c.id)


def _after(position: ExportPosition) -> sa.ColumnElement[bool]:
    after: sa.ColumnElement[bool] = _position() > sa.tuple_(
        sa.literal(position.seq), sa.literal(position.job_id)
    )
    return after


def _exported(owner: str, crawl_id: UUID | None) -> list[sa.ColumnElement[bool]]:
    where = [
        jobs.c.owner == owner,
        jobs.c.export_seq.is_not(None),  # matches ix_jobs_export
        jobs.c.status.in_(EXPORTED_STATUSES),
    ]
    if crawl_id is not None:
        where.append(jobs.c.crawl_id == crawl_id)
    return where


class ExportStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @unavailable_on_connection_errors
    async def end(
        self,
        owner: str,
        after: ExportPosition,
        limit: int | None,
        *,
        crawl_id: UUID | None = None,
    ) -> ExportPosition | None:
        """The last position an export after ``after`` reaches now: the ``limit``-th, or the
        last one no transaction still running can precede. None when there is nothing."""
        async with self.db.read() as conn:
            # First, then the positions: a transaction that ends in between is below it anyway.
            horizon = await self.db.backend.export_horizon(conn)
            where = [*_exported(owner, crawl_id), _after(after)]
            if horizon is not None:
                where.append(jobs.c.export_seq < horizon)
            base = sa.select(jobs.c.export_seq, jobs.c.id).where(*where)
            row = None
            if limit is not None:
                nth = base.order_by(jobs.c.export_seq, jobs.c.id).offset(limit - 1).limit(1)
                row = (await conn.execute(nth)).first()
            if row is None:
                last = base.order_by(jobs.c.export_seq.desc(), jobs.c.id.desc()).limit(1)
                row = (await conn.execute(last)).first()
        return None if row is None else ExportPosition(row.export_seq, row.id)

    @unavailable_on_connection_errors
    async def jobs_between(
        self,
        owner: str,
        after: ExportPosition,
        end: ExportPosition,
        *,
        limit: int,
        crawl_id: UUID | None = None,
    ) -> list[tuple[ExportPosition, Job]]:
        """Up to ``limit`` finished jobs after ``after`` up to ``end``, in export order (of
        one crawl only, if ``crawl_id`` is given)."""
        upto = _position() <= sa.tuple_(sa.literal(end.seq), sa.literal(end.job_id))
        stmt = (
            sa.select(*JOB_COLUMNS, jobs.c.export_seq)
            .where(*_exported(owner, crawl_id), _after(after), upto)
            .order_by(jobs.c.export_seq, jobs.c.id)
            .limit(limit)
        )
        async with self.db.read() as conn:
            rows = (await conn.execute(stmt)).all()
        return [(ExportPosition(row.export_seq, row.id), row_to_job(row)) for row in rows]

    @unavailable_on_connection_errors
    async def texts(self, job_ids: Sequence[UUID]) -> dict[UUID, dict[str, str]]:
        found: dict[UUID, dict[str, str]] = {job_id: {} for job_id in job_ids}
        if not job_ids:
            return found
        stmt = sa.select(job_contents).where(
            self.db.backend.any_of(job_contents.c.job_id, job_ids),
            ~job_contents.c.format.startswith(CAPTURE_PREFIX, autoescape=True),
        )
        async with self.db.read() as conn:
            for row in await conn.execute(stmt):
                found[row.job_id][row.format] = row.body
        return found

    @unavailable_on_connection_errors
    async def archives(self, job_ids: Sequence[UUID]) -> dict[UUID, GzippedResponse]:
        """The jobs' archived responses, their bodies still gzipped."""
        if not job_ids:
            return {}
        stmt = sa.select(page_archive).where(self.db.backend.any_of(page_archive.c.job_id, job_ids))
        async with self.db.read() as conn:
            rows = (await conn.execute(stmt)).all()
        return {
            row.job_id: GzippedResponse(
                fetched_at=row.fetched_at,
                final_url=row.final_url,
                http_status=row.http_status,
                headers=dict(row.headers),
                body_gz=bytes(row.body_gz),
            )
            for row in rows
        }
