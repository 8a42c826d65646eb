"""Monitors: their pages (ordinary jobs), the slots fired, the run history and the changes.

Firing is one transaction per batch of due monitors: their rows are selected ``FOR UPDATE SKIP
LOCKED`` (PostgreSQL; SQLite has one writer), each one's slot is planned from its last fired
slot, the monitor is moved on under a compare-and-set of that slot, a round row whose key is
(monitor, slot time) is inserted, and its finished, already-read jobs are run again. So a slot
fires once whichever workers race for it, and a monitor that was late fires once, for the
latest due slot.

Change detection records each run of a watched page once: its write is guarded by the run
change detection last read (``evaluated_run``), and the run's history row, its content, the
change and the change's webhook commit together.
"""

from __future__ import annotations

import gzip
import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain.crawls import CrawlStatus
from taskcrawler.domain.cursors import decode_list_cursor, encode_list_cursor
from taskcrawler.domain.diffs import TextDiff
from taskcrawler.domain.errors import InvalidURL
from taskcrawler.domain.jobs import JobStatus
from taskcrawler.domain.monitors import (
    Change,
    ChangeKind,
    ChangeRetention,
    CrawlRound,
    CrawlRoundReading,
    FiredSlot,
    Monitor,
    MonitorPage,
    MonitorSpec,
    PageDiff,
    PageRun,
    RunReading,
    Snapshot,
    StoredRun,
)
from taskcrawler.domain.resubmission import Asked
from taskcrawler.domain.runs import RetentionPolicy, RunContent, RunInfo, runs_to_drop
from taskcrawler.domain.urls import crawl_key, normalize_url
from taskcrawler.domain.webhooks import DeliveryStatus, change_webhook
from taskcrawler.storage.crawls import cancel_running, start_crawl
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import (
    retried_when_rolled_back,
    unavailable_on_connection_errors,
)
from taskcrawler.storage.jobs import resubmit, start_new_runs
from taskcrawler.storage.rows import FINAL_STATUSES, PENDING, utcnow
from taskcrawler.storage.tables import (
    UTCDateTime,
    crawls,
    job_runs,
    jobs,
    monitor_changes,
    monitor_crawls,
    monitor_pages,
    monitor_rounds,
    monitors,
    page_archive,
    run_contents,
    webhook_deliveries,
)

#: How long a worker has to record the runs it claimed before another may take them.
READ_LEASE_SECONDS = 300.0

_MONITOR_COLUMNS = (
    monitors.c.id,
    monitors.c.owner,
    monitors.c.spec,
    monitors.c.paused,
    monitors.c.anchor_at,
    monitors.c.next_due_at,
    monitors.c.created_at,
    monitors.c.updated_at,
    monitors.c.last_slot_at,
    monitors.c.rounds,
)


def monitor_job_key(monitor_id: UUID, url: str) -> str:
    """A monitor's job for ``url`` has a key of its own: it is not the owner's job for that URL
    (which a POST of it finds), nor another monitor's."""
    return hashlib.sha256(f"monitor:{monitor_id}:{normalize_url(url)}".encode()).hexdigest()


class MonitorStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- the API's side ---------------------------------------------------------------------

    @unavailable_on_connection_errors
    async def create(
        self, owner: str, spec: MonitorSpec, *, now: datetime, redispatch_after: float
    ) -> Monitor:
        """A monitor and a job for each of its URLs, its first slot due at once."""
        monitor_id = uuid.uuid4()
        row = {
            "id": monitor_id,
            "owner": owner,
            "spec": spec.to_dict(),
            "interval_seconds": spec.interval_seconds,
            "paused": False,
            "anchor_at": now,
            "last_slot_at": None,
            "next_due_at": now,
            "rounds": 0,
            "callback_url": spec.callback_url,
            "created_at": now,
            "updated_at": now,
        }
        job_rows: list[dict[str, Any]] = [
            {
                "id": uuid.uuid4(),
                "owner": owner,
                "url": url,
                "url_key": monitor_job_key(monitor_id, url),
                "host": (urlsplit(url).hostname or "").lower(),
                "status": PENDING,
                "retry_count": 0,
                "created_at": now,
                # No dispatch time until its first slot: the sweeper takes only jobs with one
                # (a restart's sweep would publish it, and the slot run it again).
                "dispatch_at": None,
                "formats": list(spec.formats),
                "callback_url": None,  # a monitor announces changes, not every run
            }
            for url in spec.urls
        ]
        async with self.db.write() as conn:
            await conn.execute(monitors.insert(), [row])
            if job_rows:
                await conn.execute(jobs.insert(), job_rows)
                await conn.execute(
                    monitor_pages.insert(),
                    [
                        {"monitor_id": monitor_id, "job_id": job["id"], "url": job["url"]}
                        for job in job_rows
                    ],
                )
        pages = tuple(MonitorPage(job["url"], job["id"]) for job in job_rows)
        return Monitor(
            id=monitor_id,
            owner=owner,
            spec=spec,
            paused=False,
            anchor_at=now,
            next_due_at=now,
            created_at=now,
            updated_at=now,
            pages=pages,
        )

    @unavailable_on_connection_errors
    async def get(self, monitor_id: UUID, *, owner: str) -> Monitor | None:
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(*_MONITOR_COLUMNS).where(
                        monitors.c.id == monitor_id, monitors.c.owner == owner
                    )
                )
            ).first()
            if row is None:
                return None
            pages = await _pages(conn, [monitor_id])
        return _monitor(row, pages.get(monitor_id, ()))

    @unavailable_on_connection_errors
    async def list_monitors(
        self, owner: str, *, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[Monitor], str | None]:
        """A page of ``owner``'s monitors, newest first; InvalidCursor for a foreign cursor."""
        stmt = sa.select(*_MONITOR_COLUMNS).where(monitors.c.owner == owner)
        if cursor is not None:
            after = decode_list_cursor(cursor)
            stmt = stmt.where(
                sa.tuple_(monitors.c.created_at, monitors.c.id) < (after.instant, after.row_id)
            )
        stmt = stmt.order_by(monitors.c.created_at.desc(), monitors.c.id.desc()).limit(limit + 1)
        async with self.db.read() as conn:
            rows = (await conn.execute(stmt)).all()
            page = rows[:limit]
            pages = await _pages(conn, [row.id for row in page])
        found = [_monitor(row, pages.get(row.id, ())) for row in page]
        more = len(rows) > limit
        return found, encode_list_cursor(
            found[-1].created_at, found[-1].id
        ) if more and found else None

    @unavailable_on_connection_errors
    @retried_when_rolled_back()
    async def update(
        self,
        monitor_id: UUID,
        *,
        owner: str,
        now: datetime,
        paused: bool | None = None,
        interval_seconds: float | None = None,
    ) -> Monitor | None:
        """Pause, resume, or set a new interval (its slots then start at ``now``: the next one
        fires one new interval later). A resumed monitor is due at once: the latest slot it
        missed fires, once."""
        async with self.db.write() as conn:
            row = (
                await conn.execute(
                    sa.select(*_MONITOR_COLUMNS, monitors.c.interval_seconds)
                    .where(monitors.c.id == monitor_id, monitors.c.owner == owner)
                    .with_for_update()
                )
            ).first()
            if row is None:
                return None
            values: dict[str, Any] = {"updated_at": now}
            if interval_seconds is not None and interval_seconds != row.interval_seconds:
                spec = dict(row.spec) | {"interval_seconds": interval_seconds}
                values |= {
                    "spec": spec,
                    "interval_seconds": interval_seconds,
                    "anchor_at": now,
                    "last_slot_at": now,  # slot 0 of the new schedule stands for now
                    "next_due_at": now + timedelta(seconds=interval_seconds),
                }
            if paused is not None and paused != row.paused:
                values["paused"] = paused
                if not paused:
                    values["next_due_at"] = now
            await conn.execute(monitors.update().where(monitors.c.id == monitor_id).values(values))
        return await self.get(monitor_id, owner=owner)

    @unavailable_on_connection_errors
    @retried_when_rolled_back()
    async def add_formats(
        self,
        monitor_id: UUID,
        *,
        owner: str,
        formats: Sequence[str],
        now: datetime,
        redispatch_after: float,
    ) -> tuple[Monitor, list[UUID]] | None:
        """The monitor asks for ``formats`` too (a crawl monitor from its next round on), and
        its pages' jobs gain them as a URL's job does when they are asked of it: from their
        stored page when there is one. The ids of the jobs sent to the workers again, to
        publish."""
        dispatched: list[UUID] = []
        async with self.db.write() as conn:
            spec = await conn.scalar(
                sa.select(monitors.c.spec)
                .where(monitors.c.id == monitor_id, monitors.c.owner == owner)
                .with_for_update()
            )
            if spec is None:
                return None
            stored = MonitorSpec.from_dict(spec)
            if not set(formats) <= set(stored.formats):
                await conn.execute(
                    monitors.update()
                    .where(monitors.c.id == monitor_id)
                    .values(spec=stored.with_formats(formats).to_dict(), updated_at=now)
                )
                dispatched = await _add_page_formats(
                    conn, monitor_id, formats, now=now, redispatch_after=redispatch_after
                )
        monitor = await self.get(monitor_id, owner=owner)
        return None if monitor is None else (monitor, dispatched)

    @unavailable_on_connection_errors
    @retried_when_rolled_back()
    async def delete(self, monitor_id: UUID, *, owner: str) -> bool:
        """The monitor, its jobs, their runs and its changes; its crawl still running is
        cancelled."""
        async with self.db.write() as conn:
            job_ids = list(
                (
                    await conn.execute(
                        sa.select(monitor_pages.c.job_id)
                        .join(monitors, monitors.c.id == monitor_pages.c.monitor_id)
                        .where(monitors.c.id == monitor_id, monitors.c.owner == owner)
                    )
                ).scalars()
            )
            # A crawl monitor's crawl still running stops with it (its pages stay, as the
            # owner's crawl, like those of the monitor's earlier rounds).
            running = list(
                (
                    await conn.execute(
                        sa.select(crawls.c.id)
                        .join(monitor_crawls, monitor_crawls.c.crawl_id == crawls.c.id)
                        .join(monitors, monitors.c.id == monitor_crawls.c.monitor_id)
                        .where(
                            monitors.c.id == monitor_id,
                            monitors.c.owner == owner,
                            crawls.c.status == CrawlStatus.RUNNING.value,
                        )
                        .order_by(crawls.c.id)
                        .with_for_update(of=crawls)
                    )
                ).scalars()
            )
            await cancel_running(conn, running, now=utcnow())
            deleted = await conn.execute(
                monitors.delete().where(monitors.c.id == monitor_id, monitors.c.owner == owner)
            )
            if job_ids:
                await conn.execute(jobs.delete().where(jobs.c.id.in_(job_ids)))
        return bool(deleted.rowcount)

    @unavailable_on_connection_errors
    async def changes(
        self,
        monitor_id: UUID,
        *,
        owner: str,
        limit: int = 50,
        cursor: str | None = None,
        max_bytes: int | None = None,
    ) -> tuple[list[Change], str | None]:
        """A page of a monitor's changes, newest first: ``limit`` of them, fewer when their
        diffs, URLs and metadata pass ``max_bytes`` together (the first is always there, its
        diff bounded when it was made). The sizes are read first, and only the page's rows
        after them, so a page costs what it holds, not what ``limit`` could."""
        mine = (monitor_changes.c.monitor_id == monitor_id, monitor_changes.c.owner == owner)
        order = (monitor_changes.c.detected_at.desc(), monitor_changes.c.id.desc())
        stmt = sa.select(monitor_changes.c.id, *self._change_size()).where(*mine)
        if cursor is not None:
            after = decode_list_cursor(cursor)
            stmt = stmt.where(
                sa.tuple_(monitor_changes.c.detected_at, monitor_changes.c.id)
                < (after.instant, after.row_id)
            )
        async with self.db.read() as conn:
            sized = (await conn.execute(stmt.order_by(*order).limit(limit + 1))).all()
            ids = _page_of(sized[:limit], max_bytes)
            rows = (
                (
                    await conn.execute(
                        sa.select(monitor_changes)
                        .where(*mine, self.db.backend.any_of(monitor_changes.c.id, ids))
                        .order_by(*order)
                    )
                ).all()
                if ids
                else []
            )
        found = [_change(row) for row in rows]
        more = len(sized) > len(found)
        return found, encode_list_cursor(
            found[-1].detected_at, found[-1].id
        ) if more and found else None

    def _change_size(self) -> tuple[sa.ColumnElement[int], ...]:
        size = self.db.backend.byte_length
        return (
            sa.func.coalesce(size(monitor_changes.c.diff), 0).label("diff_bytes"),
            sa.func.coalesce(size(sa.cast(monitor_changes.c.metadata, sa.Text())), 0).label(
                "metadata_bytes"
            ),
            size(monitor_changes.c.url).label("url_bytes"),
        )

    @unavailable_on_connection_errors
    async def change(self, monitor_id: UUID, change_id: UUID, *, owner: str) -> Change | None:
        """One change of ``owner``'s monitor, with its whole diff."""
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(monitor_changes).where(
                        monitor_changes.c.id == change_id,
                        monitor_changes.c.monitor_id == monitor_id,
                        monitor_changes.c.owner == owner,
                    )
                )
            ).first()
        return _change(row) if row is not None else None

    # --- retention ------------------------------------------------------------------------

    @unavailable_on_connection_errors
    async def prune_history(self, retention: ChangeRetention, *, now: datetime, limit: int) -> int:
        """One bounded step of pruning, each statement in a transaction of its own: at most
        ``limit`` changes older than the retention keeps, then of monitors holding more than
        it keeps (their oldest), then the pages of crawl rounds no round will be compared
        with again. How many rows it deleted or cleared; fewer than ``limit``: nothing more
        to do for now."""
        done = 0
        oldest_kept = retention.oldest_kept(now)
        if oldest_kept is not None:
            done += await self._drop_changes(
                sa.select(monitor_changes.c.id)
                .where(monitor_changes.c.detected_at < oldest_kept)
                .order_by(monitor_changes.c.detected_at)
                .limit(limit)
            )
        if retention.keep_changes is not None and done < limit:
            done += await self._drop_surplus(retention.keep_changes, limit - done)
        if done < limit:
            done += await self._clear_superseded_rounds(limit - done)
        return done

    async def _drop_changes(self, ids: sa.Select[Any]) -> int:
        # Rows another pruner holds are passed over rather than waited for (PostgreSQL).
        locked = ids.with_for_update(skip_locked=True).scalar_subquery()
        async with self.db.write() as conn:
            deleted = await conn.execute(
                monitor_changes.delete().where(monitor_changes.c.id.in_(locked))
            )
        return int(deleted.rowcount or 0)

    async def _drop_surplus(self, keep: int, limit: int) -> int:
        """The oldest changes of monitors holding more than ``keep``, ``limit`` at most."""
        async with self.db.read() as conn:
            crowded = list(
                (
                    await conn.execute(
                        sa.select(monitor_changes.c.monitor_id)
                        .group_by(monitor_changes.c.monitor_id)
                        .having(sa.func.count() > keep)
                        .limit(limit)
                    )
                ).scalars()
            )
        done = 0
        for monitor_id in crowded:
            if done >= limit:
                break
            done += await self._drop_changes(
                sa.select(monitor_changes.c.id)
                .where(monitor_changes.c.monitor_id == monitor_id)
                .order_by(monitor_changes.c.detected_at.desc(), monitor_changes.c.id.desc())
                .offset(keep)
                .limit(limit - done)
            )
        return done

    async def _clear_superseded_rounds(self, limit: int) -> int:
        """A crawl round's pages are what the next round is compared with: once a later round
        of its monitor was read, nothing reads them again (a monitor starts a round only once
        the last was read)."""
        later = monitor_crawls.alias("later")
        superseded = (
            sa.select(monitor_crawls.c.monitor_id, monitor_crawls.c.slot_at)
            .where(
                monitor_crawls.c.pages.is_not(None),
                sa.exists().where(
                    later.c.monitor_id == monitor_crawls.c.monitor_id,
                    later.c.slot_at > monitor_crawls.c.slot_at,
                    later.c.read_at.is_not(None),
                ),
            )
            .limit(limit)
        )
        async with self.db.write() as conn:
            rows = (await conn.execute(superseded)).all()
            for row in rows:
                await conn.execute(
                    monitor_crawls.update()
                    .where(_round_key(row.monitor_id, row.slot_at))
                    .values(pages=sa.null())  # SQL's NULL: None would be JSON's null
                )
        return len(rows)

    @unavailable_on_connection_errors
    async def rounds(self, monitor_id: UUID) -> list[tuple[datetime, int]]:
        """The slots fired, oldest first, each with the due slots it stood for beyond itself."""
        async with self.db.read() as conn:
            rows = await conn.execute(
                sa.select(monitor_rounds.c.slot_at, monitor_rounds.c.missed)
                .where(monitor_rounds.c.monitor_id == monitor_id)
                .order_by(monitor_rounds.c.slot_at)
            )
            return [(row.slot_at, row.missed) for row in rows]

    @unavailable_on_connection_errors
    async def run(
        self, job_id: UUID, run: int, *, owner: str
    ) -> tuple[StoredRun, RunContent] | None:
        """A run of ``owner``'s job and what it read (empty when it read nothing)."""
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(run_contents)
                    .join(jobs, jobs.c.id == run_contents.c.job_id)
                    .where(
                        run_contents.c.job_id == job_id,
                        run_contents.c.run == run,
                        jobs.c.owner == owner,
                    )
                )
            ).first()
            if row is None:
                return None
            return _stored_run(row), await _content(conn, job_id, row.content_run)

    # --- the scheduler's side ---------------------------------------------------------------

    @unavailable_on_connection_errors
    async def fire_due(
        self, *, now: datetime, redispatch_after: float, limit: int = 100
    ) -> list[FiredSlot]:
        """Fire the due slot of up to ``limit`` due monitors (see the module)."""
        fired: list[FiredSlot] = []
        # Spelled as the partial index's predicate (NOT paused), so the planner can use it.
        is_due = (sa.not_(monitors.c.paused), monitors.c.next_due_at <= now)
        async with self.db.read() as conn:
            # A read first: most polls find nothing due, and on SQLite a write would queue
            # behind (and hold up) the single writer.
            if await conn.scalar(sa.select(monitors.c.id).where(*is_due).limit(1)) is None:
                return fired
        claim = (
            sa.select(monitors.c.id)
            .where(*is_due)
            .order_by(monitors.c.next_due_at)
            .limit(limit)
            # NO KEY UPDATE: a change inserted meanwhile (its foreign key takes KEY SHARE on
            # the monitor) must not wait for this claim, which waits for that page's lock.
            .with_for_update(skip_locked=True, key_share=True)
        )
        async with self.db.write() as conn:
            # Claimed by an UPDATE, not a SELECT: the write takes the rows' locks on PostgreSQL
            # (SKIP LOCKED passes over another worker's) and SQLite's write lock before the due
            # rows are read, so two processes never plan from the same state. It changes
            # nothing by itself; the plan's UPDATE below moves each monitor on.
            due = (
                await conn.execute(
                    monitors.update()
                    .where(monitors.c.id.in_(claim.scalar_subquery()), *is_due)
                    .values(rounds=monitors.c.rounds)
                    .returning(*_MONITOR_COLUMNS)
                )
            ).all()
            fired = await _fire(conn, due, now, redispatch_after)
        return fired

    @unavailable_on_connection_errors
    async def claim_crawl_rounds(self, *, limit: int = 20) -> list[CrawlRound]:
        """Rounds of crawl monitors whose crawl stopped and that nobody read, taken for this
        caller alone under a lease (as :meth:`claim_unread_runs` takes runs): each with its
        pages, the last read round's, and each page's run to read. A round taken and never
        recorded (the worker died) is taken again once its lease has expired."""
        now = utcnow()
        unread = (
            monitor_crawls.c.read_at.is_(None),
            crawls.c.status != CrawlStatus.RUNNING.value,
            sa.or_(monitor_crawls.c.reading_until.is_(None), monitor_crawls.c.reading_until < now),
        )
        joined = monitor_crawls.join(crawls, crawls.c.id == monitor_crawls.c.crawl_id)
        async with self.db.read() as conn:
            # A read first: most polls find nothing (SQLite's single writer is not queued for).
            first = sa.select(monitor_crawls.c.crawl_id).select_from(joined).where(*unread)
            if await conn.scalar(first.limit(1)) is None:
                return []
        found: list[CrawlRound] = []
        async with self.db.write() as conn:
            rows = (
                await conn.execute(
                    sa.select(
                        monitor_crawls.c.monitor_id,
                        monitor_crawls.c.slot_at,
                        monitor_crawls.c.crawl_id,
                        crawls.c.status,
                        crawls.c.discovered,
                        crawls.c.url,
                        crawls.c.spec,
                        monitors.c.owner,
                        monitors.c.callback_url,
                        monitors.c.spec.label("monitor_spec"),
                    )
                    .select_from(
                        joined.join(monitors, monitors.c.id == monitor_crawls.c.monitor_id)
                    )
                    .where(*unread)
                    .order_by(monitor_crawls.c.slot_at, monitor_crawls.c.monitor_id)
                    .limit(limit)
                    .with_for_update(skip_locked=True, of=monitor_crawls)
                )
            ).all()
            for row in rows:
                taken = await conn.execute(
                    monitor_crawls.update()
                    .where(_round_key(row.monitor_id, row.slot_at), *unread[::2])
                    .values(reading_until=now + timedelta(seconds=READ_LEASE_SECONDS))
                )
                if taken.rowcount:  # else taken by another worker meanwhile
                    found.append(await _crawl_round(conn, row))
        return found

    @unavailable_on_connection_errors
    async def crawl_baselines(
        self, job_ids: Sequence[UUID]
    ) -> dict[UUID, tuple[StoredRun, Snapshot]]:
        """For each job: its newest recorded run and what it read, when it read something (the
        pages of a crawl monitor's last round, to compare this round's with)."""
        if not job_ids:
            return {}
        async with self.db.read() as conn:
            rows = (
                await conn.execute(
                    sa.select(*_RUN_COLUMNS)
                    .where(
                        self.db.backend.any_of(run_contents.c.job_id, list(job_ids)),
                        run_contents.c.content_run.is_not(None),
                        run_contents.c.fingerprint.is_not(None),
                    )
                    .order_by(run_contents.c.job_id, run_contents.c.run)
                )
            ).all()
            newest = {row.job_id: row for row in rows}  # ordered: the last row is the newest
            blobs = await _blobs(conn, {(row.job_id, row.content_run) for row in newest.values()})
        found = {}
        for job_id, row in newest.items():
            blob = blobs.get((job_id, row.content_run))
            if blob is None:
                continue
            content = RunContent.decode(blob)
            stored = _stored_run(row)
            found[job_id] = (stored, Snapshot(content.markdown, content.text, stored.metadata,
                                              row.fingerprint))  # fmt: skip
        return found

    @unavailable_on_connection_errors
    async def record_crawl_round(
        self, reading: CrawlRoundReading, pages: Sequence[RunReading]
    ) -> bool:
        """Record a claimed round in one transaction: its pages' history rows and content, the
        changes (pages added, removed and changed) with their webhooks, the pages the next
        round is compared with, the round marked read. False, and nothing written, when the
        round was read meanwhile (its lease taken over by another worker, who recorded it)."""
        found = reading.round
        async with self.db.write() as conn:
            marked = await conn.execute(
                monitor_crawls.update()
                .where(
                    _round_key(found.monitor_id, found.slot_at),
                    monitor_crawls.c.read_at.is_(None),
                )
                .values(
                    read_at=utcnow(),
                    reading_until=None,
                    complete=found.complete,
                    pages={url: str(job_id) for url, job_id in reading.kept.items()},
                )
            )
            if not marked.rowcount:
                return False
            if pages:
                await conn.execute(run_contents.insert(), [_run_row(r) for r in pages])
            changed = [r.change for r in pages if r.change is not None]
            await _insert_announced(
                conn,
                [
                    (change, found.owner, found.callback_url)
                    for change in (*reading.changes, *changed)
                ],
            )
        return True

    @unavailable_on_connection_errors
    async def mark_dispatch_due(self, job_ids: Sequence[UUID]) -> None:
        from taskcrawler.storage.jobs import mark_dispatch_due

        await mark_dispatch_due(self.db, job_ids)

    @unavailable_on_connection_errors
    async def claim_unread_runs(self, *, limit: int = 100) -> list[PageRun]:
        """Finished runs of watched pages that change detection has not read, taken for this
        caller alone under a lease (no other worker gets them), with the page each fetched
        (the job's archive). A run taken and never recorded (the worker died) is taken again
        once its lease has expired."""
        now = utcnow()
        unread = (
            monitor_pages.c.awaiting_read,  # the partial index's predicate, as it is spelled
            sa.or_(monitor_pages.c.reading_until.is_(None), monitor_pages.c.reading_until < now),
            jobs.c.status.in_(FINAL_STATUSES),
            sa.or_(
                monitor_pages.c.evaluated_run.is_(None),
                jobs.c.run_count > monitor_pages.c.evaluated_run,
            ),
        )
        joined = monitor_pages.join(jobs, jobs.c.id == monitor_pages.c.job_id)
        async with self.db.read() as conn:
            # A read first: most polls find nothing, and on SQLite a write would queue behind
            # (and hold up) the single writer.
            first = sa.select(monitor_pages.c.job_id).select_from(joined).where(*unread).limit(1)
            if await conn.scalar(first) is None:
                return []
        picked = (
            sa.select(monitor_pages.c.job_id)
            .select_from(joined)
            .where(*unread)
            .order_by(jobs.c.finished_at)
            .limit(limit)
            .with_for_update(skip_locked=True, of=monitor_pages)
        )
        async with self.db.write() as conn:
            taken = list(
                (
                    await conn.execute(
                        monitor_pages.update()
                        .where(monitor_pages.c.job_id.in_(picked.scalar_subquery()), *unread[:2])
                        .values(reading_until=now + timedelta(seconds=READ_LEASE_SECONDS))
                        .returning(monitor_pages.c.job_id)
                    )
                ).scalars()
            )
        if not taken:
            return []
        stmt = (
            sa.select(
                monitor_pages.c.monitor_id,
                monitor_pages.c.job_id,
                monitor_pages.c.url,
                monitor_pages.c.evaluated_run,
                monitor_pages.c.baseline_run,
                monitors.c.owner,
                monitors.c.spec,
                monitors.c.callback_url,
                jobs.c.run_count,
                jobs.c.status,
                jobs.c.http_status,
                jobs.c.unchanged,
                page_archive.c.final_url,
                page_archive.c.charset,
                page_archive.c.size,
            )
            .join(monitors, monitors.c.id == monitor_pages.c.monitor_id)
            .join(jobs, jobs.c.id == monitor_pages.c.job_id)
            .outerjoin(page_archive, page_archive.c.job_id == jobs.c.id)
            .where(self.db.backend.any_of(monitor_pages.c.job_id, taken))
        )
        async with self.db.read() as conn:
            rows = (await conn.execute(stmt)).all()
        return [_page_run(row) for row in rows]

    @unavailable_on_connection_errors
    async def archived_bodies(self, job_ids: Sequence[UUID]) -> dict[UUID, bytes]:
        """The page each job fetched last, as fetched (its archive)."""
        if not job_ids:
            return {}
        async with self.db.read() as conn:
            rows = await conn.execute(
                sa.select(page_archive.c.job_id, page_archive.c.body_gz).where(
                    self.db.backend.any_of(page_archive.c.job_id, list(job_ids))
                )
            )
            packed = {row.job_id: bytes(row.body_gz) for row in rows}
        # Bodies were bounded when fetched; inflating a batch of them is a few milliseconds.
        return {job_id: gzip.decompress(body) for job_id, body in packed.items()}

    @unavailable_on_connection_errors
    async def baselines(
        self, keys: Sequence[tuple[UUID, int]]
    ) -> dict[tuple[UUID, int], tuple[StoredRun, Snapshot]]:
        """For each (job, run): the run and what it read, when it read something."""
        if not keys:
            return {}
        wanted = set(keys)
        job_ids = list({job_id for job_id, _ in wanted})
        async with self.db.read() as conn:
            rows = [
                row
                for row in await conn.execute(
                    sa.select(*_RUN_COLUMNS).where(
                        self.db.backend.any_of(run_contents.c.job_id, job_ids),
                        run_contents.c.run.in_({run for _, run in wanted}),
                    )
                )
                if (row.job_id, row.run) in wanted
                and row.content_run is not None
                and row.fingerprint is not None
            ]
            blobs = await _blobs(conn, {(row.job_id, row.content_run) for row in rows})
        found = {}
        for row in rows:
            blob = blobs.get((row.job_id, row.content_run))
            content = RunContent.decode(blob) if blob is not None else RunContent("", "")
            stored = _stored_run(row)
            snapshot = Snapshot(content.markdown, content.text, stored.metadata, row.fingerprint)
            found[row.job_id, row.run] = (stored, snapshot)
        return found

    @unavailable_on_connection_errors
    async def record_readings(
        self, readings: Sequence[RunReading], *, retention: RetentionPolicy, redispatch_after: float
    ) -> list[UUID]:
        """Record what change detection made of runs it claimed, in one transaction: each
        run's history row and content, its change and the change's webhook. Pages whose
        monitor fired a slot while their run was unread run again now: their jobs, to publish.

        The key of a run's history row makes a run recorded twice (a lease taken over while
        its first reader was still at it) fail whole."""
        if not readings:
            return []
        ordered = sorted(readings, key=lambda r: r.page.job_id)  # fire locks in this order
        job_ids = [r.page.job_id for r in ordered]
        async with self.db.write() as conn:
            await conn.execute(
                monitor_pages.update()
                .where(monitor_pages.c.job_id == sa.bindparam("b_job"))
                .values(
                    evaluated_run=sa.bindparam("b_run", type_=sa.Integer()),
                    baseline_run=sa.bindparam("b_baseline", type_=sa.Integer()),
                    awaiting_read=False,
                    reading_until=None,
                ),
                [
                    {"b_job": r.page.job_id, "b_run": r.page.run, "b_baseline": r.baseline_run}
                    for r in ordered
                ],
            )
            await conn.execute(run_contents.insert(), [_run_row(r) for r in ordered])
            changes = [r for r in ordered if r.change is not None]
            if changes:
                await _insert_changes(conn, changes)
            await _apply_retention(conn, job_ids, retention, ordered[-1].record.fetched_at)
            due = list(
                (
                    await conn.execute(
                        sa.select(monitor_pages.c.job_id).where(
                            monitor_pages.c.job_id.in_(job_ids), monitor_pages.c.run_due
                        )
                    )
                ).scalars()
            )
            restarted = await _run_again(conn, due, now=utcnow(), redispatch_after=redispatch_after)
            if restarted:
                await conn.execute(
                    monitor_pages.update()
                    .where(monitor_pages.c.job_id.in_(restarted))
                    .values(awaiting_read=True, run_due=False)
                )
        return sorted(restarted)


