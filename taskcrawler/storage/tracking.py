"""The run history Firecrawl's ``changeTracking`` reads and adds to: the ``run_contents`` rows
monitors keep (a run's Markdown and text in one compressed blob), for any job of the key."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import sqlalchemy as sa

from taskcrawler.domain.change_tracking import Previous
from taskcrawler.domain.runs import RunContent
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.tables import run_contents


class TrackingStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @unavailable_on_connection_errors
    async def previous(self, job_id: UUID, before_run: int) -> Previous | None:
        """The job's latest kept run before ``before_run`` that read something."""
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(run_contents.c.fetched_at, run_contents.c.content_run)
                    .where(
                        run_contents.c.job_id == job_id,
                        run_contents.c.run < before_run,
                        run_contents.c.content_run.is_not(None),
                    )
                    .order_by(run_contents.c.run.desc())
                    .limit(1)
                )
            ).first()
            if row is None:
                return None
            blob = await conn.scalar(
                sa.select(run_contents.c.blob).where(
                    run_contents.c.job_id == job_id, run_contents.c.run == row.content_run
                )
            )
        if blob is None:
            return None
        return Previous(row.fetched_at, RunContent.decode(bytes(blob)))

    @unavailable_on_connection_errors
    async def keep(
        self,
        job_id: UUID,
        run: int,
        *,
        fetched_at: datetime,
        http_status: int | None,
        status: str,
        content: RunContent,
    ) -> None:
        """Keep what run ``run`` read, unless the run is kept already (by a monitor, or by
        another request reading the same run)."""
        async with self.db.write() as conn:
            kept = await conn.scalar(
                sa.select(sa.func.count())
                .select_from(run_contents)
                .where(run_contents.c.job_id == job_id, run_contents.c.run == run)
            )
            if kept:
                return
            await conn.execute(
                run_contents.insert().values(
                    job_id=job_id,
                    run=run,
                    fetched_at=fetched_at,
                    http_status=http_status,
                    status=status,
                    digest=content.digest,
                    content_run=run,
                    metadata={},
                    blob=content.encode(),
                )
            )
