"""Firecrawl's webhooks of crawls and batch scrapes: the hooks, the pages they announced, and
their deliveries, written to the webhook outbox in the transaction that records what was
announced (:mod:`taskcrawler.firecrawl.hooks` says what is sent).

A hook is taken by one worker at a time under a lease (``reading_until``). A page is announced
once per finish: ``firecrawl_hook_pages`` keeps the job's ``export_seq`` of the finish that was
announced, so a page finished by a transaction that commits late is still found, and a page
that runs again (its job re-run) is announced again.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain.crawls import CrawlStatus
from taskcrawler.domain.jobs import Job, JobStatus
from taskcrawler.domain.webhooks import FIRECRAWL_STYLE
from taskcrawler.firecrawl.hooks import (
    ENDING_DELAY_SECONDS,
    ENDINGS,
    Announcement,
    FirecrawlHook,
    HookEvent,
    HookProgress,
)
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.rows import JOB_COLUMNS, row_to_job, utcnow
from taskcrawler.storage.tables import (
    crawls,
    firecrawl_hook_pages,
    firecrawl_hooks,
    job_batches,
    jobs,
    webhook_deliveries,
)

hooks = firecrawl_hooks
_FETCHED = (JobStatus.COMPLETED.value, JobStatus.FAILED.value)
_UNFINISHED = (JobStatus.PENDING.value, JobStatus.PROCESSING.value)


class FirecrawlHookStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @unavailable_on_connection_errors
    async def create(self, hook: FirecrawlHook) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                hooks.insert().values(
                    id=hook.id,
                    owner=hook.owner,
                    kind=hook.kind,
                    target_id=hook.target_id,
                    url=hook.url,
                    headers=[list(pair) for pair in hook.headers] or None,
                    metadata=dict(hook.metadata) if hook.metadata else None,
                    events=list(hook.events),
                    api_url=hook.api_url,
                    created_at=utcnow(),
                )
            )

    @unavailable_on_connection_errors
    async def claim(self, *, limit: int, lease_seconds: float) -> list[FirecrawlHook]:
        """Up to ``limit`` open hooks no other worker holds, each for ``lease_seconds``."""
        now = utcnow()
        free = sa.and_(
            hooks.c.finished_at.is_(None),
            sa.or_(hooks.c.reading_until.is_(None), hooks.c.reading_until < now),
        )
        taken = (
            sa.select(hooks.c.id)
            .where(free)
            .order_by(hooks.c.created_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        # Most passes find none: a read says so without taking the writer (SQLite's is the
        # API's too) twice a second for nothing.
        async with self.db.read() as conn:
            if (await conn.execute(sa.select(hooks.c.id).where(free).limit(1))).first() is None:
                return []
        async with self.db.write() as conn:
            rows = await conn.execute(
                hooks.update()
                .where(hooks.c.id.in_(taken.scalar_subquery()), free)
                .values(reading_until=now + timedelta(seconds=lease_seconds))
                .returning(*hooks.c)
            )
            return [_row_to_hook(row) for row in rows]

    @unavailable_on_connection_errors
    async def unannounced(self, hook: FirecrawlHook, *, limit: int) -> list[tuple[Job, int]]:
        """The hook's fetched pages not announced for their latest finish, oldest finish
        first, with that finish's ``export_seq``."""
        announced = sa.exists().where(
            firecrawl_hook_pages.c.hook_id == hook.id,
            firecrawl_hook_pages.c.job_id == jobs.c.id,
            firecrawl_hook_pages.c.seq == jobs.c.export_seq,
        )
        async with self.db.read() as conn:
            target = await _target(conn, hook)
            rows = await conn.execute(
                sa.select(*JOB_COLUMNS, jobs.c.export_seq)
                .where(
                    target,
                    jobs.c.owner == hook.owner,
                    jobs.c.status.in_(_FETCHED),
                    jobs.c.export_seq.is_not(None),
                    ~announced,
                )
                .order_by(jobs.c.export_seq, jobs.c.id)
                .limit(limit)
            )
            return [(row_to_job(row), int(row.export_seq)) for row in rows]

    @unavailable_on_connection_errors
    async def progress(self, hook: FirecrawlHook) -> HookProgress:
        async with self.db.read() as conn:
            target = await _target(conn, hook)
            pages, completed, unfinished = (
                await conn.execute(
                    sa.select(
                        sa.func.count(),
                        sa.func.count().filter(jobs.c.status == JobStatus.COMPLETED.value),
                        sa.func.count().filter(jobs.c.status.in_(_UNFINISHED)),
                    ).where(target, jobs.c.owner == hook.owner)
                )
            ).one()
            finished = not unfinished
            if hook.kind == "crawl":
                status = await conn.scalar(
                    sa.select(crawls.c.status).where(crawls.c.id == hook.target_id)
                )
                finished = status != CrawlStatus.RUNNING.value
        return HookProgress(int(pages), int(completed), finished)

    @unavailable_on_connection_errors
    async def first_job(self, hook: FirecrawlHook) -> UUID | None:
        """A job of the hook's crawl or batch, to file its crawl-wide deliveries under."""
        async with self.db.read() as conn:
            target = await _target(conn, hook)
            return await conn.scalar(
                sa.select(jobs.c.id)
                .where(target, jobs.c.owner == hook.owner)
                .order_by(jobs.c.created_at, jobs.c.id)
                .limit(1)
            )

    @unavailable_on_connection_errors
    async def record(self, hook: FirecrawlHook, announcement: Announcement) -> bool:
        """Queue the announcement's deliveries, mark its pages announced and hand the hook
        back, in one transaction; nothing when the lease was lost meanwhile (another worker
        took the hook: it announces them). Returns whether it was written."""
        now = utcnow()
        async with self.db.write() as conn:
            held = await conn.execute(
                hooks.update()
                .where(hooks.c.id == hook.id, hooks.c.reading_until > now)
                .values(
                    reading_until=None,
                    started=announcement.started,
                    finished_at=now if announcement.finished else None,
                )
            )
            if held.rowcount == 0:
                return False
            if announcement.pages:
                await conn.execute(
                    firecrawl_hook_pages.insert(),
                    [
                        {"hook_id": hook.id, "job_id": job_id, "seq": seq}
                        for job_id, seq in announcement.pages
                    ],
                )
            await _queue(conn, hook, announcement.events, now)
        return True