# --- helpers ----------------------------------------------------------------------------------


async def _fire(
    conn: AsyncConnection, rows: Sequence[Any], now: datetime, redispatch_after: float
) -> list[FiredSlot]:
    """Fire the due slot of each of ``rows`` (monitors this transaction holds locked): a few
    statements for the whole batch, whatever its size."""
    plans = []
    for row in rows:
        monitor = _monitor(row, ())
        plans.append((monitor, monitor.schedule.plan(monitor.last_slot_at, now)))
    if not plans:
        return []
    # The rows are locked by this transaction (SQLite: its single writer). A slot fired twice
    # all the same would break the rounds' unique key, and the transaction with it.
    await conn.execute(
        monitors.update()
        .where(monitors.c.id == sa.bindparam("b_id"))
        .values(
            next_due_at=sa.bindparam("b_next", type_=UTCDateTime()),
            last_slot_at=sa.func.coalesce(
                sa.bindparam("b_fire", type_=UTCDateTime()), monitors.c.last_slot_at
            ),
            rounds=monitors.c.rounds + sa.bindparam("b_count", type_=sa.Integer()),
        ),
        [
            {
                "b_id": monitor.id,
                "b_next": plan.next_due,
                "b_fire": plan.fire,
                "b_count": int(plan.fire is not None),
            }
            for monitor, plan in plans
        ],
    )
    firing = {monitor.id: plan for monitor, plan in plans if plan.fire is not None}
    if not firing:
        return []
    ids = list(firing)
    crawling = await _start_crawls(
        conn,
        [
            replace(monitor, last_slot_at=plan.fire)
            for monitor, plan in plans
            if plan.fire is not None and monitor.spec.is_crawl
        ],
        now,
        redispatch_after,
    )
    # Each page runs again once its last run was read (a page still running, or not yet read,
    # sits this round out); a page that never ran is published again.
    # Locked, in one order for every writer (record_readings too), so that a reading recorded
    # meanwhile is seen whole: either its page is read (and runs again now) or it is marked
    # due (and runs again when its reading is recorded).
    pages = (
        await conn.execute(
            sa.select(
                monitor_pages.c.monitor_id,
                jobs.c.id,
                jobs.c.status,
                jobs.c.run_count,
                monitor_pages.c.evaluated_run,
                monitor_pages.c.awaiting_read,
            )
            .join(jobs, jobs.c.id == monitor_pages.c.job_id)
            .where(monitor_pages.c.monitor_id.in_(ids))
            .order_by(monitor_pages.c.job_id)
            .with_for_update(of=monitor_pages, key_share=True)
        )
    ).all()
    finished = [p for p in pages if p.status in FINAL_STATUSES]
    # A page runs again at once when its last run was read. One whose run is unread (being
    # read, or started by hand) runs again as soon as that run is recorded. One still running
    # sits this round out.
    ready = [p.id for p in finished if p.evaluated_run == p.run_count and not p.awaiting_read]
    unread = [p.id for p in finished if p.id not in set(ready)]
    waiting = {p.id for p in pages if p.status == PENDING and p.run_count == 0}
    if waiting:
        # Published by this slot; the sweeper publishes it again should that be lost.
        await conn.execute(
            jobs.update()
            .where(jobs.c.id.in_(waiting), jobs.c.dispatch_at.is_(None))
            .values(dispatch_at=now + timedelta(seconds=redispatch_after))
        )
    restarted = await _run_again(conn, ready, now=now, redispatch_after=redispatch_after)
    if restarted:
        await conn.execute(
            monitor_pages.update()
            .where(monitor_pages.c.job_id.in_(restarted))
            .values(awaiting_read=True, run_due=False)
        )
    if unread:
        await conn.execute(
            monitor_pages.update()
            .where(monitor_pages.c.job_id.in_(unread))
            .values(awaiting_read=True, run_due=True)
        )
    by_monitor: dict[UUID, list[UUID]] = {}
    for page in pages:
        if page.id in restarted or page.id in waiting:
            by_monitor.setdefault(page.monitor_id, []).append(page.id)
    started = {
        monitor_id: sum(job_id in restarted for job_id in job_ids)
        for monitor_id, job_ids in by_monitor.items()
    }
    for monitor_id, start_id in crawling.items():
        by_monitor.setdefault(monitor_id, []).append(start_id)
        started[monitor_id] = 1
    await conn.execute(
        monitor_rounds.insert(),
        [
            {
                "monitor_id": monitor_id,
                "slot_at": plan.fire,
                "fired_at": now,
                "missed": plan.missed,
                "started": started.get(monitor_id, 0),
            }
            for monitor_id, plan in firing.items()
        ],
    )
    return [
        FiredSlot(monitor_id, plan.fire, plan.missed, tuple(by_monitor.get(monitor_id, ())))
        for monitor_id, plan in firing.items()
        if plan.fire is not None
    ]


