"""Jobs as the API sees them: submit idempotently, read, list, cancel, re-run."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import sqlalchemy as sa

from taskcrawler.domain import Job
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.rows import (
    JOB_COLUMNS,
    PENDING,
    Created,
    NewJob,
    row_to_job,
    url_key,
    utcnow,
)
from taskcrawler.storage.tables import jobs


class JobStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @unavailable_on_connection_errors
    async def create_jobs(
        self, requests: Sequence[NewJob], *, redispatch_after: float
    ) -> list[Created]:
        """Insert new jobs, or find the existing ones, in one round trip for the insert.

        Idempotency is the unique (owner, url_key) index with ON CONFLICT DO NOTHING: atomic, so
        concurrent submissions of one URL create exactly one row, never check-then-insert.
        """
        now = utcnow()
        keys = [(r.owner, url_key(r.url)) for r in requests]
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for request, key in zip(requests, keys, strict=True):
            rows.setdefault(
                key,
                {
                    "id": uuid.uuid4(),
                    "owner": request.owner,
                    "url": request.url,
                    "url_key": key[1],
                    "host": (urlsplit(request.url).hostname or "").lower(),
                    "status": PENDING,
                    "retry_count": 0,
                    "created_at": now,
                    "dispatch_at": now + timedelta(seconds=redispatch_after),
                },
            )
        async with self.db.write() as conn:
            stmt = (
                self.db.insert(jobs)
                .values(list(rows.values()))
                .on_conflict_do_nothing(index_elements=["owner", "url_key"])
                .returning(*JOB_COLUMNS)
            )
            inserted = {job.id: job for job in map(row_to_job, await conn.execute(stmt))}
            missing = [k for k, row in rows.items() if row["id"] not in inserted]
            existing: dict[tuple[str, str], Job] = {}
            if missing:
                found = await conn.execute(
                    sa.select(*JOB_COLUMNS, jobs.c.owner, jobs.c.url_key).where(
                        sa.tuple_(jobs.c.owner, jobs.c.url_key).in_(missing)
                    )
                )
                for row in found:
                    existing[(row.owner, row.url_key)] = row_to_job(row)
        results: list[Created] = []
        seen: set[UUID] = set()
        for key in keys:
            row_id = rows[key]["id"]
            if row_id in inserted:
                results.append(Created(inserted[row_id], created=row_id not in seen))
                seen.add(row_id)
            else:
                results.append(Created(existing[key], created=False))
        return results

    @unavailable_on_connection_errors
    async def get_job(self, job_id: UUID, *, owner: str = "") -> Job | None:
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(*JOB_COLUMNS).where(jobs.c.id == job_id, jobs.c.owner == owner)
                )
            ).first()
        return row_to_job(row) if row else None
