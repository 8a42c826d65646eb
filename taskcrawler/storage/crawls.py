"""Crawls: their rows, and their frontier, which is the jobs table itself.

A crawl's pages are ordinary jobs with ``crawl_id`` and ``depth`` set. They are deduplicated per
crawl by the jobs' unique ``(owner, url_key)`` index, a crawl page's ``url_key`` being the hash of
the crawl's id and the page's crawl key (:func:`frontier_key`): an INSERT … ON CONFLICT DO
NOTHING, never a check-then-insert, so two workers that find one URL at once add one page.

New pages enter the frontier in the transaction that records the outcome of the page that found
them (:func:`advance`, called by ``WorkStore.record_transitions``), under the crawl's row lock
(``SELECT … FOR UPDATE`` on PostgreSQL; SQLite has one writer anyway). Under that lock
``crawls.discovered`` is exact, so a crawl never admits more than its ``limit``, and the check
that nothing of the crawl is left (then it is COMPLETED) sees every other page's outcome.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain.crawls import (
    CRAWL_COMPLETED_EVENT,
    CRAWL_PAGE_EVENT,
    Candidate,
    Crawl,
    CrawlCounts,
    CrawlSpec,
    CrawlStatus,
    stored_webhook_events,
)
from taskcrawler.domain.cursors import decode_list_cursor, encode_list_cursor
from taskcrawler.domain.errors import ErrorCode, InvalidURL
from taskcrawler.domain.exports import ExportPosition
from taskcrawler.domain.jobs import Job, JobStatus, Refused
from taskcrawler.domain.pages import FetchedPage
from taskcrawler.domain.scrape_options import DEFAULT_OPTIONS, ScrapeOptions
from taskcrawler.domain.transitions import Transition
from taskcrawler.domain.urls import crawl_key, host_key
from taskcrawler.domain.views import crawl_document
from taskcrawler.domain.webhooks import WebhookEvent
from taskcrawler.storage import reuse
from taskcrawler.storage.backend import Backend
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import (
    retried_when_rolled_back,
    unavailable_on_connection_errors,
)
from taskcrawler.storage.jobs import hold_owners
from taskcrawler.storage.rows import (
    JOB_COLUMNS,
    PENDING,
    PROCESSING,
    frontier_key,
    row_to_job,
    utcnow,
)
from taskcrawler.storage.tables import crawls, jobs, webhook_deliveries

RUNNING = CrawlStatus.RUNNING.value
#: Frontier rows inserted per statement at most (a sitemap may bring 100,000 at once).
INSERT_CHUNK = 1000
_BUSY = (PENDING, PROCESSING)
#: A crawl's pages that were fetched (or given up on): those with a result to show.
_FETCHED_VALUES = (JobStatus.COMPLETED.value, JobStatus.FAILED.value)
#: A crawl's page in these has (or is getting) its copy of the page.
_HELD = (JobStatus.COMPLETED.value, PROCESSING)
_CANCELLED = JobStatus.CANCELLED.value
#: Whether a RUNNING crawl has nothing left, read by every worker's sweep each second: built
#: once (SQLAlchemy caches the compiled form, not the building).
_ANY_IDLE = (
    sa.select(crawls.c.id)
    .where(
        crawls.c.status == RUNNING,
        ~sa.exists().where(jobs.c.crawl_id == crawls.c.id, jobs.c.status.in_(_BUSY)),
    )
    .limit(1)
)


def page_callback(spec: Mapping[str, Any]) -> str | None:
    """Where a page of a crawl with this stored spec announces its outcome: the crawl's
    callback URL when it asked for ``crawl.page``. The page's job then carries it, so its
    delivery is queued with its outcome, in the outcome's transaction, as any job's is."""
    if CRAWL_PAGE_EVENT not in stored_webhook_events(spec):
        return None
    callback = spec.get("callback_url")
    return callback if isinstance(callback, str) else None


def _page_template(
    crawl_id: UUID, owner: str, spec: Mapping[str, Any], now: datetime, redispatch_after: float
) -> dict[str, Any]:
    """What every page a crawl admits at ``now`` has in common (worked out once per batch,
    not once per link: a page's links are mostly ones its crawl already has)."""
    formats = spec.get("formats")
    return {
        "owner": owner,
        "status": PENDING,
        "retry_count": 0,
        "created_at": now,
        # Published after the commit; if that publish is lost, the sweeper publishes it then.
        "dispatch_at": now + timedelta(seconds=redispatch_after),
        "formats": list(formats) if formats else None,
        "callback_url": page_callback(spec),
        # As a job stores them: NULL for never and for the default options.
        "render": spec.get("render") if spec.get("render") != "never" else None,
        "render_options": spec.get("render_options"),
        "options": spec.get("options"),
        "crawl_id": crawl_id,
    }


def _page_row(template: Mapping[str, Any], candidate: Candidate, url_key: str) -> dict[str, Any]:
    return {
        **template,
        "id": uuid.uuid4(),
        "url": candidate.key,
        "url_key": url_key,
        "host": host_key(candidate.key),
        "depth": candidate.depth,
    }


class KnownPages:
    """Pages of crawls this process saw committed, by ``url_key``, with their depth.

    A page never leaves its crawl's frontier, so a key seen committed stays known: a batch
    leaves out the links its crawl already has at that depth or less before asking the
    database. Most links of a site are its navigation, repeated on every page; without this,
    every page's outcome would look each of them up again, under its crawl's lock. Only an
    optimisation: what is not known here is looked up, and the unique key still deduplicates.
    Bounded: past ``capacity`` keys the oldest are forgotten (and looked up again if met).
    """

    def __init__(self, capacity: int = 50_000) -> None:
        self.capacity = capacity
        self._depths: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._depths)

    def has(self, url_key: str, depth: int) -> bool:
        """Whether the page is known at ``depth`` or less (a shorter path must still be
        looked up: the page then takes that depth)."""
        known = self._depths.get(url_key)
        return known is not None and known <= depth

    def learn(self, depths: Mapping[str, int]) -> None:
        """Remember pages, once the transaction that read or added them has committed."""
        for url_key, depth in depths.items():
            known = self._depths.pop(url_key, None)
            self._depths[url_key] = depth if known is None else min(known, depth)
        while len(self._depths) > self.capacity:
            del self._depths[next(iter(self._depths))]