async def _run_again(
    conn: AsyncConnection, job_ids: Sequence[UUID], *, now: datetime, redispatch_after: float
) -> set[UUID]:
    """What ``POST /api/v1/jobs/{id}/retry`` does to a finished job (its run to ``job_runs``,
    the job PENDING again with one more run), for a round's jobs at once: the history is
    copied inside the database, and only ids come back (storage.jobs returns whole jobs)."""
    if not job_ids:
        return set()
    finished = (jobs.c.id.in_(job_ids), jobs.c.status.in_(FINAL_STATUSES))
    restarted = await start_new_runs(
        conn, finished, now=now, redispatch_after=redispatch_after, returning=(jobs.c.id,)
    )
    return set(restarted.scalars())


async def _pages(
    conn: AsyncConnection, monitor_ids: Sequence[UUID]
) -> dict[UUID, tuple[MonitorPage, ...]]:
    if not monitor_ids:
        return {}
    rows = await conn.execute(
        sa.select(monitor_pages.c.monitor_id, monitor_pages.c.url, monitor_pages.c.job_id)
        .where(monitor_pages.c.monitor_id.in_(monitor_ids))
        .order_by(monitor_pages.c.monitor_id, monitor_pages.c.url)
    )
    found: dict[UUID, list[MonitorPage]] = {}
    for row in rows:
        found.setdefault(row.monitor_id, []).append(MonitorPage(row.url, row.job_id))
    return {key: tuple(value) for key, value in found.items()}


