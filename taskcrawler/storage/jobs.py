"""Jobs as the API sees them: submit idempotently, read, list, cancel, re-run."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain.jobs import (
    Created,
    Job,
    JobQuery,
    JobRun,
    JobStatus,
    NewJob,
    QueueCounts,
)
from taskcrawler.domain.rendering import RenderRequest
from taskcrawler.domain.scrape_options import ScrapeOptions
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.rows import (
    DEFAULT_FORMATS,
    FINAL_STATUSES,
    JOB_COLUMNS,
    PENDING,
    row_to_job,
    url_key,
    utcnow,
)
from taskcrawler.storage.tables import job_runs, jobs

if TYPE_CHECKING:
    from taskcrawler.storage.postgres.pinned import PinnedConnection


class JobStore:
    def __init__(self, db: Database, *, pinned: PinnedConnection | None = None) -> None:
        self.db = db
        self._pinned = pinned

    def with_pinned_connection(self) -> JobStore:
        """This store, inserting new jobs through a connection of its own on PostgreSQL: for a
        caller that submits one batch at a time, as the API's group commit does."""
        if not self.db.backend.pins_connections:
            return self
        return JobStore(self.db, pinned=self.db.pinned())

    @unavailable_on_connection_errors
    async def create_jobs(
        self, requests: Sequence[NewJob], *, redispatch_after: float
    ) -> list[Created]:
        """Insert new jobs, or find the existing ones, in one round trip for the insert.

        Idempotency is the unique (owner, url_key) index with ON CONFLICT DO NOTHING: atomic, so
        concurrent submissions of one URL create exactly one row, never check-then-insert.
        An existing finished job older than the request's ``max_age`` is started again.
        """
        now = utcnow()
        keys = [(r.owner, url_key(r.url)) for r in requests]
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for request, key in zip(requests, keys, strict=True):
            rows.setdefault(key, _new_row(request, key[1], now, redispatch_after))
        inserted_ids = await self._insert_new(list(rows.values()))
        inserted = {row["id"]: _new_job(row) for row in rows.values() if row["id"] in inserted_ids}
        missing = [k for k, row in rows.items() if row["id"] not in inserted]
        existing: dict[tuple[str, str], Job] = {}
        restarted: dict[tuple[str, str], Job] = {}
        if missing:  # URLs that already have a job: a transaction of their own, rarely needed
            async with self.db.write() as conn:
                existing = await self._existing(conn, missing)
                restarted = await self._refresh_stale(
                    conn, requests, keys, existing, now, redispatch_after
                )
        results: list[Created] = []
        seen: set[UUID] = set()
        for key in keys:
            row_id = rows[key]["id"]
            if row_id in inserted:
                results.append(Created(inserted[row_id], created=row_id not in seen))
                seen.add(row_id)
            elif key in restarted:
                job = restarted[key]
                results.append(Created(job, created=False, restarted=job.id not in seen))
                seen.add(job.id)
            else:
                results.append(Created(existing[key], created=False))
        return results

    async def _insert_new(self, rows: list[dict[str, Any]]) -> set[UUID]:
        """Insert the rows whose (owner, url_key) is new; the ids of those inserted."""
        return await self.db.backend.insert_new_jobs(self.db, rows, self._pinned)

    async def _existing(
        self, conn: AsyncConnection, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], Job]:
        if not keys:
            return {}
        found = await conn.execute(
            sa.select(*JOB_COLUMNS, jobs.c.owner, jobs.c.url_key).where(
                sa.tuple_(jobs.c.owner, jobs.c.url_key).in_(keys)
            )
        )
        return {(row.owner, row.url_key): row_to_job(row) for row in found}

    async def _refresh_stale(
        self,
        conn: AsyncConnection,
        requests: Sequence[NewJob],
        keys: Sequence[tuple[str, str]],
        existing: dict[tuple[str, str], Job],
        now: datetime,
        redispatch_after: float,
    ) -> dict[tuple[str, str], Job]:
        stale: dict[UUID, tuple[str, str]] = {}
        asked: dict[UUID, ScrapeOptions] = {}
        for request, key in zip(requests, keys, strict=True):
            job = existing.get(key)
            if job is None or not job.status.is_final:
                continue
            asked_for = request.options
            other_page = asked_for is not None and not asked_for.same_page_as(job.options)
            if other_page or _older_than(job, request.max_age, now):
                # Asked for with other headers, selectors, languages …, or too old: the job
                # runs again, with the options of the request that asked (if it asked).
                stale[job.id] = key
                if asked_for is not None and asked_for != job.options:
                    asked[job.id] = asked_for
        if not stale:
            return {}
        await _set_options(conn, asked)
        fresh = await _restart(conn, list(stale), now=now, redispatch_after=redispatch_after)
        return {stale[job.id]: job for job in fresh}

    async def mark_dispatch_due(self, job_ids: Sequence[UUID]) -> None:
        await mark_dispatch_due(self.db, job_ids)

    @unavailable_on_connection_errors
    async def get_job(self, job_id: UUID, *, owner: str = "") -> Job | None:
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(*JOB_COLUMNS).where(jobs.c.id == job_id, jobs.c.owner == owner)
                )
            ).first()
        return row_to_job(row) if row else None

    @unavailable_on_connection_errors
    async def list_jobs(self, query: JobQuery) -> tuple[list[Job], str | None]:
        """A page of ``query.owner``'s jobs, newest first, and the cursor of the next page.

        The cursor is the (created_at, id) of the last job shown, so pages do not shift when
        jobs are added meanwhile: new jobs sort before the first page, never into a later one.
        """
        stmt = sa.select(*JOB_COLUMNS).where(*_filters(query))
        if query.cursor is not None:
            created_at, job_id = decode_cursor(query.cursor)
            stmt = stmt.where(sa.tuple_(jobs.c.created_at, jobs.c.id) < (created_at, job_id))
        stmt = stmt.order_by(jobs.c.created_at.desc(), jobs.c.id.desc()).limit(query.limit + 1)
        async with self.db.read() as conn:
            found = [row_to_job(row) for row in await conn.execute(stmt)]
        page, more = found[: query.limit], len(found) > query.limit
        return page, encode_cursor(page[-1]) if more and page else None

    @unavailable_on_connection_errors
    async def count_unfinished(self, owner: str) -> int:
        async with self.db.read() as conn:
            count = await conn.scalar(
                sa.select(sa.func.count())
                .select_from(jobs)
                .where(jobs.c.owner == owner, jobs.c.status.in_(UNFINISHED_STATUSES))
            )
        return int(count or 0)

    @unavailable_on_connection_errors
    async def queue_counts(self, owner: str) -> QueueCounts:
        """``owner``'s jobs waiting and being fetched, and when one last completed."""
        async with self.db.read() as conn:
            rows = await conn.execute(
                sa.select(jobs.c.status, sa.func.count())
                .where(jobs.c.owner == owner, jobs.c.status.in_(UNFINISHED_STATUSES))
                .group_by(jobs.c.status)
            )
            counts = {status: int(count) for status, count in rows}
            latest = await conn.scalar(
                sa.select(sa.func.max(jobs.c.finished_at)).where(
                    jobs.c.owner == owner, jobs.c.status == JobStatus.COMPLETED.value
                )
            )
        return QueueCounts(
            pending=counts.get(PENDING, 0),
            processing=counts.get(JobStatus.PROCESSING.value, 0),
            last_completed_at=_aware(latest),
        )

    @unavailable_on_connection_errors
    async def cancel(self, job_id: UUID, *, owner: str = "") -> tuple[Job | None, bool]:
        """PENDING -> CANCELLED. Returns the job (None if unknown) and whether it changed."""
        now = utcnow()
        async with self.db.write() as conn:
            row = (
                await conn.execute(
                    jobs.update()
                    .where(jobs.c.id == job_id, jobs.c.owner == owner, jobs.c.status == PENDING)
                    .values(
                        status=JobStatus.CANCELLED.value,
                        finished_at=now,
                        next_attempt_at=None,
                        dispatch_at=None,
                    )
                    .returning(*JOB_COLUMNS)
                )
            ).first()
        if row is not None:
            return row_to_job(row), True
        return await self.get_job(job_id, owner=owner), False

    @unavailable_on_connection_errors
    async def restart(
        self, job_ids: Sequence[UUID], *, owner: str, redispatch_after: float
    ) -> list[Job]:
        """Run finished jobs again: the same id, a new run; the previous run goes to history.
        Jobs that are not finished (or not ``owner``'s) are left as they are."""
        async with self.db.write() as conn:
            owned = await conn.execute(
                sa.select(jobs.c.id).where(jobs.c.id.in_(job_ids), jobs.c.owner == owner)
            )
            return await _restart(
                conn, list(owned.scalars()), now=utcnow(), redispatch_after=redispatch_after
            )

    @unavailable_on_connection_errors
    async def restart_matching(
        self, query: JobQuery, *, redispatch_after: float, limit: int = 10_000
    ) -> list[Job]:
        """Bulk re-run: every finished job of ``query.owner`` that matches the filters."""
        async with self.db.write() as conn:
            ids = await conn.execute(
                sa.select(jobs.c.id)
                .where(*_filters(query), jobs.c.status.in_(FINAL_STATUSES))
                .order_by(jobs.c.created_at)
                .limit(limit)
            )
            return await _restart(
                conn, list(ids.scalars()), now=utcnow(), redispatch_after=redispatch_after
            )

    @unavailable_on_connection_errors
    async def runs(self, job_id: UUID) -> list[JobRun]:
        """Earlier runs of a job, oldest first (the current run is the job itself)."""
        async with self.db.read() as conn:
            rows = await conn.execute(
                sa.select(*(job_runs.c[name] for name in JobRun.__dataclass_fields__))
                .where(job_runs.c.job_id == job_id)
                .order_by(job_runs.c.run)
            )
        return [JobRun(**row._mapping) for row in rows]