@dataclass(slots=True)
class Advance:
    """What a batch's write did to its crawls: the pages it added (to publish after the
    commit) and the pages it found committed or added (for :class:`KnownPages`, after it)."""

    new_ids: list[UUID] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)


# --- the frontier, inside the transaction that records outcomes --------------------------------


def advance(
    conn: Connection,
    backend: Backend,
    pages: Sequence[Transition],
    held: set[UUID],
    *,
    redispatch_after: float,
    known: KnownPages,
) -> Advance:
    """Add what the crawl pages of a batch found to their crawls' frontiers, and complete the
    crawls that have nothing left. ``pages``: the batch's transitions of crawl pages; ``held``:
    the jobs whose outcome this transaction wrote (a page whose lease was lost adds nothing: its
    new holder will); ``known``: pages to leave out without a lookup."""
    result = Advance()
    written = [t for t in pages if t.job.id in held and t.job.crawl_id is not None]
    if not written:
        return result
    by_crawl: dict[UUID, list[Transition]] = defaultdict(list)
    for transition in written:
        assert transition.job.crawl_id is not None
        by_crawl[transition.job.crawl_id].append(transition)
    # Locked in id order, so two batches that share crawls never wait for each other in a cycle.
    locked = conn.execute(
        sa.select(crawls.c.id, crawls.c.owner, crawls.c.status, crawls.c.discovered, crawls.c.spec)
        .where(backend.any_of(crawls.c.id, sorted(by_crawl)))
        .order_by(crawls.c.id)
        .with_for_update()
    )
    now = utcnow()
    maybe_idle: list[UUID] = []
    for row in locked.all():
        if row.status != RUNNING:
            continue  # cancelled (or completed by the sweeper meanwhile): nothing new
        room = int(row.spec.get("limit", 0)) - row.discovered
        template = _page_template(row.id, row.owner, row.spec, now, redispatch_after)
        held_twice = _settle_redirects(conn, backend, template, by_crawl[row.id], room, result.seen)
        candidates = [c for t in by_crawl[row.id] for c in t.outcome.frontier]
        added = _admit(
            conn,
            backend,
            template,
            _unknown(row.id, candidates, known),
            room - held_twice,
            result.seen,
        )
        if added or held_twice:
            result.new_ids.extend(added)
            conn.execute(
                crawls.update()
                .where(crawls.c.id == row.id)
                .values(discovered=crawls.c.discovered + len(added) + held_twice)
            )
        if not added:
            maybe_idle.append(row.id)  # a crawl that just gained pages has some left
    if maybe_idle:
        complete_idle(conn, backend, maybe_idle, now=now)
    return result