async def _crawl_round(conn: AsyncConnection, row: Any) -> CrawlRound:
    """A crawl monitor's round as change detection reads it: the pages its crawl completed
    (each with its run, to read), whether it saw the whole site, and the pages the last read
    round kept."""
    completed = (
        await conn.execute(
            sa.select(
                jobs.c.url,
                jobs.c.id,
                jobs.c.run_count,
                jobs.c.status,
                jobs.c.http_status,
                page_archive.c.final_url,
                page_archive.c.charset,
                page_archive.c.size,
            )
            .outerjoin(page_archive, page_archive.c.job_id == jobs.c.id)
            .where(jobs.c.crawl_id == row.crawl_id, jobs.c.status == JobStatus.COMPLETED.value)
            .order_by(jobs.c.url)
        )
    ).all()
    pages = {page.url: page.id for page in completed}
    selectors = MonitorSpec.from_dict(row.monitor_spec).ignore_selectors
    runs = tuple(
        PageRun(
            monitor_id=row.monitor_id,
            owner=row.owner,
            job_id=page.id,
            url=page.url,
            run=page.run_count,
            status=page.status,
            http_status=page.http_status,
            unchanged=False,  # a round's crawl fetches its pages afresh
            evaluated_run=None,
            baseline_run=None,
            ignore_selectors=selectors,
            callback_url=row.callback_url,
            final_url=page.final_url,
            charset=page.charset,
            body_size=page.size,
        )
        for page in completed
    )
    previous = await conn.scalar(
        sa.select(monitor_crawls.c.pages)
        .where(
            monitor_crawls.c.monitor_id == row.monitor_id,
            monitor_crawls.c.slot_at < row.slot_at,
            monitor_crawls.c.read_at.is_not(None),
            monitor_crawls.c.pages.is_not(None),
        )
        .order_by(monitor_crawls.c.slot_at.desc())
        .limit(1)
    )
    try:
        start = crawl_key(row.url)
    except InvalidURL:
        start = None
    # Cut short (its limit reached, cancelled, its start page failing): a page it did not
    # reach is not known to be gone.
    complete = (
        row.status == CrawlStatus.COMPLETED.value
        and row.discovered < int(row.spec.get("limit", 0))
        and start in pages
    )
    return CrawlRound(
        monitor_id=row.monitor_id,
        owner=row.owner,
        slot_at=row.slot_at,
        callback_url=row.callback_url,
        pages=pages,
        complete=complete,
        previous=(
            {url: UUID(job_id) for url, job_id in previous.items()}
            if previous is not None
            else None
        ),
        runs=runs,
    )