async def _target(conn: AsyncConnection, hook: FirecrawlHook) -> sa.ColumnElement[bool]:
    """Which jobs are the hook's: its crawl's pages, or its batch's jobs."""
    if hook.kind == "crawl":
        return jobs.c.crawl_id == hook.target_id
    batch = sa.select(job_batches.c.job_ids).where(job_batches.c.id == hook.target_id)
    ids = await conn.scalar(batch)
    return jobs.c.id.in_([UUID(job_id) for job_id in ids or ()])


async def _queue(
    conn: AsyncConnection,
    hook: FirecrawlHook,
    events: Sequence[tuple[HookEvent, dict[str, Any], UUID]],
    now: Any,
) -> None:
    if not events:
        return
    headers = dict(hook.headers) or None
    await conn.execute(
        webhook_deliveries.insert(),
        [
            {
                "id": uuid.uuid4(),
                "job_id": job_id,
                "owner": hook.owner,
                "url": hook.url,
                "event": hook.event_type(event),
                "payload": body,
                "status": "PENDING",
                "attempts": 0,
                "next_attempt_at": now
                + timedelta(seconds=ENDING_DELAY_SECONDS if event in ENDINGS else 0),
                "created_at": now,
                "style": FIRECRAWL_STYLE,
                "headers": headers,
            }
            for event, body, job_id in events
        ],
    )


def _row_to_hook(row: Any) -> FirecrawlHook:
    return FirecrawlHook(
        id=row.id,
        owner=row.owner,
        kind=row.kind,
        target_id=row.target_id,
        url=row.url,
        events=tuple(row.events),
        headers=tuple((str(name), str(value)) for name, value in row.headers or ()),
        metadata=row._mapping["metadata"],
        api_url=row.api_url,
        started=bool(row.started),
    )


__all__ = ["FirecrawlHookStore"]