def _settle_redirects(
    conn: Connection,
    backend: Backend,
    template: Mapping[str, Any],
    transitions: Sequence[Transition],
    room: int,
    seen: dict[str, int],
) -> int:
    """Make each page that redirected within the crawl the crawl's one copy of where it led:
    the crawl's page of that URL, still waiting, is not fetched; one it does not have yet is
    added as already had, so a link to it later adds nothing. Both are CANCELLED as
    ``duplicate`` (a page being fetched now, or fetched already, is the worker's to settle:
    :meth:`CrawlStore.holds`). Returns how many pages were added (they take the crawl's room:
    its counts add up to what it discovered)."""
    crawl_id: UUID = template["crawl_id"]
    targets: dict[str, tuple[str, Transition]] = {}
    for transition in transitions:
        final_url = transition.outcome.final_url
        if transition.status is not JobStatus.COMPLETED or not final_url:
            continue
        try:
            key = crawl_key(final_url)
        except InvalidURL:
            continue
        if key != transition.job.url:
            targets.setdefault(frontier_key(crawl_id, key), (key, transition))
    if not targets:
        return 0
    found = conn.execute(
        sa.select(jobs.c.url_key, jobs.c.id, jobs.c.status).where(
            jobs.c.owner == template["owner"], backend.any_of(jobs.c.url_key, list(targets))
        )
    ).all()
    now = template["created_at"]
    waiting = [job_id for _, job_id, status in found if status == PENDING]
    if waiting:
        _update_waiting(
            conn,
            backend,
            waiting,
            status=JobStatus.CANCELLED.value,
            error_code=ErrorCode.DUPLICATE.value,
            error_log="the crawl holds this page as another of its pages, redirected here",
            finished_at=now,
            next_attempt_at=None,
            dispatch_at=None,
        )
    had = {url_key for url_key, _, _ in found}
    seen.update((url_key, 0) for url_key in had)
    new = [(url_key, target) for url_key, target in targets.items() if url_key not in had]
    rows = [
        {
            **_page_row(template, Candidate(key, transition.job.depth or 0), url_key),
            "status": JobStatus.CANCELLED.value,
            "dispatch_at": None,
            "finished_at": now,
            "error_code": ErrorCode.DUPLICATE.value,
            "error_log": f"the crawl holds this page as {transition.job.url}, redirected here",
        }
        for url_key, (key, transition) in new[: max(room, 0)]
    ]
    if rows:
        # Under the crawl's lock every page of it is visible: none of these keys is taken.
        conn.execute(jobs.insert(), rows)
        seen.update((row["url_key"], 0) for row in rows)
    return len(rows)


def _unknown(
    crawl_id: UUID, candidates: Sequence[Candidate], known: KnownPages
) -> dict[str, Candidate]:
    """The candidates by ``url_key``, first spelling first (links come in the order the page
    shows them), without those ``known`` has at their depth or less."""
    by_key: dict[str, Candidate] = {}
    for candidate in candidates:
        key = frontier_key(crawl_id, candidate.key)
        if key not in by_key and not known.has(key, candidate.depth):
            by_key[key] = candidate
    return by_key