async def _start_crawls(
    conn: AsyncConnection,
    monitors_firing: Sequence[Monitor],
    now: datetime,
    redispatch_after: float,
) -> dict[UUID, UUID]:
    """Start a crawl for each crawl monitor firing whose last round's crawl was read (one
    still running, or unread, makes this slot sit out: rounds compare whole crawls); the
    start page of each crawl started, by monitor."""
    if not monitors_firing:
        return {}
    busy = set(
        (
            await conn.execute(
                sa.select(monitor_crawls.c.monitor_id).where(
                    monitor_crawls.c.monitor_id.in_([m.id for m in monitors_firing]),
                    monitor_crawls.c.read_at.is_(None),
                )
            )
        ).scalars()
    )
    started: dict[UUID, UUID] = {}
    links = []
    for monitor in monitors_firing:
        spec = monitor.spec.crawl
        if spec is None or monitor.id in busy or monitor.last_slot_at is None:
            continue
        crawl_id, start_id = await start_crawl(
            conn,
            monitor.owner,
            spec,
            callback_url=None,  # a monitor announces changes, not its crawls
            now=now,
            redispatch_after=redispatch_after,
        )
        links.append(
            {"monitor_id": monitor.id, "slot_at": monitor.last_slot_at, "crawl_id": crawl_id}
        )
        started[monitor.id] = start_id
    if links:
        await conn.execute(monitor_crawls.insert(), links)
    return started


