"""Monitors as the workers see them: the slots fired, change detection and pruning history.

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
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain.crawls import CrawlStatus
from taskcrawler.domain.errors import InvalidURL
from taskcrawler.domain.jobs import JobStatus
from taskcrawler.domain.monitors import (
    Change,
    ChangeRetention,
    CrawlRound,
    CrawlRoundReading,
    FiredSlot,
    Monitor,
    MonitorSpec,
    PageRun,
    RunReading,
    Snapshot,
    StoredRun,
)
from taskcrawler.domain.runs import RetentionPolicy, RunContent, RunInfo, runs_to_drop
from taskcrawler.domain.urls import crawl_key
from taskcrawler.domain.webhooks import DeliveryStatus, change_webhook
from taskcrawler.storage.backend import Backend
from taskcrawler.storage.crawls import start_crawl
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.jobs import hold_owners, mark_dispatch_due, start_new_runs
from taskcrawler.storage.monitors import MONITOR_COLUMNS, row_to_monitor, row_to_stored_run
from taskcrawler.storage.rows import FINAL_STATUSES, PENDING, utcnow
from taskcrawler.storage.tables import (
    UTCDateTime,
    api_keys,
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
#: (job, run) pairs whose blobs one statement reads at most.
BLOB_PAIRS_PER_READ = 1_000


# The polls' first reads, made by every worker each second and built once (SQLAlchemy caches
# the compiled form, not the building). Each is its method's condition, spelled the same.
_NOW: sa.BindParameter[datetime] = sa.bindparam("now")
_ANY_DUE = (
    sa.select(monitors.c.id)
    .where(sa.not_(monitors.c.paused), monitors.c.next_due_at <= _NOW)
    .limit(1)
)
_ANY_UNREAD_ROUND = (
    sa.select(monitor_crawls.c.crawl_id)
    .select_from(monitor_crawls.join(crawls, crawls.c.id == monitor_crawls.c.crawl_id))
    .where(
        monitor_crawls.c.read_at.is_(None),
        crawls.c.status != CrawlStatus.RUNNING.value,
        sa.or_(monitor_crawls.c.reading_until.is_(None), monitor_crawls.c.reading_until < _NOW),
    )
    .limit(1)
)
_ANY_UNREAD_RUN = (
    sa.select(monitor_pages.c.job_id)
    .select_from(monitor_pages.join(jobs, jobs.c.id == monitor_pages.c.job_id))
    .where(
        monitor_pages.c.awaiting_read,
        sa.or_(monitor_pages.c.reading_until.is_(None), monitor_pages.c.reading_until < _NOW),
        jobs.c.status.in_(FINAL_STATUSES),
        sa.or_(
            monitor_pages.c.evaluated_run.is_(None),
            jobs.c.run_count > monitor_pages.c.evaluated_run,
        ),
    )
    .limit(1)
)


class MonitorWorkStore:
    def __init__(self, db: Database) -> None:
        self.db = db

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
    async def fire_due(
        self,
        *,
        now: datetime,
        redispatch_after: float,
        limit: int = 100,
        pending_limit: int | None = None,
    ) -> list[FiredSlot]:
        """Fire the due slot of up to ``limit`` due monitors (see the module). A round is
        held to its owner's limit of unfinished jobs (its key's, else ``pending_limit``) as a
        batch of submissions is: one that would pass it runs none of its pages."""
        fired: list[FiredSlot] = []
        # Spelled as the partial index's predicate (NOT paused), so the planner can use it.
        is_due = (sa.not_(monitors.c.paused), monitors.c.next_due_at <= now)
        async with self.db.read_statement() as conn:
            # A read first: most polls find nothing due, and on SQLite a write would queue
            # behind (and hold up) the single writer.
            if await conn.scalar(_ANY_DUE, {"now": now}) is None:
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
                    .returning(*MONITOR_COLUMNS)
                )
            ).all()
            limits = _Limits(self.db.backend, pending_limit)
            fired = await _fire(conn, self.db.backend, due, now, redispatch_after, limits)
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
        async with self.db.read_statement() as conn:
            # A read first: most polls find nothing (SQLite's single writer is not queued for).
            if await conn.scalar(_ANY_UNREAD_ROUND, {"now": now}) is None:
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
            stored = row_to_stored_run(row)
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
        async with self.db.read_statement() as conn:
            # A read first: most polls find nothing, and on SQLite a write would queue behind
            # (and hold up) the single writer.
            if await conn.scalar(_ANY_UNREAD_RUN, {"now": now}) is None:
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
            stored = row_to_stored_run(row)
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
            restarted = await _run_again(
                conn, self.db.backend, due, now=utcnow(), redispatch_after=redispatch_after
            )
            if restarted:
                await conn.execute(
                    monitor_pages.update()
                    .where(monitor_pages.c.job_id.in_(restarted))
                    .values(awaiting_read=True, run_due=False)
                )
        return sorted(restarted)


async def _fire(
    conn: AsyncConnection,
    backend: Backend,
    rows: Sequence[Any],
    now: datetime,
    redispatch_after: float,
    limits: _Limits,
) -> list[FiredSlot]:
    """Fire the due slot of each of ``rows`` (monitors this transaction holds locked): a few
    statements for the whole batch, whatever its size (their pages, up to a thousand a monitor,
    are bound as one array each: an IN list binds a value each, past what a statement takes)."""
    plans = []
    for row in rows:
        monitor = row_to_monitor(row, ())
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
    held_back = await limits.rounds_past(
        conn, [monitor for monitor, _ in plans if monitor.id in firing], pages
    )
    crawling = await _start_crawls(
        conn,
        [
            replace(monitor, last_slot_at=plan.fire)
            for monitor, plan in plans
            if plan.fire is not None and monitor.spec.is_crawl and monitor.id not in held_back
        ],
        now,
        redispatch_after,
    )
    finished = [p for p in pages if p.status in FINAL_STATUSES and p.monitor_id not in held_back]
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
            .where(backend.any_of(jobs.c.id, waiting), jobs.c.dispatch_at.is_(None))
            .values(dispatch_at=now + timedelta(seconds=redispatch_after))
        )
    restarted = await _run_again(conn, backend, ready, now=now, redispatch_after=redispatch_after)
    if restarted:
        await conn.execute(
            monitor_pages.update()
            .where(backend.any_of(monitor_pages.c.job_id, restarted))
            .values(awaiting_read=True, run_due=False)
        )
    if unread:
        await conn.execute(
            monitor_pages.update()
            .where(backend.any_of(monitor_pages.c.job_id, unread))
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


class _Limits:
    """The owners' limits of unfinished jobs that a firing holds monitor rounds to."""

    def __init__(self, backend: Backend, default: int | None) -> None:
        self.backend = backend
        self.default = default  # the service's, for an owner whose key sets none

    async def rounds_past(
        self, conn: AsyncConnection, firing: Sequence[Monitor], pages: Sequence[Any]
    ) -> set[UUID]:
        """The monitors of ``firing`` whose round would make their owner's unfinished jobs
        more than its limit: they run none of their pages this round. A round adds a job for
        each finished page it runs again (now, or once its last run is read), or the start
        page of a crawl (counted also when the last crawl, still unread, makes the round sit
        out); it is admitted or refused whole, as a batch is. The owners limited are held
        (:func:`hold_owners`) until the firing commits, so that no submission passes the
        limit together with a round."""
        limits = await self._of(conn, {monitor.owner for monitor in firing})
        if not limits:
            return set()
        unfinished = await hold_owners(conn, self.backend, limits)
        again = Counter(page.monitor_id for page in pages if page.status in FINAL_STATUSES)
        refused: set[UUID] = set()
        for monitor in firing:
            limit = limits.get(monitor.owner)
            adding = 1 if monitor.spec.is_crawl else again[monitor.id]
            if limit is None or not adding:
                continue
            if unfinished[monitor.owner] + adding > limit:
                refused.add(monitor.id)
            else:
                unfinished[monitor.owner] += adding
        return refused

    async def _of(self, conn: AsyncConnection, owners: set[str]) -> dict[str, int]:
        """Each limited owner's limit: its key's, else the default."""
        rows = await conn.execute(
            sa.select(api_keys.c.id, api_keys.c.max_pending_jobs).where(
                api_keys.c.id.in_(owners), api_keys.c.max_pending_jobs.is_not(None)
            )
        )
        own: dict[str, int] = {row.id: row.max_pending_jobs for row in rows}
        limits = {owner: own.get(owner) or self.default for owner in owners}
        return {owner: limit for owner, limit in limits.items() if limit is not None}