def _admit(
    conn: Connection,
    backend: Backend,
    template: Mapping[str, Any],
    by_key: Mapping[str, Candidate],
    room: int,
    seen: dict[str, int],
) -> list[UUID]:
    """Insert the new candidates as pages made from ``template`` (:func:`_page_template`), in
    order, until ``room`` pages were admitted; record in ``seen`` the depth of every page found
    or added.

    Those the crawl has are left out first, by a read: under the crawl's lock every page of it
    is committed and visible, so the INSERT then meets no conflict. Without that read, an
    INSERT of a page another transaction is updating (its outcome, a lease renewal) would
    wait for that transaction, which may itself be waiting for this crawl's lock. The INSERT
    stays ON CONFLICT DO NOTHING all the same: the unique key is what deduplicates.
    """
    if room <= 0 or not by_key:
        return []
    owner = template["owner"]
    known: set[str] = set()
    shorter: dict[int, list[UUID]] = defaultdict(list)
    keys = list(by_key)
    for start in range(0, len(keys), INSERT_CHUNK):
        found = conn.execute(
            sa.select(jobs.c.url_key, jobs.c.id, jobs.c.depth, jobs.c.status).where(
                jobs.c.owner == owner,
                backend.any_of(jobs.c.url_key, keys[start : start + INSERT_CHUNK]),
            )
        )
        for key, job_id, depth, status in found:
            known.add(key)
            if status == PENDING and depth is not None and by_key[key].depth < depth:
                shorter[by_key[key].depth].append(job_id)
            else:
                # A finished page is known at any depth: a shorter path changes nothing. One
                # taking a shorter path is not remembered (the update below may skip it).
                seen[key] = 0 if JobStatus(status).is_final else (depth or 0)
    # A page still waiting, found again by a shorter path, takes that path's depth: its links
    # are then followed as far as max_depth allows from there.
    for depth, ids in shorter.items():
        _update_waiting(conn, backend, ids, depth=depth)
    new = [(key, candidate) for key, candidate in by_key.items() if key not in known]
    added: list[UUID] = []
    start = 0
    # Each chunk no bigger than the room left: the limit holds exactly whatever happens.
    while start < len(new) and len(added) < room:
        size = min(room - len(added), INSERT_CHUNK)
        chunk = [
            _page_row(template, candidate, key) for key, candidate in new[start : start + size]
        ]
        inserted = set(backend.insert_frontier(conn, chunk))
        for row in chunk:
            if row["id"] in inserted:
                added.append(row["id"])
                seen[row["url_key"]] = row["depth"]
        start += size
    return added


def complete_idle(
    conn: Connection, backend: Backend, crawl_ids: Sequence[UUID], *, now: datetime
) -> list[UUID]:
    """Mark COMPLETED those of ``crawl_ids`` (locked by the caller, or one statement's own
    work) that are RUNNING and have no page PENDING or PROCESSING; announce them."""
    busy = sa.exists().where(jobs.c.crawl_id == crawls.c.id, jobs.c.status.in_(_BUSY))
    done = conn.execute(
        crawls.update()
        .where(backend.any_of(crawls.c.id, list(crawl_ids)), crawls.c.status == RUNNING, ~busy)
        .values(status=CrawlStatus.COMPLETED.value, finished_at=now)
        .returning(crawls.c.id)
    )
    completed = list(done.scalars())
    if completed:
        _announce(conn, backend, completed, now)
    return completed


def _announce(conn: Connection, backend: Backend, crawl_ids: Sequence[UUID], now: datetime) -> None:
    """A ``crawl.completed`` delivery for each crawl with a callback URL that did not leave that
    event out, in the webhook outbox (its ``job_id`` is the crawl's start page: deliveries
    belong to a job)."""
    found = conn.execute(
        sa.select(*_CRAWL_COLUMNS).where(
            backend.any_of(crawls.c.id, list(crawl_ids)), crawls.c.callback_url.is_not(None)
        )
    )
    rows = [row for row in found if CRAWL_COMPLETED_EVENT in stored_webhook_events(row.spec)]
    if not rows:
        return
    counts = _counts(conn, backend, [row.id for row in rows])
    deliveries = []
    for row in rows:
        start = conn.scalar(
            sa.select(jobs.c.id)
            .where(jobs.c.crawl_id == row.id)
            .order_by(jobs.c.created_at, jobs.c.id)
            .limit(1)
        )
        if start is None:
            continue
        crawl = _row_to_crawl(row, counts.get(row.id, CrawlCounts()))
        deliveries.append(
            {
                "id": uuid.uuid4(),
                "job_id": start,
                "owner": row.owner,
                "url": row.callback_url,
                "event": WebhookEvent.CRAWL_COMPLETED.value,
                "payload": crawl_document(crawl),
                "status": "PENDING",
                "attempts": 0,
                "next_attempt_at": now,
                "created_at": now,
            }
        )
    if deliveries:
        conn.execute(webhook_deliveries.insert(), deliveries)


