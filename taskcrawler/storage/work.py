"""Jobs as the workers see them. Every state change is a guarded UPDATE, so a late or
duplicate worker can never overwrite a newer state; writes take lists, so callers can batch."""

from __future__ import annotations

import functools
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from taskcrawler.domain import ClaimedJob
from taskcrawler.domain.pages import Archived, ContentRecord
from taskcrawler.domain.rendering import RenderRequest
from taskcrawler.domain.scrape_options import ScrapeOptions
from taskcrawler.domain.transitions import Transition, TransitionKind
from taskcrawler.storage import crawls, webhooks
from taskcrawler.storage.content import (
    ContentRows,
    archived_copy,
    prepare_content,
    write_content,
)
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors, unavailable_or_unstorable
from taskcrawler.storage.jobs import mark_dispatch_due
from taskcrawler.storage.rows import CLAIMED_COLUMNS, PENDING, PROCESSING, formats_of, utcnow
from taskcrawler.storage.tables import jobs


class WorkStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._known = crawls.KnownPages()

    @property
    def concurrent_writes(self) -> int:
        """How many outcome writes (group commits) a worker keeps in flight at once."""
        return self.db.backend.concurrent_writes

    @property
    def outcome_batch(self) -> int:
        """How many transitions one outcome write takes at most."""
        return self.db.backend.outcome_batch

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
        rows = await self.db.backend.claim(
            self.db, job_ids, token=token, lease_expires_at=lease_expires_at, now=now
        )
        return [_claimed_job(row, token) for row in rows]

    @unavailable_on_connection_errors
    async def claimable_urls(self, job_ids: Sequence[UUID]) -> dict[UUID, str]:
        if not job_ids:
            return {}
        query = sa.select(jobs.c.id, jobs.c.url, jobs.c.from_archive).where(
            self.db.backend.any_of(jobs.c.id, job_ids),
            # Spelled so that no index on the status is the way in (see postgres/sql.py).
            jobs.c.status.is_not_distinct_from(PENDING),
            jobs.c.next_attempt_at.is_(None),
        )
        async with self.db.read_statement() as conn:
            rows = await conn.execute(query)
            return {row.id: "" if row.from_archive else row.url for row in rows}

    @unavailable_on_connection_errors
    async def release(self, claimed: Sequence[ClaimedJob]) -> list[UUID]:
        """Hand jobs back unfinished (graceful shutdown): PENDING again, no attempt counted,
        due for the next sweep. Returns the ids released."""
        if not claimed:
            return []
        now = utcnow()

        def release(conn: Connection) -> list[UUID]:
            released: list[UUID] = []
            for job in claimed:
                rows = conn.execute(
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

        return await self.db.run_write(release)

    @unavailable_on_connection_errors
    async def renew_leases(self, tokens: Sequence[UUID], *, lease_seconds: float) -> int:
        """Extend the leases of the jobs held under ``tokens``; how many were extended.

        Rows locked right now are skipped, not waited for: the lock is an outcome being written
        (its lease ends with it), and an UPDATE that waited would lock the rest in an order of
        its own, against an outcome batch locking the same jobs in its order: a deadlock. A row
        skipped by mistake is renewed by the next beat, well before its lease runs out."""
        if not tokens:
            return 0
        held = (
            sa.select(jobs.c.id)
            .where(
                jobs.c.lease_token.in_(tokens),
                jobs.c.status == PROCESSING,
                jobs.c.lease_expires_at.is_not(None),  # always, and it matches ix_jobs_lease
            )
            .with_for_update(skip_locked=True)
        )
        renew = (
            jobs.update()
            .where(jobs.c.id.in_(held.scalar_subquery()), jobs.c.status == PROCESSING)
            .values(lease_expires_at=utcnow() + timedelta(seconds=lease_seconds))
        )
        return await self.db.run_write(lambda conn: conn.execute(renew).rowcount)

    @unavailable_or_unstorable
    async def record_transitions(
        self, transitions: Sequence[Transition], *, redispatch_after: float = 30.0
    ) -> list[UUID]:
        """Persist many attempts' transitions in one transaction.

        Each write is guarded by the job's lease token, so an attempt that lost its lease (and
        whose job another worker now holds) changes nothing. A value the database refuses
        raises :class:`UnstorableData` and writes nothing of the batch: the caller can then
        find the transition at fault by writing them one by one.

        The pages of crawls also add their frontier, in the same transaction
        (:func:`taskcrawler.storage.crawls.advance`). Returns the ids of the new pages: the
        caller publishes them (they are published again by the sweeper if that is lost).
        """
        outcomes = [t.outcome for t in transitions]
        content = await prepare_content(
            [
                ContentRecord(o.job.id, o.job.owner, o.content, replaces=o.job.run_count > 0)
                for o in outcomes
                if o.content
            ]
        )
        # Built before the write, which holds the writer lock for its statements alone.
        advanced = await self.db.run_write(
            self._transitions_write(transitions, content, redispatch_after)
        )
        return self._learned(advanced)

    def _learned(self, advanced: crawls.Advance) -> list[UUID]:
        """The ids of the crawls' new pages, once what the write found is remembered."""
        self._known.learn(advanced.seen)
        return advanced.new_ids

    def _transitions_write(
        self,
        transitions: Sequence[Transition],
        content: ContentRows,
        redispatch_after: float,
    ) -> Callable[[Connection], crawls.Advance]:
        """The guarded updates of ``transitions``, their webhooks, content and crawl frontier,
        as a function of a transaction's connection returning what they added to the crawls'
        frontiers. What needs no connection is done now, before that transaction."""
        # One statement per set of columns written (a kind of transition, fetched or not).
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for transition in transitions:
            job = transition.job
            values = _row_values(transition)
            groups[",".join(values)].append(values | {"b_id": job.id, "b_token": job.lease_token})
        outcomes = [t.outcome for t in transitions]
        pages = [t for t in transitions if t.job.crawl_id is not None]
        # A crawl page's frontier is written only if its outcome was: ask which were held.
        watched = [o for o in outcomes if o.content is not None] + [
            t.outcome for t in pages if t.outcome.content is None
        ]
        backend = self.db.backend
        update_outcomes = backend.prepare_outcomes(groups, watched)

        def write(conn: Connection) -> crawls.Advance:
            # Content is written only for jobs this batch still held when its guarded updates
            # released their leases: those updates hold the rows' locks until the commit.
            held = update_outcomes(conn)
            webhooks.enqueue_for_outcomes(conn, backend, outcomes)  # the outbox
            write_content(conn, backend, content.only(held))
            if not pages:
                return crawls.Advance()
            return crawls.advance(
                conn, backend, pages, held, redispatch_after=redispatch_after, known=self._known
            )

        return write

    @unavailable_on_connection_errors
    async def archived_copy(self, job_id: UUID) -> Archived | None:
        return await archived_copy(self.db, job_id)

    # --- sweeper --------------------------------------------------------------------------

    @unavailable_or_unstorable
    async def recover_expired_leases(
        self,
        decide: Callable[[ClaimedJob, datetime], Transition],
        *,
        limit: int = 1000,
        redispatch_after: float = 30.0,
    ) -> list[Transition]:
        """PROCESSING jobs whose worker stopped renewing the lease: each attempt is given up as
        ``decide`` says (the domain's decision, as for an attempt a worker finished) and written
        as a worker writes its outcomes. Their rows stay locked from the look to the write, so a
        late renewal waits and then finds the lease gone. Returns what was decided."""
        now = utcnow()
        is_expired = sa.and_(jobs.c.status == PROCESSING, jobs.c.lease_expires_at < now)
        if not await self._any(_ANY_EXPIRED, now):
            return []
        expired = (
            sa.select(*(jobs.c[column] for column in CLAIMED_COLUMNS), jobs.c.lease_token)
            .where(is_expired)
            .order_by(jobs.c.lease_expires_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )

        def recover(conn: Connection) -> tuple[list[Transition], crawls.Advance]:
            rows = conn.execute(expired).all()
            transitions = [decide(_claimed_job(row, row.lease_token), now) for row in rows]
            if not transitions:
                return [], crawls.Advance()
            write = self._transitions_write(transitions, ContentRows(), redispatch_after)
            return transitions, write(conn)

        transitions, advanced = await self.db.run_write(recover)
        self._learned(advanced)
        return transitions

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
        # dispatch_at is always set on a PENDING job; saying so matches ix_jobs_dispatch.
        is_taken = sa.and_(jobs.c.status == PENDING, jobs.c.dispatch_at.is_not(None), is_due)
        if not await self._any(_any_due(include_published, include_undispatched), now):
            return []
        due = (
            sa.select(jobs.c.id)
            .where(is_taken)
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
        return await self.db.run_write(lambda conn: list(conn.execute(stmt).scalars()))

    async def _any(self, first: sa.Select[tuple[UUID]], now: datetime) -> bool:
        """Whether ``first`` (one of the reads below) finds a job: the sweeper's steps find
        nothing most seconds, and a read says so in one round trip, without a transaction or
        the writer (SQLite's is the API's too)."""
        async with self.db.read_statement() as conn:
            return (await conn.execute(first, {"now": now})).first() is not None

    async def mark_dispatch_due(self, job_ids: Sequence[UUID]) -> None:
        await mark_dispatch_due(self.db, job_ids)

    async def complete_idle_crawls(self, *, limit: int = 100) -> list[UUID]:
        """RUNNING crawls with nothing left become COMPLETED (the sweeper's safety net)."""
        return await crawls.CrawlStore(self.db).complete_idle(limit=limit)


# The sweeper's reads, built once: each second of every worker would otherwise build them
# anew (SQLAlchemy caches their compiled form, not the building).
_NOW: sa.BindParameter[datetime] = sa.bindparam("now")
_ANY_EXPIRED = (
    sa.select(jobs.c.id).where(jobs.c.status == PROCESSING, jobs.c.lease_expires_at < _NOW).limit(1)
)


@functools.cache
def _any_due(include_published: bool, include_undispatched: bool) -> sa.Select[tuple[UUID]]:
    """The read of :meth:`WorkStore.take_due_dispatches`'s condition."""
    is_due = jobs.c.dispatch_at <= _NOW
    if not include_published:
        is_due = sa.and_(is_due, jobs.c.next_attempt_at.is_not(None))
    if include_undispatched:
        is_due = sa.or_(is_due, jobs.c.next_attempt_at.is_(None))
    condition = (jobs.c.status == PENDING, jobs.c.dispatch_at.is_not(None), is_due)
    return sa.select(jobs.c.id).where(*condition).limit(1)


def _row_values(transition: Transition) -> dict[str, Any]:
    """The columns a transition sets. Transitions of one kind set the same columns (a deferral
    that keeps the error of a counted retry sets two fewer), so a batch writes few statements."""
    outcome = transition.outcome
    values: dict[str, Any] = {
        "status": transition.status.value,
        "http_status": outcome.http_status,
        "error_code": transition.error_code,
        "error_log": transition.error_log,
    }
    kind = transition.kind
    if kind is TransitionKind.DEFERRED and transition.error_code is None:
        del values["error_code"], values["error_log"]  # the counted retry's error stays
    if kind is TransitionKind.COMPLETED:
        values |= {
            "final_url": outcome.final_url,
            "content_type": outcome.content_type,
            "scraped_title": outcome.scraped_title,
            "result": outcome.result,
            "etag": outcome.etag,
            "last_modified": outcome.last_modified,
            "unchanged": False,
        }
    elif kind is TransitionKind.UNCHANGED:
        values["unchanged"] = True  # the stored result is still the page's
    elif kind is TransitionKind.RETRIED:
        values["retry_count"] = transition.retry_count
    if transition.next_attempt_at is not None:  # published again by the sweeper when due
        values["next_attempt_at"] = values["dispatch_at"] = transition.next_attempt_at
    if transition.finished_at is not None:
        values["finished_at"] = transition.finished_at
        if outcome.fetched:  # a result made from a stored copy is no fresher than that copy
            values["fetched_at"] = outcome.fetched_at or transition.finished_at
    return values


def _claimed_job(row: Any, token: UUID) -> ClaimedJob:
    return ClaimedJob(
        row.id,
        row.url,
        row.retry_count,
        token,
        formats_of(row.formats),
        etag=row.etag,
        last_modified=row.last_modified,
        callback_url=row.callback_url,
        created_at=row.created_at,
        run_count=row.run_count,
        owner=row.owner,
        render=row.render or "never",
        render_options=RenderRequest.from_json(row.render_options),
        options=ScrapeOptions.from_json(row.options),
        crawl_id=row.crawl_id,
        depth=row.depth or 0,
        from_archive=bool(row.from_archive),
    )