@unavailable_on_connection_errors
async def mark_dispatch_due(db: Database, job_ids: Sequence[UUID]) -> None:
    """Publishing failed: the next sweep must publish these (``next_attempt_at`` set marks
    "never published"; a claim waits for that sweep)."""
    if not job_ids:
        return
    now = utcnow()
    async with db.write() as conn:
        await conn.execute(
            jobs.update()
            .where(jobs.c.id.in_(job_ids), jobs.c.status == PENDING)
            .values(dispatch_at=now, next_attempt_at=now)
        )


UNFINISHED_STATUSES = (JobStatus.PENDING.value, JobStatus.PROCESSING.value)


def _aware(value: datetime | None) -> datetime | None:
    """An aggregate's datetime: SQLite hands back a naive UTC one (no column type applies)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def _filters(query: JobQuery) -> list[sa.ColumnElement[bool]]:
    filters = [jobs.c.owner == query.owner]
    if query.statuses:
        filters.append(jobs.c.status.in_([s.value for s in query.statuses]))
    if query.host:
        filters.append(jobs.c.host == query.host.lower())
    if query.created_after:
        filters.append(jobs.c.created_at > query.created_after)
    if query.created_before:
        filters.append(jobs.c.created_at < query.created_before)
    if query.error_code:
        filters.append(jobs.c.error_code == query.error_code)
    if query.crawl_id is not None:
        filters.append(jobs.c.crawl_id == query.crawl_id)
    return filters


def encode_cursor(job: Job) -> str:
    return make_cursor(job.created_at, job.id)


def make_cursor(created_at: datetime, row_id: UUID) -> str:
    """The cursor after the row (``created_at``, ``row_id``) of a newest-first listing."""
    raw = f"{created_at.isoformat()}|{row_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    """Raises ValueError on a cursor this code did not make."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created_at, job_id = raw.split("|")
        parsed = datetime.fromisoformat(created_at)
        if parsed.tzinfo is None:
            raise ValueError("naive")
        return parsed, UUID(job_id)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError("invalid cursor") from exc