async def start_crawl(
    conn: AsyncConnection,
    owner: str,
    spec: CrawlSpec,
    *,
    callback_url: str | None,
    now: datetime,
    redispatch_after: float,
) -> tuple[UUID, UUID]:
    """Insert a RUNNING crawl and its start page (depth 0) in the caller's transaction (a
    crawl monitor starts one when its slot fires); the crawl's id and its start page's."""
    crawl_id = uuid.uuid4()
    stored = spec.to_dict()
    start_key = crawl_key(spec.url)
    start = _page_row(
        _page_template(crawl_id, owner, stored, now, redispatch_after),
        Candidate(start_key, 0),
        frontier_key(crawl_id, start_key),
    )
    await conn.execute(
        crawls.insert().values(
            id=crawl_id,
            owner=owner,
            url=spec.url,
            spec=stored,
            status=RUNNING,
            discovered=1,
            callback_url=callback_url,
            created_at=now,
        )
    )
    await conn.execute(jobs.insert().values(**start))
    return crawl_id, start["id"]


async def cancel_running(
    conn: AsyncConnection, crawl_ids: Sequence[UUID], *, now: datetime
) -> None:
    """Those of ``crawl_ids`` still RUNNING become CANCELLED, with their PENDING pages; the
    caller holds the crawls' locks (a page finishing meanwhile then adds nothing)."""
    if not crawl_ids:
        return
    cancelled = list(
        (
            await conn.execute(
                crawls.update()
                .where(crawls.c.id.in_(list(crawl_ids)), crawls.c.status == RUNNING)
                .values(status=CrawlStatus.CANCELLED.value, finished_at=now)
                .returning(crawls.c.id)
            )
        ).scalars()
    )
    if cancelled:
        await conn.execute(
            jobs.update()
            .where(jobs.c.crawl_id.in_(cancelled), jobs.c.status == PENDING)
            .values(
                status=JobStatus.CANCELLED.value,
                finished_at=now,
                next_attempt_at=None,
                dispatch_at=None,
            )
        )


# --- reading ------------------------------------------------------------------------------------

_CRAWL_COLUMNS = (
    crawls.c.id,
    crawls.c.owner,
    crawls.c.spec,
    crawls.c.status,
    crawls.c.created_at,
    crawls.c.finished_at,
    crawls.c.callback_url,
)


def _row_to_crawl(row: Any, counts: CrawlCounts) -> Crawl:
    return Crawl(
        id=row.id,
        owner=row.owner,
        spec=CrawlSpec.from_dict(row.spec),
        status=CrawlStatus(row.status),
        created_at=row.created_at,
        finished_at=row.finished_at,
        counts=counts,
    )


def _counts(
    conn: Connection, backend: Backend, crawl_ids: Iterable[UUID]
) -> dict[UUID, CrawlCounts]:
    """Each crawl's pages by status, in one statement: the counts of one crawl add up."""
    ids = list(crawl_ids)
    if not ids:
        return {}
    rows = conn.execute(
        sa.select(jobs.c.crawl_id, jobs.c.status, sa.func.count())
        .where(backend.any_of(jobs.c.crawl_id, ids))
        .group_by(jobs.c.crawl_id, jobs.c.status)
    )
    by_crawl: dict[UUID, dict[str, int]] = defaultdict(dict)
    for crawl_id, status, count in rows:
        by_crawl[crawl_id][status] = int(count)
    return {crawl_id: CrawlCounts.of(statuses) for crawl_id, statuses in by_crawl.items()}