async def _add_page_formats(
    conn: AsyncConnection,
    monitor_id: UUID,
    formats: Sequence[str],
    *,
    now: datetime,
    redispatch_after: float,
) -> list[UUID]:
    """The monitor's pages' jobs asked for ``formats`` too, as a submission asks a URL's job;
    the ids of those sent to the workers again."""
    keys = (
        await conn.execute(
            sa.select(jobs.c.owner, jobs.c.url_key)
            .join(monitor_pages, monitor_pages.c.job_id == jobs.c.id)
            .where(monitor_pages.c.monitor_id == monitor_id)
        )
    ).all()
    asked = {(owner, key): Asked(tuple(formats)) for owner, key in keys}
    found = await resubmit(conn, list(asked), asked, now, redispatch_after)
    return [job.id for job, dispatched in found.values() if dispatched]


def _round_key(monitor_id: UUID, slot_at: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(monitor_crawls.c.monitor_id == monitor_id, monitor_crawls.c.slot_at == slot_at)


def _monitor(row: Any, pages: tuple[MonitorPage, ...]) -> Monitor:
    return Monitor(
        id=row.id,
        owner=row.owner,
        spec=MonitorSpec.from_dict(row.spec),
        paused=bool(row.paused),
        anchor_at=row.anchor_at,
        next_due_at=row.next_due_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
        last_slot_at=row.last_slot_at,
        rounds=row.rounds,
        pages=pages,
    )


def _page_run(row: Any) -> PageRun:
    spec = MonitorSpec.from_dict(row.spec)
    # The archive is the run's page only when it was written by this run (a 304 or a failure
    # leaves the last page's archive in place).
    fresh = row.size is not None and row.status == JobStatus.COMPLETED.value and not row.unchanged
    return PageRun(
        monitor_id=row.monitor_id,
        owner=row.owner,
        job_id=row.job_id,
        url=row.url,
        run=row.run_count,
        status=row.status,
        http_status=row.http_status,
        unchanged=bool(row.unchanged),
        evaluated_run=row.evaluated_run,
        baseline_run=row.baseline_run,
        ignore_selectors=spec.ignore_selectors,
        callback_url=row.callback_url,
        final_url=row.final_url if fresh else None,
        charset=row.charset if fresh else None,
        body_size=row.size if fresh else None,
    )


_RUN_COLUMNS = tuple(c for c in run_contents.c if c.name != "blob")


def _run_row(reading: RunReading) -> dict[str, Any]:
    record = reading.record
    return {
        "job_id": record.job_id,
        "run": record.run,
        "fetched_at": record.fetched_at,
        "http_status": record.http_status,
        "status": record.status,
        "fingerprint": record.fingerprint,
        "digest": record.digest,
        "content_run": record.content_run,
        "metadata": dict(record.metadata),
        "blob": reading.blob,
    }


async def _blobs(
    conn: AsyncConnection, keys: set[tuple[UUID, int | None]]
) -> dict[tuple[UUID, int], bytes]:
    wanted = {(job_id, run) for job_id, run in keys if run is not None}
    if not wanted:
        return {}
    rows = await conn.execute(
        sa.select(run_contents.c.job_id, run_contents.c.run, run_contents.c.blob).where(
            run_contents.c.job_id.in_({job_id for job_id, _ in wanted}),
            run_contents.c.run.in_({run for _, run in wanted}),
            run_contents.c.blob.is_not(None),
        )
    )
    return {
        (row.job_id, row.run): bytes(row.blob) for row in rows if (row.job_id, row.run) in wanted
    }


def _stored_run(row: Any) -> StoredRun:
    return StoredRun(
        job_id=row.job_id,
        run=row.run,
        fetched_at=row.fetched_at,
        status=row.status,
        http_status=row.http_status,
        fingerprint=row.fingerprint,
        digest=row.digest,
        content_run=row.content_run,
        metadata=dict(row.metadata or {}),
    )


async def _content(conn: AsyncConnection, job_id: UUID, content_run: int | None) -> RunContent:
    if content_run is None:
        return RunContent("", "")
    blob = await conn.scalar(
        sa.select(run_contents.c.blob).where(
            run_contents.c.job_id == job_id, run_contents.c.run == content_run
        )
    )
    return RunContent.decode(bytes(blob)) if blob is not None else RunContent("", "")


async def _insert_changes(conn: AsyncConnection, readings: Sequence[RunReading]) -> None:
    await _insert_announced(
        conn,
        [(r.change, r.page.owner, r.page.callback_url) for r in readings if r.change is not None],
    )


async def _insert_announced(
    conn: AsyncConnection, announced: Sequence[tuple[Change, str, str | None]]
) -> None:
    """Changes, each with its owner and the URL its webhook goes to (None: no webhook)."""
    rows = []
    hooks = []
    now = utcnow()  # the outbox runs on the database's clock, as for jobs
    for change, owner, callback_url in announced:
        diff = change.diff
        rows.append(
            {
                "id": change.id,
                "monitor_id": change.monitor_id,
                "owner": owner,
                "job_id": change.job_id,
                "url": change.url,
                "kind": change.kind.value,
                "run": change.run,
                "previous_run": change.previous_run,
                "previous_job_id": change.previous_job_id,
                "detected_at": change.detected_at,
                "diff": diff.markdown.text if diff is not None else None,
                "diff_complete": diff.markdown.complete if diff is not None else None,
                "diff_coarse": diff.markdown.coarse if diff is not None else None,
                "metadata": diff.metadata if diff is not None else None,
            }
        )
        if callback_url:
            event, payload = change_webhook(change)
            hooks.append(
                {
                    "id": uuid.uuid4(),
                    "job_id": change.job_id,
                    "owner": owner,
                    "url": callback_url,
                    "event": event.value,
                    "payload": payload,
                    "status": DeliveryStatus.PENDING.value,
                    "attempts": 0,
                    "next_attempt_at": now,
                    "created_at": now,
                }
            )
    if rows:
        await conn.execute(monitor_changes.insert(), rows)
    if hooks:
        await conn.execute(webhook_deliveries.insert(), hooks)


#: What a change weighs in a page besides its diff, URL and metadata (ids, times, names).
CHANGE_OVERHEAD_BYTES = 512


def _page_of(sized: Sequence[Any], max_bytes: int | None) -> list[UUID]:
    """The ids of the leading changes whose sizes fit in ``max_bytes`` (at least one)."""
    ids: list[UUID] = []
    total = 0
    for row in sized:
        total += row.diff_bytes + row.metadata_bytes + row.url_bytes + CHANGE_OVERHEAD_BYTES
        if ids and max_bytes is not None and total > max_bytes:
            break
        ids.append(row.id)
    return ids


def _change(row: Any) -> Change:
    diff = None
    if row.diff is not None:
        text = TextDiff(
            row.diff,
            complete=bool(row.diff_complete),
            coarse=bool(row.diff_coarse),
        )
        diff = PageDiff(text, dict(row.metadata or {}))
    return Change(
        id=row.id,
        monitor_id=row.monitor_id,
        kind=ChangeKind(row.kind),
        url=row.url,
        job_id=row.job_id,
        detected_at=row.detected_at,
        run=row.run,
        previous_run=row.previous_run,
        diff=diff,
        # A changed page's row without one was compared with its own job's run.
        previous_job_id=row.previous_job_id
        or (row.job_id if row.kind == ChangeKind.CHANGED.value else None),
    )


async def _apply_retention(
    conn: AsyncConnection, job_ids: Sequence[UUID], policy: RetentionPolicy, now: datetime
) -> None:
    """Drop the runs of ``job_ids`` the policy no longer keeps (never one a kept run reads),
    their content and their rows in ``job_runs``."""
    if policy.keep_runs is None and policy.keep_days is None:
        return
    over = sa.select(run_contents.c.job_id).where(run_contents.c.job_id.in_(set(job_ids)))
    if policy.keep_days is None and policy.keep_runs is not None:
        # Only jobs past the count have anything to drop: most rounds, none.
        over = over.group_by(run_contents.c.job_id).having(sa.func.count() > policy.keep_runs)
    crowded = list(set((await conn.execute(over)).scalars()))
    if not crowded:
        return
    rows = (
        await conn.execute(
            sa.select(
                run_contents.c.job_id,
                run_contents.c.run,
                run_contents.c.fetched_at,
                run_contents.c.content_run,
            ).where(run_contents.c.job_id.in_(crowded))
        )
    ).all()
    history: dict[UUID, list[RunInfo]] = {}
    for r in rows:
        history.setdefault(r.job_id, []).append(RunInfo(r.run, r.fetched_at, r.content_run))
    for job_id, runs in history.items():
        drop = runs_to_drop(runs, policy, now)
        if drop:
            # The job's own record of those runs goes with them: a watched page runs every
            # interval, and its history would otherwise grow without end.
            for table in (run_contents, job_runs):
                await conn.execute(
                    table.delete().where(table.c.job_id == job_id, table.c.run.in_(drop))
                )