def _new_job(row: dict[str, Any]) -> Job:
    """The job a freshly inserted row is: what :func:`_new_row` set, the table's defaults."""
    return Job(
        id=row["id"],
        url=row["url"],
        status=JobStatus.PENDING,
        retry_count=row["retry_count"],
        created_at=row["created_at"],
        formats=tuple(row["formats"] or DEFAULT_FORMATS),
        callback_url=row["callback_url"],
        host=row["host"],
        render=row["render"] or "never",
        render_options=RenderRequest.from_json(row["render_options"])
        if row["render_options"] is not None
        else None,
        options=ScrapeOptions.from_json(row["options"]),
    )


def _new_row(request: NewJob, key: str, now: datetime, redispatch_after: float) -> dict[str, Any]:
    return {
        "id": uuid.uuid4(),
        "owner": request.owner,
        "url": request.url,
        "url_key": key,
        "host": (urlsplit(request.url).hostname or "").lower(),
        "status": PENDING,
        "retry_count": 0,
        "created_at": now,
        "dispatch_at": now + timedelta(seconds=redispatch_after),
        "formats": list(request.formats) if request.formats else None,
        "callback_url": request.callback_url,
        # NULL for never, the default: a job that does not render stores nothing of it.
        "render": None if request.render == "never" else request.render,
        "render_options": None
        if request.render_options is None
        else request.render_options.to_json(),
        "options": None if request.options is None else request.options.to_json(),
    }


