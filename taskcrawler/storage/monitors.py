"""Monitors as the API sees them: create, read, list, pause or resume, add formats, delete;
their changes and the runs their pages recorded. Every method that takes ``owner`` sees that
tenant's monitors only. The workers' side (firing slots, change detection, pruning history) is
:mod:`taskcrawler.storage.monitor_work`."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain.crawls import CrawlStatus
from taskcrawler.domain.cursors import decode_list_cursor, encode_list_cursor
from taskcrawler.domain.diffs import TextDiff
from taskcrawler.domain.jobs import Refused
from taskcrawler.domain.monitors import (
    Change,
    ChangeKind,
    Monitor,
    MonitorPage,
    MonitorSpec,
    PageDiff,
    StoredRun,
)
from taskcrawler.domain.resubmission import Asked
from taskcrawler.domain.runs import RunContent
from taskcrawler.domain.urls import host_key, normalize_url
from taskcrawler.storage.crawls import cancel_running
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import (
    retried_when_rolled_back,
    unavailable_on_connection_errors,
)
from taskcrawler.storage.jobs import hold_owners, resubmit
from taskcrawler.storage.rows import PENDING, utcnow
from taskcrawler.storage.tables import (
    crawls,
    jobs,
    metadata,
    monitor_changes,
    monitor_crawls,
    monitor_pages,
    monitor_rounds,
    monitors,
    run_contents,
)

MONITOR_COLUMNS = (
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


def _dependents_deleted(table: sa.Table, rows: sa.ColumnElement[bool]) -> list[sa.Delete]:
    """The deletes that the tables' ON DELETE CASCADE would make for the rows of ``table``
    that ``rows`` selects, the deepest first: for a database that does not run them itself."""
    statements: list[sa.Delete] = []
    for child in metadata.sorted_tables:
        for key in child.foreign_keys:
            if key.column.table is table and key.ondelete == "CASCADE":
                theirs = key.parent.in_(sa.select(key.column).where(rows).scalar_subquery())
                statements += _dependents_deleted(child, theirs)
                statements.append(child.delete().where(theirs))
    return statements


class MonitorStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @unavailable_on_connection_errors
    async def create(
        self,
        owner: str,
        spec: MonitorSpec,
        *,
        now: datetime,
        redispatch_after: float,
        pending_limit: int | None = None,
    ) -> Monitor | Refused:
        """A monitor and a job for each of its URLs, its first slot due at once.
        :class:`Refused` (nothing created) when those jobs would make ``owner``'s unfinished
        jobs more than ``pending_limit``, counted atomically with the insert as a batch of
        submissions is (:func:`~taskcrawler.storage.jobs.hold_owners`)."""
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
                "host": host_key(url),
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
            if pending_limit is not None and job_rows:
                unfinished = (await hold_owners(conn, self.db.backend, [owner]))[owner]
                if unfinished + len(job_rows) > pending_limit:
                    return Refused(limit=pending_limit, unfinished=unfinished)
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
                    sa.select(*MONITOR_COLUMNS).where(
                        monitors.c.id == monitor_id, monitors.c.owner == owner
                    )
                )
            ).first()
            if row is None:
                return None
            pages = await _pages(conn, [monitor_id])
        return row_to_monitor(row, pages.get(monitor_id, ()))

    @unavailable_on_connection_errors
    async def list_monitors(
        self, owner: str, *, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[Monitor], str | None]:
        """A page of ``owner``'s monitors, newest first; InvalidCursor for a foreign cursor."""
        stmt = sa.select(*MONITOR_COLUMNS).where(monitors.c.owner == owner)
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
        found = [row_to_monitor(row, pages.get(row.id, ())) for row in page]
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
                    sa.select(*MONITOR_COLUMNS, monitors.c.interval_seconds)
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
            mine = sa.and_(monitors.c.id == monitor_id, monitors.c.owner == owner)
            its_jobs = jobs.c.id.in_(job_ids)
            if not self.db.backend.cascades_deletes:
                dependents = _dependents_deleted(monitors, mine)
                if job_ids:
                    dependents += _dependents_deleted(jobs, its_jobs)
                for statement in dependents:
                    await conn.execute(statement)
            deleted = await conn.execute(monitors.delete().where(mine))
            if job_ids:
                await conn.execute(jobs.delete().where(its_jobs))
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
            return row_to_stored_run(row), await _content(conn, job_id, row.content_run)


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


def row_to_monitor(row: Any, pages: tuple[MonitorPage, ...]) -> Monitor:
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


def row_to_stored_run(row: Any) -> StoredRun:
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