async def _run_again(
    conn: AsyncConnection,
    backend: Backend,
    job_ids: Sequence[UUID],
    *,
    now: datetime,
    redispatch_after: float,
) -> set[UUID]:
    """What ``POST /api/v1/jobs/{id}/retry`` does to a finished job (its run to ``job_runs``,
    the job PENDING again with one more run), for a round's jobs at once: the history is
    copied inside the database, and only ids come back (storage.jobs returns whole jobs)."""
    if not job_ids:
        return set()
    finished = (backend.any_of(jobs.c.id, job_ids), jobs.c.status.in_(FINAL_STATUSES))
    restarted = await start_new_runs(
        conn, finished, now=now, redispatch_after=redispatch_after, returning=(jobs.c.id,)
    )
    return set(restarted.scalars())


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


def _round_key(monitor_id: UUID, slot_at: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(monitor_crawls.c.monitor_id == monitor_id, monitor_crawls.c.slot_at == slot_at)


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
    wanted = sorted((job_id, run) for job_id, run in keys if run is not None)
    found: dict[tuple[UUID, int], bytes] = {}
    # A slice per statement: a round of small pages reads tens of thousands of pairs, and a
    # list of pairs that long is past what PostgreSQL plans (its stack depth limit) or binds.
    for start in range(0, len(wanted), BLOB_PAIRS_PER_READ):
        rows = await conn.execute(_blobs_of(set(wanted[start : start + BLOB_PAIRS_PER_READ])))
        found.update(((row.job_id, row.run), bytes(row.blob)) for row in rows)
    return found


def _blobs_of(wanted: set[tuple[UUID, int]]) -> sa.Select[Any]:
    """The blobs of exactly these (job, run) pairs: a job's other runs are not read (each job
    keeps up to a hundred, and a blob can be megabytes)."""
    return sa.select(run_contents.c.job_id, run_contents.c.run, run_contents.c.blob).where(
        sa.tuple_(run_contents.c.job_id, run_contents.c.run).in_(sorted(wanted)),
        run_contents.c.blob.is_not(None),
    )


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
