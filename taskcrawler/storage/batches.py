"""Batches of jobs submitted together, read back by id with their jobs."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from uuid import UUID

import sqlalchemy as sa

from taskcrawler.domain.jobs import Job
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.rows import JOB_COLUMNS, row_to_job, utcnow
from taskcrawler.storage.tables import job_batches, jobs


class BatchStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @unavailable_on_connection_errors
    async def create(self, owner: str, job_ids: Sequence[UUID]) -> UUID:
        batch_id = uuid.uuid4()
        async with self.db.write() as conn:
            await conn.execute(
                job_batches.insert().values(
                    id=batch_id,
                    owner=owner,
                    job_ids=[str(job_id) for job_id in job_ids],
                    created_at=utcnow(),
                )
            )
        return batch_id

    @unavailable_on_connection_errors
    async def jobs_of(self, owner: str, batch_id: UUID) -> list[Job] | None:
        """The batch's jobs in the order they were submitted; None for no such batch of
        ``owner``'s."""
        async with self.db.read() as conn:
            ids = await conn.scalar(
                sa.select(job_batches.c.job_ids).where(
                    job_batches.c.id == batch_id, job_batches.c.owner == owner
                )
            )
            if ids is None:
                return None
            wanted = [UUID(job_id) for job_id in ids]
            rows = await conn.execute(
                sa.select(*JOB_COLUMNS).where(
                    self.db.backend.any_of(jobs.c.id, wanted), jobs.c.owner == owner
                )
            )
            found = {row.id: row_to_job(row) for row in rows}
        return [found[job_id] for job_id in wanted if job_id in found]
