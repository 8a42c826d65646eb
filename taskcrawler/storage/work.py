"""Jobs as the workers see them. Every state change is a guarded UPDATE, so a late or
duplicate worker can never overwrite a newer state; writes take lists, so callers can batch."""

from __future__ import annotations

import functools
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain import ClaimedJob, JobStatus, Outcome
from taskcrawler.domain.errors import ErrorCode
from taskcrawler.storage import webhooks
from taskcrawler.storage.arrays import ArrayColumns, column_arrays, table_columns, unnested
from taskcrawler.storage.content import ContentRecord, prepare_content, write_content
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors, unavailable_or_unstorable
from taskcrawler.storage.rows import DEFAULT_FORMATS, PENDING, PROCESSING, utcnow
from taskcrawler.storage.tables import jobs


class WorkStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def concurrent_writes(self) -> int:
        """How many outcome writes (group commits) a worker keeps in flight at once.

        A commit spends most of its time waiting for the database, so on PostgreSQL a second
        one overlaps it: the event loop stayed busier (83-85% of the run against 76-82%) and
        jobs/s rose in seven alternated pairs of 5,000 pages, one by a hair (582 against 531 on
        average). Their jobs are disjoint, so the two transactions never wait for each other's
        rows. SQLite has one writer at a time anyway; there a second commit did not pay (three
        pairs: 515 against 532 jobs/s). Both were measured while the rows were still prepared
        in a helper thread, since moved onto the loop (``prepare_content``).
        """
        return 2 if self.db.dialect == "postgresql" else 1

    @unavailable_on_connection_errors
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
        lease_expires_at = now + timedelta(seconds=lease_seconds)
        if self.db.dialect == "postgresql":
            # One statement, atomic by itself: outside a transaction, sent as it is.
            params = (list(job_ids), token, lease_expires_at, now)
            async with self.db.write_statement() as conn:
                rows = (await conn.exec_driver_sql(_CLAIM_POSTGRESQL, params)).all()
        else:
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
                    lease_expires_at=lease_expires_at,
                    started_at=now,
                    dispatch_at=None,
                )
                .returning(*(jobs.c[column] for column in _CLAIMED_COLUMNS))
            )
            async with self.db.write() as conn:
                rows = (await conn.execute(stmt)).all()
        return [
            ClaimedJob(
                r.id,
                r.url,
                r.retry_count,
                token,
                tuple(r.formats or DEFAULT_FORMATS),
                etag=r.etag,
                last_modified=r.last_modified,
                callback_url=r.callback_url,
                created_at=r.created_at,
                run_count=r.run_count,
                owner=r.owner,
            )
            for r in rows
        ]

    @unavailable_on_connection_errors
    async def release(self, claimed: Sequence[ClaimedJob]) -> list[UUID]:
        """Hand jobs back unfinished (graceful shutdown): PENDING again, no attempt counted,
        due for the next sweep. Returns the ids released."""
        if not claimed:
            return []
        released: list[UUID] = []
        now = utcnow()
        async with self.db.write() as conn:
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
                        # Set, not NULL: never published, so the next sweep must publish it.
                        next_attempt_at=now,
                        dispatch_at=now,
                        lease_token=None,
                        lease_expires_at=None,
                    )
                    .returning(jobs.c.id)
                )
                released.extend(rows.scalars())
        return released

    @unavailable_on_connection_errors
    async def renew_leases(self, tokens: Sequence[UUID], *, lease_seconds: float) -> int:
        if not tokens:
            return 0
        async with self.db.write() as conn:
            result = await conn.execute(
                jobs.update()
                .where(
                    jobs.c.lease_token.in_(tokens),
                    jobs.c.status == PROCESSING,
                    jobs.c.lease_expires_at.is_not(None),  # always, and it matches ix_jobs_lease
                )
                .values(lease_expires_at=utcnow() + timedelta(seconds=lease_seconds))
            )
        return result.rowcount

    @unavailable_or_unstorable
    async def record_outcomes(
        self,
        outcomes: Sequence[Outcome],
        *,
        max_retries: int,
        retry_delay: Callable[[Outcome], float],
    ) -> None:
        """Persist many attempts in one transaction: COMPLETED, a scheduled retry, or FAILED.

        Each write is guarded by the job's lease token, so an attempt that lost its lease (and
        whose job another worker now holds) changes nothing. A value the database refuses
        raises :class:`UnstorableData` and writes nothing of the batch: the caller can then
        find the outcome at fault by writing them one by one.
        """
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for outcome in outcomes:
            kind, values = _update_for(outcome, max_retries, retry_delay)
            job = outcome.job
            groups[kind].append(values | {"b_id": job.id, "b_token": job.lease_token})
        with_content = [o for o in outcomes if o.content is not None]
        content = await prepare_content(
            [
                ContentRecord(o.job.id, o.job.owner, o.content, replaces=o.job.run_count > 0)
                for o in with_content
                if o.content
            ]
        )
        async with self.db.write() as conn:
            # Content is written only for jobs this batch still held when its guarded updates
            # released their leases: those updates hold the rows' locks until the commit.
            if self.db.dialect == "postgresql":
                held = await _update_returning_held(conn, groups)
            else:
                held = await _held(conn, with_content)
                await _update_each_kind(conn, groups)
            await webhooks.enqueue_for_outcomes(conn, outcomes)  # the outbox, same transaction
            await write_content(conn, content.only(held))

    # --- sweeper --------------------------------------------------------------------------

    @unavailable_on_connection_errors
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
        async with self.db.write() as conn:
            failed = await conn.execute(
                base.where(jobs.c.retry_count >= max_retries)
                .values(
                    status=JobStatus.FAILED.value,
                    error_code=ErrorCode.WORKER_LOST.value,
                    error_log=reason,
                    finished_at=now,
                    lease_token=None,
                    lease_expires_at=None,
                )
                .returning(jobs.c.id)
            )
            await webhooks.enqueue_for_jobs(conn, list(failed.scalars()))
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

    @unavailable_on_connection_errors
    async def take_due_dispatches(
        self,
        *,
        redispatch_after: float,
        limit: int = 1000,
        include_undispatched: bool = False,
        include_published: bool = True,
    ) -> list[UUID]:
        """PENDING jobs that are due and that nobody claimed. Marks them dispatched and returns
        their ids, to publish.

        Jobs that must be published (``next_attempt_at`` set: a retry whose time came, a publish
        that failed, a job handed back) are always taken. Jobs that were published once and not
        claimed since ``dispatch_at`` (the message may be lost with Redis) are taken only with
        ``include_published``: while the queue has a backlog they are most likely still in it.
        ``include_undispatched`` takes every PENDING job not waiting for a retry, whatever its
        dispatch time: an in-process queue that just started is empty.
        """
        now = utcnow()
        is_due = jobs.c.dispatch_at <= now
        if not include_published:
            is_due = sa.and_(is_due, jobs.c.next_attempt_at.is_not(None))
        if include_undispatched:
            is_due = sa.or_(is_due, jobs.c.next_attempt_at.is_(None))
        due = (
            sa.select(jobs.c.id)
            # dispatch_at is always set on a PENDING job; saying so matches ix_jobs_dispatch.
            .where(jobs.c.status == PENDING, jobs.c.dispatch_at.is_not(None), is_due)
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
        async with self.db.write() as conn:
            return list((await conn.execute(stmt)).scalars())

    @unavailable_on_connection_errors
    async def mark_dispatch_due(self, job_ids: Sequence[UUID]) -> None:
        """Publishing failed: the next sweep must publish these (``next_attempt_at`` set marks
        "never published"; a claim waits for that sweep)."""
        if not job_ids:
            return
        now = utcnow()
        async with self.db.write() as conn:
            await conn.execute(
                jobs.update()
                .where(jobs.c.id.in_(job_ids), jobs.c.status == PENDING)
                .values(dispatch_at=now, next_attempt_at=now)
            )


#: What a claim reads of each job it takes.
_CLAIMED_COLUMNS = (
    "id",
    "url",
    "retry_count",
    "formats",
    "etag",
    "last_modified",
    "callback_url",
    "created_at",
    "run_count",
    "owner",
)
#: The claim on PostgreSQL: one text for every batch size, its ids one array parameter.
_CLAIM_POSTGRESQL = (
    f"UPDATE jobs SET status = '{PROCESSING}', lease_token = $2, lease_expires_at = $3,"
    " started_at = $4, dispatch_at = NULL"
    f" WHERE id = ANY($1::UUID[]) AND status = '{PENDING}' AND next_attempt_at IS NULL"
    f" RETURNING {', '.join(_CLAIMED_COLUMNS)}"
)


def _update_for(
    outcome: Outcome, max_retries: int, retry_delay: Callable[[Outcome], float]
) -> tuple[str, dict[str, Any]]:
    """What one attempt changes in its job's row, and the kind of change (for grouping)."""
    finished = outcome.finished_at
    if outcome.unchanged:
        # 304 to a conditional re-fetch: the stored result is still the page's.
        return "unchanged", {
            "status": JobStatus.COMPLETED.value,
            "http_status": outcome.http_status,
            "unchanged": True,
            "error_code": None,
            "error_log": None,
            "finished_at": finished,
        }
    if outcome.succeeded:
        return "completed", {
            "status": JobStatus.COMPLETED.value,
            "http_status": outcome.http_status,
            "final_url": outcome.final_url,
            "content_type": outcome.content_type,
            "scraped_title": outcome.scraped_title,
            "result": outcome.result,
            "etag": outcome.etag,
            "last_modified": outcome.last_modified,
            "unchanged": False,
            "error_code": None,
            "error_log": None,
            "finished_at": finished,
        }
    error = {
        "http_status": outcome.http_status,
        "error_code": outcome.error_code,
        "error_log": f"{outcome.error_code}: {outcome.error_message}",
    }
    job = outcome.job
    if outcome.deferred:
        due = finished + timedelta(seconds=retry_delay(outcome))
        return "deferred", error | {"status": PENDING, "next_attempt_at": due, "dispatch_at": due}
    if outcome.transient and job.retry_count < max_retries:
        due = finished + timedelta(seconds=retry_delay(outcome))
        return "retried", error | {
            "status": PENDING,
            "retry_count": job.retry_count + 1,
            "next_attempt_at": due,
            "dispatch_at": due,
        }
    return "failed", error | {"status": JobStatus.FAILED.value, "finished_at": finished}


#: An outcome's write matches its job only while the attempt's lease still holds it.
_GUARDED = sa.and_(
    jobs.c.id == sa.bindparam("b_id"),
    jobs.c.lease_token == sa.bindparam("b_token"),
    jobs.c.status == PROCESSING,
)
#: What every outcome's write sets besides its kind's values: the lease is over.
_LEASE_ENDED = {"lease_token": None, "lease_expires_at": None}


async def _update_each_kind(conn: AsyncConnection, groups: dict[str, list[dict[str, Any]]]) -> None:
    """One executemany per kind of outcome: rows of a kind set the same columns."""
    for params in groups.values():
        columns: dict[str, Any] = {k: sa.bindparam(k) for k in params[0] if not k.startswith("b_")}
        await conn.execute(jobs.update().where(_GUARDED).values(columns | _LEASE_ENDED), params)


async def _update_returning_held(
    conn: AsyncConnection, groups: dict[str, list[dict[str, Any]]]
) -> set[UUID]:
    """PostgreSQL: one guarded UPDATE per kind of outcome, its rows unnested from arrays; the
    ids it matched are the jobs the batch still held."""
    held: set[UUID] = set()
    for params in groups.values():
        keys = ("b_id", "b_token", *(key for key in params[0] if not key.startswith("b_")))
        sql, columns = _guarded_update_postgresql(keys)
        result = await conn.exec_driver_sql(sql, column_arrays(params, columns))
        held.update(row[0] for row in result)
    return held


@functools.cache
def _guarded_update_postgresql(keys: tuple[str, ...]) -> tuple[str, ArrayColumns]:
    """``UPDATE jobs … FROM unnest(…) … RETURNING id`` for rows keyed ``b_id``, ``b_token`` and
    then the columns they set (one text per kind of outcome, whatever the batch's size), and
    the columns whose types the arrays take."""
    columns = {"b_id": jobs.c.id, "b_token": jobs.c.lease_token} | table_columns(jobs, keys[2:])
    sets = [f"{key} = v.{key}" for key in keys[2:]] + [f"{key} = NULL" for key in _LEASE_ENDED]
    sql = (
        f"UPDATE jobs SET {', '.join(sets)}"
        f" FROM {unnested(columns)} AS v({', '.join(keys)})"
        f" WHERE jobs.id = v.b_id AND jobs.lease_token = v.b_token"
        f" AND jobs.status = '{PROCESSING}' RETURNING jobs.id"
    )
    return sql, columns


async def _held(conn: AsyncConnection, outcomes: Sequence[Outcome]) -> set[UUID]:
    """SQLite: the jobs of ``outcomes`` still leased under the outcome's own token, read before
    the updates release the leases (an executemany returns no rows; SQLite's one writer keeps
    them as read until the commit). On PostgreSQL the updates return them.
    """
    if not outcomes:
        return set()
    pairs = {(o.job.id, o.job.lease_token) for o in outcomes}
    rows = await conn.execute(
        sa.select(jobs.c.id, jobs.c.lease_token).where(
            jobs.c.id.in_([job_id for job_id, _ in pairs]),
            jobs.c.lease_token.in_({token for _, token in pairs}),
            jobs.c.status == PROCESSING,
        )
    )
    return {row.id for row in rows if (row.id, row.lease_token) in pairs}
