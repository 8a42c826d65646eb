"""All SQL about jobs. Every state change is a guarded UPDATE, so a late or duplicate worker can
never overwrite a newer state; writes take lists, so callers can batch them."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from taskcrawler.common.errors import translate_errors
from taskcrawler.domain import ClaimedJob, Job, JobStatus, Outcome, StorageUnavailable
from taskcrawler.domain.errors import ErrorCode
from taskcrawler.domain.urls import normalize_url
from taskcrawler.storage.engine import create_engine
from taskcrawler.storage.tables import jobs

PENDING = JobStatus.PENDING.value
PROCESSING = JobStatus.PROCESSING.value

_JOB_COLUMNS = (
    jobs.c.id,
    jobs.c.url,
    jobs.c.status,
    jobs.c.retry_count,
    jobs.c.created_at,
    jobs.c.scraped_title,
    jobs.c.error_log,
    jobs.c.error_code,
    jobs.c.http_status,
    jobs.c.final_url,
    jobs.c.content_type,
    jobs.c.started_at,
    jobs.c.finished_at,
    jobs.c.next_attempt_at,
    jobs.c.result,
)


def utcnow() -> datetime:
    return datetime.now(UTC)


def url_key(url: str) -> str:
    return hashlib.sha256(normalize_url(url).encode()).hexdigest()


def _row_to_job(row: Any) -> Job:
    m = row._mapping
    return Job(
        id=m["id"],
        url=m["url"],
        status=JobStatus(m["status"]),
        retry_count=m["retry_count"],
        created_at=m["created_at"],
        scraped_title=m["scraped_title"],
        error_log=m["error_log"],
        error_code=m["error_code"],
        http_status=m["http_status"],
        final_url=m["final_url"],
        content_type=m["content_type"],
        started_at=m["started_at"],
        finished_at=m["finished_at"],
        next_attempt_at=m["next_attempt_at"],
        result=m["result"],
    )


def _storage_error(exc: Exception) -> Exception | None:
    """ "The database cannot be reached" as :class:`StorageUnavailable`; other errors unchanged."""
    if isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError):
        return StorageUnavailable(str(exc.orig or exc))
    if isinstance(exc, sa.exc.DBAPIError):
        return StorageUnavailable(str(exc.orig or exc)) if exc.connection_invalidated else None
    if isinstance(exc, OSError | TimeoutError):
        return StorageUnavailable(f"{type(exc).__name__}: {exc}")
    return None


_unavailable_on_connection_errors = translate_errors(_storage_error)


@dataclass(frozen=True, slots=True)
class NewJob:
    url: str
    owner: str = ""


@dataclass(frozen=True, slots=True)
class Created:
    job: Job
    created: bool


class JobStore:
    """Jobs in PostgreSQL or SQLite, through one SQLAlchemy async engine."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name
        # SQLite has one writer at a time; queueing writes here beats "database is locked" retries.
        self._write_lock = asyncio.Lock() if self.dialect == "sqlite" else None

    @classmethod
    def from_url(cls, url: str, *, pool_size: int = 10) -> JobStore:
        return cls(create_engine(url, pool_size=pool_size))

    async def close(self) -> None:
        await self.engine.dispose()

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        if self._write_lock is None:
            async with self.engine.begin() as conn:
                yield conn
            return
        async with self._write_lock, self.engine.begin() as conn:
            yield conn

    def _insert(self) -> Any:
        module = postgresql if self.dialect == "postgresql" else sqlite
        return module.insert(jobs)

    # --- submit ---------------------------------------------------------------------------

    @_unavailable_on_connection_errors
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
        async with self._write() as conn:
            stmt = (
                self._insert()
                .values(list(rows.values()))
                .on_conflict_do_nothing(index_elements=["owner", "url_key"])
                .returning(*_JOB_COLUMNS)
            )
            inserted = {job.id: job for job in map(_row_to_job, await conn.execute(stmt))}
            missing = [k for k, row in rows.items() if row["id"] not in inserted]
            existing: dict[tuple[str, str], Job] = {}
            if missing:
                found = await conn.execute(
                    sa.select(*_JOB_COLUMNS, jobs.c.owner, jobs.c.url_key).where(
                        sa.tuple_(jobs.c.owner, jobs.c.url_key).in_(missing)
                    )
                )
                for row in found:
                    existing[(row.owner, row.url_key)] = _row_to_job(row)
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

    @_unavailable_on_connection_errors
    async def get_job(self, job_id: UUID, *, owner: str = "") -> Job | None:
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    sa.select(*_JOB_COLUMNS).where(jobs.c.id == job_id, jobs.c.owner == owner)
                )
            ).first()
        return _row_to_job(row) if row else None

    @_unavailable_on_connection_errors
    async def mark_dispatch_due(self, job_ids: Sequence[UUID]) -> None:
        """Publishing failed: let the next sweep publish these at once instead of after the
        redispatch delay."""
        if not job_ids:
            return
        async with self._write() as conn:
            await conn.execute(
                jobs.update()
                .where(jobs.c.id.in_(job_ids), jobs.c.status == PENDING)
                .values(dispatch_at=utcnow())
            )

    # --- worker ---------------------------------------------------------------------------

    @_unavailable_on_connection_errors
    async def claim(
        self, job_ids: Sequence[UUID], *, lease_seconds: float, redispatch_after: float
    ) -> list[ClaimedJob]:
        """PENDING -> PROCESSING for those of ``job_ids`` that are due, under a fresh lease.

        A duplicate delivery, or a message about a job whose retry is not due yet, matches no row.
        """
        if not job_ids:
            return []
        now = utcnow()
        token = uuid.uuid4()
        stmt = (
            jobs.update()
            .where(
                jobs.c.id.in_(job_ids),
                jobs.c.status == PENDING,
                jobs.c.next_attempt_at.is_(None),
            )
            .values(
                status=PROCESSING,
                lease_token=token,
                lease_expires_at=now + timedelta(seconds=lease_seconds),
                started_at=now,
                dispatch_at=None,
            )
            .returning(jobs.c.id, jobs.c.url, jobs.c.retry_count)
        )
        async with self._write() as conn:
            rows = (await conn.execute(stmt)).all()
        return [ClaimedJob(r.id, r.url, r.retry_count, token) for r in rows]

    @_unavailable_on_connection_errors
    async def release(self, claimed: Sequence[ClaimedJob]) -> list[UUID]:
        """Hand jobs back unfinished (graceful shutdown): PENDING again, no attempt counted,
        due for the next sweep. Returns the ids released."""
        if not claimed:
            return []
        released: list[UUID] = []
        async with self._write() as conn:
            for job in claimed:
                rows = await conn.execute(
                    jobs.update()
                    .where(
                        jobs.c.id == job.id,
                        jobs.c.lease_token == job.lease_token,
                        jobs.c.status == PROCESSING,
                    )
                    .values(
                        status=PENDING,
                        next_attempt_at=None,
                        dispatch_at=utcnow(),
                        lease_token=None,
                        lease_expires_at=None,
                    )
                    .returning(jobs.c.id)
                )
                released.extend(rows.scalars())
        return released

    @_unavailable_on_connection_errors
    async def renew_leases(self, tokens: Sequence[UUID], *, lease_seconds: float) -> int:
        if not tokens:
            return 0
        async with self._write() as conn:
            result = await conn.execute(
                jobs.update()
                .where(jobs.c.lease_token.in_(tokens), jobs.c.status == PROCESSING)
                .values(lease_expires_at=utcnow() + timedelta(seconds=lease_seconds))
            )
        return result.rowcount

    @_unavailable_on_connection_errors
    async def record_outcomes(
        self,
        outcomes: Sequence[Outcome],
        *,
        max_retries: int,
        retry_delay: Callable[[Outcome], float],
    ) -> None:
        """Persist many attempts in one transaction: COMPLETED, a scheduled retry, or FAILED.

        Each write is guarded by the job's lease token, so an attempt that lost its lease (and
        whose job another worker now holds) changes nothing.
        """
        completed: list[dict[str, Any]] = []
        retried: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for outcome in outcomes:
            job = outcome.job
            guard = {"b_id": job.id, "b_token": job.lease_token}
            if outcome.succeeded:
                completed.append(
                    guard
                    | {
                        "status": JobStatus.COMPLETED.value,
                        "http_status": outcome.http_status,
                        "final_url": outcome.final_url,
                        "content_type": outcome.content_type,
                        "scraped_title": outcome.scraped_title,
                        "result": outcome.result,
                        "error_code": None,
                        "error_log": None,
                        "finished_at": outcome.finished_at,
                    }
                )
                continue
            error = {
                "http_status": outcome.http_status,
                "final_url": outcome.final_url,
                "content_type": outcome.content_type,
                "error_code": outcome.error_code,
                "error_log": f"{outcome.error_code}: {outcome.error_message}",
            }
            if outcome.transient and job.retry_count < max_retries:
                due = outcome.finished_at + timedelta(seconds=retry_delay(outcome))
                retried.append(
                    guard
                    | error
                    | {
                        "status": PENDING,
                        "retry_count": job.retry_count + 1,
                        "next_attempt_at": due,
                        "dispatch_at": due,
                    }
                )
            else:
                failed.append(
                    guard
                    | error
                    | {"status": JobStatus.FAILED.value, "finished_at": outcome.finished_at}
                )
        guarded = jobs.c.id == sa.bindparam("b_id")
        owned = jobs.c.lease_token == sa.bindparam("b_token")
        async with self._write() as conn:
            for params in (completed, retried, failed):
                if not params:
                    continue
                columns: dict[str, Any] = {
                    k: sa.bindparam(k) for k in params[0] if not k.startswith("b_")
                }
                columns |= {"lease_token": None, "lease_expires_at": None}
                stmt = (
                    jobs.update().where(guarded, owned, jobs.c.status == PROCESSING).values(columns)
                )
                await conn.execute(stmt, params)

    # --- sweeper --------------------------------------------------------------------------

    @_unavailable_on_connection_errors
    async def recover_expired_leases(self, *, max_retries: int, limit: int = 1000) -> list[UUID]:
        """PROCESSING jobs whose worker stopped renewing the lease go back to PENDING (one more
        attempt counted), or to FAILED past the retry limit. Returns the ids to publish again."""
        now = utcnow()
        expired = (
            sa.select(jobs.c.id)
            .where(jobs.c.status == PROCESSING, jobs.c.lease_expires_at < now)
            .order_by(jobs.c.lease_expires_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        reason = f"{ErrorCode.WORKER_LOST}: the worker stopped renewing its lease"
        base = jobs.update().where(
            jobs.c.id.in_(expired.scalar_subquery()),
            jobs.c.status == PROCESSING,
            jobs.c.lease_expires_at < now,
        )
        async with self._write() as conn:
            await conn.execute(
                base.where(jobs.c.retry_count >= max_retries).values(
                    status=JobStatus.FAILED.value,
                    error_code=ErrorCode.WORKER_LOST.value,
                    error_log=reason,
                    finished_at=now,
                    lease_token=None,
                    lease_expires_at=None,
                )
            )
            rows = await conn.execute(
                base.where(jobs.c.retry_count < max_retries)
                .values(
                    status=PENDING,
                    retry_count=jobs.c.retry_count + 1,
                    error_code=ErrorCode.WORKER_LOST.value,
                    error_log=reason,
                    next_attempt_at=None,
                    dispatch_at=now,
                    lease_token=None,
                    lease_expires_at=None,
                )
                .returning(jobs.c.id)
            )
            return list(rows.scalars())

    @_unavailable_on_connection_errors
    async def take_due_dispatches(
        self, *, redispatch_after: float, limit: int = 1000, include_undispatched: bool = False
    ) -> list[UUID]:
        """PENDING jobs that are due and that nobody claimed: a retry whose time came, a publish
        that failed, a message lost with Redis. Marks them dispatched and returns their ids.

        ``include_undispatched`` also takes every PENDING job that is not waiting for a retry,
        whatever its dispatch time: an in-process queue that just started is empty, so nothing
        it once held can still be in it.
        """
        now = utcnow()
        is_due = jobs.c.dispatch_at <= now
        if include_undispatched:
            is_due = sa.or_(is_due, jobs.c.next_attempt_at.is_(None))
        due = (
            sa.select(jobs.c.id)
            .where(jobs.c.status == PENDING, is_due)
            .order_by(jobs.c.dispatch_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        stmt = (
            jobs.update()
            .where(jobs.c.id.in_(due.scalar_subquery()), jobs.c.status == PENDING)
            .values(next_attempt_at=None, dispatch_at=now + timedelta(seconds=redispatch_after))
            .returning(jobs.c.id)
        )
        async with self._write() as conn:
            return list((await conn.execute(stmt)).scalars())

    @_unavailable_on_connection_errors
    async def ping(self) -> None:
        async with self.engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))