class CrawlStore:
    """Crawls as the API and the workers see them."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @unavailable_on_connection_errors
    async def create(
        self,
        owner: str,
        spec: CrawlSpec,
        *,
        callback_url: str | None,
        redispatch_after: float,
        pending_limit: int | None = None,
    ) -> tuple[Crawl, UUID] | Refused:
        """A RUNNING crawl and its start page (depth 0), in one transaction; the start page's
        job id, to publish. :class:`Refused` when the start page would make ``owner``'s
        unfinished jobs more than ``pending_limit``, counted as job submissions count them:
        atomically with the insert (:func:`~taskcrawler.storage.jobs.hold_owners`)."""
        now = utcnow()
        async with self.db.write() as conn:
            if pending_limit is not None:
                unfinished = (await hold_owners(conn, self.db.backend, [owner]))[owner]
                if unfinished + 1 > pending_limit:
                    return Refused(limit=pending_limit, unfinished=unfinished)
            crawl_id, start_id = await start_crawl(
                conn,
                owner,
                spec,
                callback_url=callback_url,
                now=now,
                redispatch_after=redispatch_after,
            )
        crawl = Crawl(
            id=crawl_id,
            owner=owner,
            spec=spec,
            status=CrawlStatus.RUNNING,
            created_at=now,
            counts=CrawlCounts(pending=1),
        )
        return crawl, start_id

    @unavailable_on_connection_errors
    async def get(self, crawl_id: UUID, *, owner: str) -> Crawl | None:
        """The crawl with its live counts; None when unknown or another owner's."""
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(*_CRAWL_COLUMNS).where(
                        crawls.c.id == crawl_id, crawls.c.owner == owner
                    )
                )
            ).first()
            if row is None:
                return None
            counts = await conn.run_sync(_counts, self.db.backend, [crawl_id])
        return _row_to_crawl(row, counts.get(crawl_id, CrawlCounts()))

    @unavailable_on_connection_errors
    async def spec_of(self, crawl_id: UUID) -> CrawlSpec | None:
        """What a worker needs to expand a crawl's pages."""
        async with self.db.read() as conn:
            spec = await conn.scalar(sa.select(crawls.c.spec).where(crawls.c.id == crawl_id))
        return None if spec is None else CrawlSpec.from_dict(spec)

    @unavailable_on_connection_errors
    async def reusable_page(
        self,
        crawl_id: UUID,
        *,
        owner: str,
        url: str,
        max_age: float,
        render: str,
        options: ScrapeOptions = DEFAULT_OPTIONS,
    ) -> FetchedPage | None:
        """The stored copy of a page the crawl may read instead of fetching (its max_age)."""
        async with self.db.read() as conn:
            return await reuse.reusable_page(
                conn,
                self.db.backend,
                crawl_id=crawl_id,
                owner=owner,
                url=url,
                max_age=max_age,
                render=render,
                options=options,
            )

    @unavailable_on_connection_errors
    async def list_crawls(
        self, owner: str, *, limit: int = 50, cursor: str | None = None, running: bool = False
    ) -> tuple[list[Crawl], str | None]:
        """A page of ``owner``'s crawls (``running``: RUNNING ones only), newest first, and
        the next page's cursor (the jobs listing's kind: InvalidCursor for one this code did not
        make)."""
        stmt = sa.select(*_CRAWL_COLUMNS).where(crawls.c.owner == owner)
        if running:
            stmt = stmt.where(crawls.c.status == CrawlStatus.RUNNING.value)
        if cursor is not None:
            after = decode_list_cursor(cursor)
            stmt = stmt.where(
                sa.tuple_(crawls.c.created_at, crawls.c.id) < (after.instant, after.row_id)
            )
        stmt = stmt.order_by(crawls.c.created_at.desc(), crawls.c.id.desc()).limit(limit + 1)
        async with self.db.read() as conn:
            rows = (await conn.execute(stmt)).all()
            page = rows[:limit]
            counts = await conn.run_sync(_counts, self.db.backend, [row.id for row in page])
        found = [_row_to_crawl(row, counts.get(row.id, CrawlCounts())) for row in page]
        more = len(rows) > limit
        last = found[-1] if found else None
        return found, encode_list_cursor(last.created_at, last.id) if more and last else None

    @unavailable_on_connection_errors
    async def holds(self, crawl_id: UUID, *, owner: str, url: str) -> bool:
        """Whether the crawl has a copy of the page ``url`` (its crawl key): fetched, being
        fetched, or held as another page redirected there. A page that failed, or was
        cancelled with its crawl, gave it none: a page redirected there is its copy."""
        try:
            key = frontier_key(crawl_id, crawl_key(url))
        except InvalidURL:
            return False
        async with self.db.read() as conn:
            found = (
                await conn.execute(
                    sa.select(jobs.c.status, jobs.c.error_code).where(
                        jobs.c.owner == owner, jobs.c.url_key == key
                    )
                )
            ).first()
        if found is None:
            return False
        status, code = found
        return status in _HELD or (status == _CANCELLED and code == ErrorCode.DUPLICATE.value)

    @unavailable_on_connection_errors
    async def finished_pages(
        self,
        crawl_id: UUID,
        *,
        owner: str,
        statuses: Sequence[JobStatus],
        after: ExportPosition,
        limit: int,
    ) -> tuple[list[tuple[ExportPosition, Job]], bool]:
        """Up to ``limit`` of the crawl's pages finished (COMPLETED or FAILED, of ``statuses``)
        after ``after``, in the order they finished: their positions in the export stream
        (``jobs.export_seq``, given in commit order, migration 0008), so a page finishing while
        a client reads on comes after what it has read, never before. Only positions no running
        transaction can precede are shown; whether more follow the last shown (some perhaps not
        final yet: the client asks again from there) comes with them."""
        finished = [s.value for s in statuses if s.value in _FETCHED_VALUES]
        position = sa.tuple_(jobs.c.export_seq, jobs.c.id)
        where = [
            jobs.c.crawl_id == crawl_id,
            jobs.c.owner == owner,
            jobs.c.export_seq.is_not(None),  # matches ix_jobs_crawl_finished
            jobs.c.status.in_(finished),
            position > sa.tuple_(sa.literal(after.seq), sa.literal(after.job_id)),
        ]
        async with self.db.read() as conn:
            # First, then the rows: a transaction that ends in between is below it anyway.
            horizon = await self.db.backend.export_horizon(conn)
            final = [] if horizon is None else [jobs.c.export_seq < horizon]
            rows = (
                await conn.execute(
                    sa.select(*JOB_COLUMNS, jobs.c.export_seq)
                    .where(*where, *final)
                    .order_by(jobs.c.export_seq, jobs.c.id)
                    .limit(limit + 1)
                )
            ).all()
            more = len(rows) > limit
            if not more and horizon is not None:
                pending = sa.select(jobs.c.id).where(*where, jobs.c.export_seq >= horizon)
                more = (await conn.execute(pending.limit(1))).first() is not None
        shown = [(ExportPosition(row.export_seq, row.id), row_to_job(row)) for row in rows[:limit]]
        return shown, more

    @unavailable_on_connection_errors
    @retried_when_rolled_back()
    async def cancel(self, crawl_id: UUID, *, owner: str) -> Crawl | None:
        """RUNNING -> CANCELLED, its PENDING pages CANCELLED with it, in one transaction under
        the crawl's lock: a page finishing meanwhile adds nothing to it. A finished crawl is
        left as it is. None when unknown or another owner's."""
        now = utcnow()
        async with self.db.write() as conn:
            status = await conn.scalar(
                sa.select(crawls.c.status)
                .where(crawls.c.id == crawl_id, crawls.c.owner == owner)
                .with_for_update()
            )
            if status is None:
                return None
            if status == RUNNING:
                await cancel_running(conn, [crawl_id], now=now)
        return await self.get(crawl_id, owner=owner)

    @unavailable_on_connection_errors
    async def complete_idle(self, *, limit: int = 100) -> list[UUID]:
        """The sweeper's safety net: RUNNING crawls with nothing left (their last page was
        finished by other means: a lease given up on, a page cancelled) become COMPLETED."""
        busy = sa.exists().where(jobs.c.crawl_id == crawls.c.id, jobs.c.status.in_(_BUSY))
        is_idle = sa.and_(crawls.c.status == RUNNING, ~busy)
        # Most sweeps find none: a read says so in one round trip, without the writer.
        async with self.db.read_statement() as conn:
            if (await conn.execute(_ANY_IDLE)).first() is None:
                return []
        idle = (
            sa.select(crawls.c.id)
            .where(is_idle)
            .order_by(crawls.c.created_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        backend = self.db.backend

        def complete(conn: Connection) -> list[UUID]:
            ids = list(conn.execute(idle).scalars())
            return complete_idle(conn, backend, ids, now=utcnow()) if ids else []

        return await self.db.run_write(complete)


__all__ = [
    "Advance",
    "CrawlStore",
    "KnownPages",
    "advance",
    "cancel_running",
    "complete_idle",
    "frontier_key",
    "page_callback",
    "start_crawl",
]


def _update_waiting(conn: Connection, backend: Backend, ids: Sequence[UUID], **values: Any) -> None:
    """Set ``values`` on those of ``ids`` still waiting (PENDING). Rows being claimed right now
    are skipped, not waited for: a claim locks its rows in an order of its own, and they are no
    longer waiting anyway."""
    unclaimed = (
        sa.select(jobs.c.id)
        .where(backend.any_of(jobs.c.id, list(ids)), jobs.c.status == PENDING)
        .with_for_update(skip_locked=True)
    )
    conn.execute(
        jobs.update()
        .where(jobs.c.id.in_(unclaimed.scalar_subquery()), jobs.c.status == PENDING)
        .values(**values)
    )
