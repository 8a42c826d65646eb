"""Jobs as the API sees them: submit idempotently, read, list, cancel, re-run."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain.cursors import decode_list_cursor, encode_list_cursor
from taskcrawler.domain.jobs import (
    Cancelled,
    Created,
    Job,
    JobQuery,
    JobRun,
    JobStatus,
    NewJob,
    QueueCounts,
    Refused,
    id_range,
)
from taskcrawler.domain.rendering import SCREENSHOT, RenderRequest
from taskcrawler.domain.resubmission import Action, Asked, Existing, Plan, plan
from taskcrawler.domain.scrape_options import ScrapeOptions
from taskcrawler.domain.urls import host_filter, host_key
from taskcrawler.storage.backend import Backend
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import (
    retried_when_rolled_back,
    unavailable_on_connection_errors,
)
from taskcrawler.storage.rows import (
    FINAL_STATUSES,
    JOB_COLUMNS,
    PENDING,
    PROCESSING,
    formats_of,
    row_to_job,
    url_key,
    utcnow,
)
from taskcrawler.storage.tables import job_batches, job_runs, jobs, monitor_pages, page_archive

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
        self, requests: Sequence[NewJob], *, redispatch_after: float, together: bool = False
    ) -> list[Created | Refused]:
        """Insert new jobs, or find the existing ones, in one round trip for the insert.

        Idempotency is the unique (owner, url_key) index with ON CONFLICT DO NOTHING: atomic, so
        concurrent submissions of one URL create exactly one row, never check-then-insert.
        What a submission does to a URL's existing job (formats it lacks, ``max_age``, a
        failure) is :func:`taskcrawler.domain.resubmission.plan`'s, applied under the job's row
        lock.

        A request with a ``pending_limit`` is held to it (:func:`_admit`): its owner's jobs are
        counted and its own inserted in one transaction that holds the owner
        (:meth:`~taskcrawler.storage.backend.Backend.hold_owners`), so submissions running at
        once, in this process or another, never pass it together. ``together``: each owner's
        requests are one submission (a batch), admitted or refused as one; else each request
        is one (a group commit's single POSTs).
        """
        if all(request.pending_limit is None for request in requests):
            return list(await self._create(requests, redispatch_after))
        async with self.db.write() as conn:
            limited = {r.owner for r in requests if r.pending_limit is not None}
            unfinished = await hold_owners(conn, self.db.backend, limited)
            verdicts = await _admit(conn, requests, unfinished, together=together)
            admitted = [r for r, refused in zip(requests, verdicts, strict=True) if not refused]
            created = iter(await self._create(admitted, redispatch_after, conn))
        return [refused or next(created) for refused in verdicts]

    async def _create(
        self,
        requests: Sequence[NewJob],
        redispatch_after: float,
        conn: AsyncConnection | None = None,
    ) -> list[Created]:
        """:meth:`create_jobs` of admitted requests, in ``conn``'s transaction if given."""
        if not requests:
            return []
        now = utcnow()
        keys = [(r.owner, url_key(r.url)) for r in requests]
        asked = _asked_by_key(requests, keys)
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for request, key in zip(requests, keys, strict=True):
            if key not in rows:
                rows[key] = _new_row(request, key[1], now, redispatch_after, asked=asked[key])
        if conn is None:
            inserted_ids = await self._insert_new(list(rows.values()))
        else:
            inserted_ids = await self.db.backend.insert_new_jobs_in(conn, list(rows.values()))
        inserted = {row["id"]: _new_job(row) for row in rows.values() if row["id"] in inserted_ids}
        missing = [k for k, row in rows.items() if row["id"] not in inserted]
        existing: dict[tuple[str, str], tuple[Job, bool]] = {}
        if missing:  # URLs that already have a job: a transaction of their own, or conn's
            async with _within(self.db, conn) as writing:
                existing = await resubmit(writing, missing, asked, now, redispatch_after)
        results: list[Created] = []
        seen: set[UUID] = set()
        for key in keys:
            row_id = rows[key]["id"]
            if row_id in inserted:
                results.append(Created(inserted[row_id], created=row_id not in seen))
                seen.add(row_id)
            else:
                job, dispatched = existing[key]
                results.append(
                    Created(job, created=False, restarted=dispatched and job.id not in seen)
                )
                seen.add(job.id)
        return results

    async def _insert_new(self, rows: list[dict[str, Any]]) -> set[UUID]:
        """Insert the rows whose (owner, url_key) is new; the ids of those inserted."""
        return await self.db.backend.insert_new_jobs(self.db, rows, self._pinned)

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
    async def monitor_of(self, job_id: UUID) -> UUID | None:
        async with self.db.read() as conn:
            found = await conn.scalar(
                sa.select(monitor_pages.c.monitor_id).where(monitor_pages.c.job_id == job_id)
            )
        return found if isinstance(found, UUID) else None

    @unavailable_on_connection_errors
    async def list_jobs(self, query: JobQuery) -> tuple[list[Job], str | None]:
        """A page of ``query.owner``'s jobs, newest first, and the cursor of the next page.

        The cursor is the (created_at, id) of the last job shown, so pages do not shift when
        jobs are added meanwhile: new jobs sort before the first page, never into a later one.
        """
        stmt = sa.select(*JOB_COLUMNS).where(*_filters(query))
        if query.cursor is not None:
            after = decode_list_cursor(query.cursor)
            stmt = stmt.where(
                sa.tuple_(jobs.c.created_at, jobs.c.id) < (after.instant, after.row_id)
            )
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
        """PENDING or PROCESSING -> CANCELLED. Returns the job (None if unknown) and whether
        it changed. A PROCESSING job's lease ends with it: its worker's outcome, guarded by
        the lease, then writes nothing."""
        async with self.db.write() as conn:
            row = (
                await conn.execute(
                    jobs.update()
                    .where(
                        jobs.c.id == job_id,
                        jobs.c.owner == owner,
                        jobs.c.status.in_(UNFINISHED_STATUSES),
                    )
                    .values(CANCELLED_VALUES | {"finished_at": utcnow()})
                    .returning(*JOB_COLUMNS)
                )
            ).first()
        if row is not None:
            return row_to_job(row), True
        return await self.get_job(job_id, owner=owner), False

    @unavailable_on_connection_errors
    @retried_when_rolled_back()
    async def cancel_matching(self, query: JobQuery, *, limit: int) -> Cancelled | None:
        """Bulk cancel: ``query.owner``'s jobs that match, oldest first, at most ``limit``;
        None when ``query.batch_id`` is no batch of the owner's.

        Each job is cancelled atomically by one guarded UPDATE (its status still one of
        ``query.statuses`` when the row is written): a job that finished meanwhile is left
        finished, and one being fetched loses its lease, so its worker's outcome is dropped.
        """
        async with self.db.write() as conn:
            filters = _filters(query)
            if query.batch_id is not None:
                members = await _batch_members(conn, query.owner, query.batch_id)
                if members is None:
                    return None
                filters.append(self.db.backend.any_of(jobs.c.id, members))
            if query.ids:
                filters.append(self.db.backend.any_of(jobs.c.id, list(query.ids)))
            found = list(
                (
                    await conn.execute(
                        sa.select(jobs.c.id)
                        .where(*filters)
                        .order_by(jobs.c.created_at, jobs.c.id)
                        .limit(limit + 1)
                    )
                ).scalars()
            )
            chosen = found[:limit]
            if not chosen:
                return Cancelled(ids=[], more=False)
            statuses = [status.value for status in query.statuses]
            cancelled = await conn.execute(
                jobs.update()
                .where(self.db.backend.any_of(jobs.c.id, chosen), jobs.c.status.in_(statuses))
                .values(CANCELLED_VALUES | {"finished_at": utcnow()})
                .returning(jobs.c.id, jobs.c.created_at)
            )
            done = sorted(cancelled, key=lambda row: (row.created_at, row.id))
        return Cancelled(ids=[row.id for row in done], more=len(found) > limit)

    @unavailable_on_connection_errors
    async def restart(
        self,
        job_ids: Sequence[UUID],
        *,
        owner: str,
        redispatch_after: float,
        pending_limit: int | None = None,
    ) -> list[Job] | Refused:
        """Run finished jobs again: the same id, a new run; the previous run goes to history.
        Jobs that are not finished (or not ``owner``'s) are left as they are. Refused as a
        whole past ``pending_limit`` (:meth:`_restart_selected`)."""
        finished = sa.select(jobs.c.id).where(
            jobs.c.id.in_(job_ids), jobs.c.owner == owner, jobs.c.status.in_(FINAL_STATUSES)
        )
        return await self._restart_selected(owner, finished, redispatch_after, pending_limit)

    @unavailable_on_connection_errors
    async def restart_matching(
        self,
        query: JobQuery,
        *,
        redispatch_after: float,
        limit: int = 10_000,
        pending_limit: int | None = None,
    ) -> list[Job] | Refused:
        """Bulk re-run: every finished job of ``query.owner`` that matches the filters (the
        ``limit`` oldest). Refused as a whole past ``pending_limit``
        (:meth:`_restart_selected`)."""
        finished = (
            sa.select(jobs.c.id)
            .where(*_filters(query), jobs.c.status.in_(FINAL_STATUSES))
            .order_by(jobs.c.created_at)
            .limit(limit)
        )
        return await self._restart_selected(query.owner, finished, redispatch_after, pending_limit)

    async def _restart_selected(
        self,
        owner: str,
        finished: sa.Select[UUID],
        redispatch_after: float,
        pending_limit: int | None,
    ) -> list[Job] | Refused:
        """Restart the ``owner``'s finished jobs ``finished`` selects, in one transaction.

        With a ``pending_limit``, the transaction holds the owner as a submission's does
        (:func:`hold_owners`) before it selects them: each one restarted adds an unfinished
        job, and when they would make the owner's more than its limit none is restarted
        (:class:`Refused`), as a batch is refused as a whole. Selecting none is never refused.
        """
        async with self.db.write() as conn:
            unfinished = 0
            if pending_limit is not None:
                unfinished = (await hold_owners(conn, self.db.backend, [owner]))[owner]
            ids = list((await conn.execute(finished)).scalars())
            if pending_limit is not None and ids and unfinished + len(ids) > pending_limit:
                return Refused(limit=pending_limit, unfinished=unfinished)
            return await _restart(conn, ids, now=utcnow(), redispatch_after=redispatch_after)

    @unavailable_on_connection_errors
    async def runs(self, job_id: UUID, *, limit: int) -> list[JobRun]:
        """A job's last ``limit`` earlier runs, oldest first (the current run is the job
        itself; a monitored page's grow by one a run without end)."""
        async with self.db.read() as conn:
            rows = await conn.execute(
                sa.select(*(job_runs.c[name] for name in JobRun.model_fields))
                .where(job_runs.c.job_id == job_id)
                .order_by(job_runs.c.run.desc())
                .limit(limit)
            )
        return [JobRun(**row._mapping) for row in reversed(list(rows))]


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
            # One array, not a value each: a sitemap's pages may be more than a statement binds.
            .where(db.backend.any_of(jobs.c.id, job_ids), jobs.c.status == PENDING)
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


# --- a URL submitted again --------------------------------------------------------------------

Key = tuple[str, str]


def _asked_by_key(requests: Sequence[NewJob], keys: Sequence[Key]) -> dict[Key, Asked]:
    """What the requests of each (owner, url_key) asked, folded: a group commit may hold
    several submissions of one URL with different formats."""
    by_key: dict[Key, Asked] = {}
    for request, key in zip(requests, keys, strict=True):
        asked = Asked(
            request.formats,
            max_age=request.max_age,
            render=request.render,
            options=request.options,
        )
        known = by_key.get(key)
        by_key[key] = asked if known is None else Asked.fold((known, asked))
    return by_key


#: Whether a job's raw page is stored (a run can make formats from it).
_ARCHIVED = sa.exists().where(page_archive.c.job_id == jobs.c.id).label("archived")
_RESUBMISSION_COLUMNS = (*JOB_COLUMNS, jobs.c.owner, jobs.c.url_key, jobs.c.from_archive)


async def _read_existing(
    conn: AsyncConnection, where: sa.ColumnElement[bool], *, lock: bool = False
) -> dict[Key, tuple[Job, Existing]]:
    stmt = sa.select(*_RESUBMISSION_COLUMNS, _ARCHIVED).where(where)
    if lock:  # in id order, so two submissions locking the same jobs never wait in a cycle
        stmt = stmt.order_by(jobs.c.id).with_for_update(of=jobs)
    found: dict[Key, tuple[Job, Existing]] = {}
    for row in await conn.execute(stmt):
        job = row_to_job(row)
        found[(row.owner, row.url_key)] = (job, _existing_of(job, row))
    return found


@asynccontextmanager
async def _within(db: Database, conn: AsyncConnection | None) -> AsyncIterator[AsyncConnection]:
    """``conn``, in the transaction it is in; without one, a write transaction of its own."""
    if conn is not None:
        yield conn
        return
    async with db.write() as own:
        yield own


# --- the pending-jobs limit -------------------------------------------------------------------


async def hold_owners(
    conn: AsyncConnection, backend: Backend, owners: Collection[str]
) -> dict[str, int]:
    """Hold ``owners`` until the caller's write transaction ends
    (:meth:`~taskcrawler.storage.backend.Backend.hold_owners`), and count each one's
    unfinished jobs: no other submission held to their limit adds any meanwhile."""
    await backend.hold_owners(conn, owners)
    rows = await conn.execute(
        sa.select(jobs.c.owner, sa.func.count())
        .where(backend.any_of(jobs.c.owner, owners), jobs.c.status.in_(UNFINISHED_STATUSES))
        .group_by(jobs.c.owner)
    )
    return dict.fromkeys(owners, 0) | {owner: int(count) for owner, count in rows}


async def _admit(
    conn: AsyncConnection,
    requests: Sequence[NewJob],
    unfinished: dict[str, int],
    *,
    together: bool,
) -> list[Refused | None]:
    """Which ``requests`` their ``pending_limit`` refuses, in the caller's transaction, which
    holds their owners (:func:`hold_owners`, which counted their ``unfinished`` jobs): a
    submission (each request, or with ``together`` each owner's requests) is refused when the
    unfinished jobs it adds would make its owner's more than its limit, and those admitted
    before it in this call count as its owner's.

    A job adds one for a URL with none, or whose finished job its submission runs again (its
    plan's: a failure, ``max_age`` past, formats or options it lacks); none for a URL whose job
    is unfinished, or finished and kept as it is: its submission answers that job, so a
    client's retry is never refused. The jobs are read only for an owner near its limit.
    """
    submissions = _submissions(requests, together=together)
    limited = [requests[i] for indexes in submissions for i in indexes]
    found = await _read_existing_near_limit(conn, limited, unfinished)
    verdicts: list[Refused | None] = [None] * len(requests)
    counted: set[Key] = set()
    now = utcnow()
    for indexes in submissions:
        asking = [requests[i] for i in indexes]
        owner, limit = asking[0].owner, min(r.pending_limit or 0 for r in asking)
        keys = [(owner, url_key(r.url)) for r in asking]
        adding = {
            key
            for key, asked in _asked_by_key(asking, keys).items()
            if key not in counted and (key not in found or _runs_again(found[key][1], asked, now))
        }
        if adding and unfinished[owner] + len(adding) > limit:
            for i in indexes:
                verdicts[i] = Refused(limit=limit, unfinished=unfinished[owner])
            continue
        unfinished[owner] += len(adding)
        counted |= adding
    return verdicts


def _submissions(requests: Sequence[NewJob], *, together: bool) -> list[list[int]]:
    """The indexes of the limited requests, grouped as they are admitted or refused."""
    limited = [i for i, request in enumerate(requests) if request.pending_limit is not None]
    if not together:
        return [[i] for i in limited]
    by_owner: dict[str, list[int]] = {}
    for i in limited:
        by_owner.setdefault(requests[i].owner, []).append(i)
    return list(by_owner.values())


async def _read_existing_near_limit(
    conn: AsyncConnection, limited: Sequence[NewJob], unfinished: Mapping[str, int]
) -> dict[Key, tuple[Job, Existing]]:
    """The existing jobs of the URLs of the owners whose ``limited`` requests, each URL counted
    as a new job, would pass their limit: for the others, what each adds does not matter."""
    keys: dict[str, set[Key]] = {}
    limits: dict[str, int] = {}
    for request in limited:
        keys.setdefault(request.owner, set()).add((request.owner, url_key(request.url)))
        limit = request.pending_limit or 0
        limits[request.owner] = min(limits.get(request.owner, limit), limit)
    near = [
        key
        for owner, owned in keys.items()
        if unfinished[owner] + len(owned) > limits[owner]
        for key in owned
    ]
    if not near:
        return {}
    return await _read_existing(conn, sa.tuple_(jobs.c.owner, jobs.c.url_key).in_(near))


def _runs_again(existing: Existing, asked: Asked, now: datetime) -> bool:
    """Whether a submission makes an unfinished job of a finished one."""
    if existing.status.value in UNFINISHED_STATUSES:
        return False
    return plan(existing, asked, now=now).action is not Action.KEEP


def _existing_of(job: Job, row: Any) -> Existing:
    return Existing(
        status=job.status,
        formats=job.formats,
        render=job.render,
        fetched_at=job.fetched_at or job.finished_at,
        archived=bool(row.archived),
        from_archive=bool(row.from_archive),
        options=job.options,
    )


async def resubmit(
    conn: AsyncConnection,
    keys: Sequence[Key],
    asked: Mapping[Key, Asked],
    now: datetime,
    redispatch_after: float,
) -> dict[Key, tuple[Job, bool]]:
    """Apply what was ``asked`` of the jobs of ``keys`` (``(owner, url_key)``), each as its
    plan says (:func:`taskcrawler.domain.resubmission.plan`), in the caller's transaction;
    every job found, with whether it was sent to the workers again (to publish).

    The jobs are read first without a lock (most submissions of a known URL change nothing),
    then those to change are locked and read again, and planned on what the lock shows: a
    submission that added other formats meanwhile is seen, and its formats kept.
    """
    found = await _read_existing(conn, sa.tuple_(jobs.c.owner, jobs.c.url_key).in_(keys))
    answers = {key: (job, False) for key, (job, _) in found.items()}
    to_change = [
        job.id
        for key, (job, existing) in found.items()
        if plan(existing, asked[key], now=now).action is not Action.KEEP
    ]
    if not to_change:
        return answers
    locked = await _read_existing(conn, jobs.c.id.in_(to_change), lock=True)
    answers |= {key: (job, False) for key, (job, _) in locked.items()}
    plans = {
        key: (job, plan(existing, asked[key], now=now)) for key, (job, existing) in locked.items()
    }
    changing = {key: (job, p) for key, (job, p) in plans.items() if p.action is not Action.KEEP}
    if not changing:
        return answers
    await _apply_plans(conn, list(changing.values()), now, redispatch_after)
    ids = [job.id for job, _ in changing.values()]
    fresh = await _read_existing(conn, jobs.c.id.in_(ids))
    for key, (_, p) in changing.items():
        answers[key] = (fresh[key][0], p.dispatches)
    return answers


async def _apply_plans(
    conn: AsyncConnection,
    changes: Sequence[tuple[Job, Plan]],
    now: datetime,
    redispatch_after: float,
) -> None:
    """Write the plans of locked jobs: formats and render mode, then the runs they start."""
    await conn.execute(
        jobs.update()
        .where(jobs.c.id == sa.bindparam("b_id"))
        .values(
            formats=sa.bindparam("b_formats"),
            render=sa.bindparam("b_render"),
            from_archive=sa.bindparam("b_from_archive"),
            options=sa.bindparam("b_options", type_=jobs.c.options.type),
        ),
        [
            {
                "b_id": job.id,
                "b_formats": list(p.formats),
                "b_render": None if p.render == "never" else p.render,
                "b_from_archive": p.from_archive or None,
                "b_options": p.options.to_json(),
            }
            for job, p in changes
        ],
    )
    taken_over = [job.id for job, p in changes if p.action is Action.TAKE_OVER]
    if taken_over:
        # A new lease token of none: the attempt under way no longer matches its job, so what
        # it writes is dropped, and the job waits for an attempt that makes every format.
        await conn.execute(
            jobs.update()
            .where(jobs.c.id.in_(taken_over), jobs.c.status == PROCESSING)
            .values(
                status=PENDING,
                lease_token=None,
                lease_expires_at=None,
                next_attempt_at=None,
                dispatch_at=now + timedelta(seconds=redispatch_after),
            )
        )
    for from_archive in (False, True):
        rerun = [
            job.id
            for job, p in changes
            if p.action in (Action.FETCH, Action.DERIVE) and p.from_archive is from_archive
        ]
        if rerun:
            await start_new_runs(
                conn,
                (jobs.c.id.in_(rerun), jobs.c.status.in_(FINAL_STATUSES)),
                now=now,
                redispatch_after=redispatch_after,
                returning=(jobs.c.id,),
                from_archive=from_archive,
            )


#: A cancelled job: final, never published again, its lease (if a worker held one) ended.
CANCELLED_VALUES: dict[str, Any] = {
    "status": JobStatus.CANCELLED.value,
    "next_attempt_at": None,
    "dispatch_at": None,
    "lease_token": None,
    "lease_expires_at": None,
}


async def _batch_members(conn: AsyncConnection, owner: str, batch_id: UUID) -> list[UUID] | None:
    ids = await conn.scalar(
        sa.select(job_batches.c.job_ids).where(
            job_batches.c.id == batch_id, job_batches.c.owner == owner
        )
    )
    return None if ids is None else [UUID(str(job_id)) for job_id in ids]


def _filters(query: JobQuery) -> list[sa.ColumnElement[bool]]:
    filters = [jobs.c.owner == query.owner]
    if query.statuses:
        filters.append(jobs.c.status.in_([s.value for s in query.statuses]))
    if query.host:
        filters.append(jobs.c.host == host_filter(query.host))
    if query.created_after:
        filters.append(jobs.c.created_at > query.created_after)
    if query.created_before:
        filters.append(jobs.c.created_at < query.created_before)
    if query.error_code:
        filters.append(jobs.c.error_code == query.error_code)
    if query.crawl_id is not None:
        filters.append(jobs.c.crawl_id == query.crawl_id)
    if query.id_prefix:
        first, last = id_range(query.id_prefix)
        filters += [jobs.c.id >= first, jobs.c.id <= last]
    return filters


def encode_cursor(job: Job) -> str:
    return encode_list_cursor(job.created_at, job.id)


def _new_job(row: dict[str, Any]) -> Job:
    """The job a freshly inserted row is: what :func:`_new_row` set, the table's defaults."""
    return Job(
        id=row["id"],
        url=row["url"],
        status=JobStatus.PENDING,
        retry_count=row["retry_count"],
        created_at=row["created_at"],
        formats=formats_of(row["formats"]),
        callback_url=row["callback_url"],
        host=row["host"],
        render=row["render"] or "never",
        render_options=RenderRequest.from_json(row["render_options"])
        if row["render_options"] is not None
        else None,
        options=ScrapeOptions.from_json(row["options"]),
    )


def _new_row(
    request: NewJob,
    key: str,
    now: datetime,
    redispatch_after: float,
    *,
    asked: Asked | None = None,
) -> dict[str, Any]:
    """The row of a new job: the request's, with what every request of its URL ``asked``."""
    asked = asked or Asked(request.formats, request.max_age, request.render, request.options)
    render = request.render
    if render == "never" and SCREENSHOT in asked.formats:
        render = asked.render
    return {
        "id": uuid.uuid4(),
        "owner": request.owner,
        "url": request.url,
        "url_key": key,
        "host": host_key(request.url),
        "status": PENDING,
        "retry_count": 0,
        "created_at": now,
        "dispatch_at": now + timedelta(seconds=redispatch_after),
        "formats": list(asked.formats),
        "callback_url": request.callback_url,
        # NULL for never, the default: a job that does not render stores nothing of it.
        "render": None if render == "never" else render,
        "render_options": None
        if request.render_options is None
        else request.render_options.to_json(),
        "options": None if asked.options is None else asked.options.to_json(),
    }


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
    from_archive: bool = False,
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
            # A run reads the page's stored copy only when it was started to add formats.
            from_archive=from_archive or None,
        )
        .returning(*returning)
    )