def _older_than(job: Job, max_age: float | None, now: datetime) -> bool:
    if max_age is None or job.finished_at is None:
        return False
    return job.finished_at < now - timedelta(seconds=max_age)


async def _set_options(conn: AsyncConnection, asked: dict[UUID, ScrapeOptions]) -> None:
    """The options each finished job runs with from now on (its next run is about to start)."""
    for job_id, options in asked.items():
        await conn.execute(
            jobs.update()
            .where(jobs.c.id == job_id, jobs.c.status.in_(FINAL_STATUSES))
            .values(options=options.to_json())
        )


async def _restart(
    conn: AsyncConnection, job_ids: Sequence[UUID], *, now: datetime, redispatch_after: float
) -> list[Job]:
    """Move the current run of each finished job to ``job_runs`` and make the job PENDING."""
    if not job_ids:
        return []
    finished = (jobs.c.id.in_(job_ids), jobs.c.status.in_(FINAL_STATUSES))
    locked = (await conn.execute(sa.select(jobs.c.id).where(*finished).with_for_update())).all()
    if not locked:
        return []
    restarted = await start_new_runs(
        conn, finished, now=now, redispatch_after=redispatch_after, returning=JOB_COLUMNS
    )
    return [row_to_job(row) for row in restarted]


#: A job's run as ``job_runs`` keeps it: its columns there, from those of ``jobs``.
RUN_HISTORY: dict[str, sa.ColumnElement[Any]] = {
    "job_id": jobs.c.id,
    "run": jobs.c.run_count,
    "status": jobs.c.status,
    "retry_count": jobs.c.retry_count,
    "http_status": jobs.c.http_status,
    "scraped_title": jobs.c.scraped_title,
    "error_code": jobs.c.error_code,
    "error_log": jobs.c.error_log,
    "content_hash": jobs.c.result["metadata"]["content_hash"].as_string(),
    "started_at": jobs.c.started_at,
    "finished_at": jobs.c.finished_at,
}


async def start_new_runs(
    conn: AsyncConnection,
    finished: Sequence[sa.ColumnElement[bool]],
    *,
    now: datetime,
    redispatch_after: float,
    returning: Sequence[sa.ColumnElement[Any]],
) -> sa.CursorResult[Any]:
    """The finished jobs that ``finished`` selects run again: each one's run is copied to
    ``job_runs`` inside the database, and the job is PENDING with one more run. ``returning``
    of each job restarted."""
    await conn.execute(
        job_runs.insert().from_select(
            list(RUN_HISTORY), sa.select(*RUN_HISTORY.values()).where(*finished)
        )
    )
    return await conn.execute(
        jobs.update()
        .where(*finished)
        .values(
            status=PENDING,
            retry_count=0,
            run_count=jobs.c.run_count + 1,
            # The last result stays readable while the new run is pending, and a 304 keeps it.
            error_code=None,
            error_log=None,
            http_status=None,
            started_at=None,
            finished_at=None,
            next_attempt_at=None,
            dispatch_at=now + timedelta(seconds=redispatch_after),
        )
        .returning(*returning)
    )
