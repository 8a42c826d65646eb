"""On SQLite the worker's writes of outcomes hold the writer lock every process queues for (the
API's inserts too) only while their own statements run: never while they wait for the worker's
event loop, which may be busy with a thousand fetches and parses.

Shown without timing: the moment a write takes the lock, the event loop is stopped until the
lock is let go. A write that needed the loop between its statements could then never let go,
and the probe gives up after ``GIVE_UP_SECONDS`` (a guard against hanging, far beyond any
write's own time)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta

import pytest
import sqlalchemy as sa

from taskcrawler.domain import ClaimedJob, Outcome
from taskcrawler.domain.crawls import Candidate, CrawlSpec
from taskcrawler.domain.pages import PageContent
from taskcrawler.storage import CrawlStore, JobStore, NewJob, WorkStore
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.rows import utcnow
from taskcrawler.storage.sqlite.locking import WriterLock
from taskcrawler.storage.tables import jobs, webhook_deliveries
from tests.support.stores import Stores
from tests.support.transitions import decided, lost_attempts

GIVE_UP_SECONDS = 30
SITE = "http://site.test"


class LoopStoppedWhileHeld:
    """Each time the writer lock is taken, stops the event loop until it is let go; records
    for each hold whether it was let go while the loop stood still."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._let_go = threading.Event()
        self.let_go_while_stopped: list[bool] = []

    def taken(self) -> None:
        """In the thread that took the lock."""
        self._let_go.clear()
        self._loop.call_soon_threadsafe(self._stop_loop)

    def released(self) -> None:
        self._let_go.set()

    def _stop_loop(self) -> None:
        # Blocks the loop on purpose: nothing else of this process runs until the lock is free.
        self.let_go_while_stopped.append(self._let_go.wait(GIVE_UP_SECONDS))


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[Stores]:
    db = open_database(sqlite_url)
    yield Stores(db, JobStore(db), WorkStore(db))
    await db.close()


def watching(monkeypatch: pytest.MonkeyPatch) -> LoopStoppedWhileHeld:
    """The probe on this process's writer lock. Installed once the test's set-up (its claims)
    is written: only the writes under test take the lock while it watches."""
    watcher = LoopStoppedWhileHeld(asyncio.get_running_loop())
    acquire, release = WriterLock.acquire, WriterLock.release

    def acquired(lock: WriterLock) -> None:
        acquire(lock)
        watcher.taken()

    def released(lock: WriterLock) -> None:
        watcher.released()
        release(lock)

    monkeypatch.setattr(WriterLock, "acquire", acquired)
    monkeypatch.setattr(WriterLock, "release", released)
    return watcher


async def claimed(store: Stores, count: int) -> list[ClaimedJob]:
    created = await store.jobs.create_jobs(
        [NewJob(f"{SITE}/{uuid.uuid4()}", callback_url=f"{SITE}/hook") for _ in range(count)],
        redispatch_after=30,
    )
    return await store.work.claim(
        [c.job.id for c in created], lease_seconds=30, redispatch_after=30
    )


async def crawl_start(store: Stores) -> ClaimedJob:
    _, start_id = await CrawlStore(store.db).create(
        "", CrawlSpec.create(f"{SITE}/", limit=100), callback_url=None, redispatch_after=30
    )
    [start] = await store.work.claim([start_id], lease_seconds=30, redispatch_after=30)
    return start


async def count(store: Stores, query: sa.Select[tuple[int]]) -> int:
    async with store.db.read() as conn:
        return int((await conn.execute(query)).scalar_one())


async def test_an_outcome_write_lets_go_of_the_lock_without_the_event_loop(
    store: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = await claimed(store, 20)
    start = await crawl_start(store)
    outcomes = [
        Outcome(job=page, http_status=200, result={}, content=PageContent(texts={"text": "t"}))
        for page in pages
    ] + [
        Outcome(
            job=start,
            http_status=200,
            result={},
            frontier=tuple(Candidate(f"{SITE}/found/{n}", 1) for n in range(5)),
        )
    ]
    probe = watching(monkeypatch)

    added = await store.work.record_transitions(decided(outcomes))

    assert probe.let_go_while_stopped == [True]  # one write, and it needed no loop
    assert len(added) == 5
    assert await count(store, sa.select(sa.func.count()).select_from(webhook_deliveries)) == 20


async def test_lease_recovery_lets_go_of_the_lock_without_the_event_loop(
    store: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = await claimed(store, 20)
    async with store.db.write() as conn:
        await conn.execute(
            jobs.update()
            .where(jobs.c.id.in_([page.id for page in pages]))
            .values(lease_expires_at=utcnow() - timedelta(seconds=1))
        )
    probe = watching(monkeypatch)

    lost = await store.work.recover_expired_leases(lost_attempts(max_retries=0), limit=100)

    assert probe.let_go_while_stopped == [True]
    assert len(lost) == 20
    failed = sa.select(sa.func.count()).where(jobs.c.status == "FAILED")
    assert await count(store, failed) == 20


#: A write under test, after its set-up: it calls ``watch`` between the two.
Write = Callable[[Stores, Callable[[], object]], Awaitable[object]]


async def _new_jobs(store: Stores) -> list[uuid.UUID]:
    created = await store.jobs.create_jobs(
        [NewJob(f"{SITE}/{uuid.uuid4()}") for _ in range(20)], redispatch_after=30
    )
    return [c.job.id for c in created]


async def _claims(store: Stores, watch: Callable[[], object]) -> object:
    ids = await _new_jobs(store)
    watch()
    return await store.work.claim(ids, lease_seconds=30, redispatch_after=30)


async def _lease_renewals(store: Stores, watch: Callable[[], object]) -> object:
    tokens = list({page.lease_token for page in await claimed(store, 20)})
    watch()
    return await store.work.renew_leases(tokens, lease_seconds=30)


async def _hand_backs(store: Stores, watch: Callable[[], object]) -> object:
    pages = await claimed(store, 20)
    watch()
    return await store.work.release(pages)


async def _due_dispatches(store: Stores, watch: Callable[[], object]) -> object:
    await _new_jobs(store)
    watch()
    return await store.work.take_due_dispatches(redispatch_after=30, include_undispatched=True)


async def _idle_crawls(store: Stores, watch: Callable[[], object]) -> object:
    start = await crawl_start(store)
    # Its start page done, the crawl has nothing left: the sweep's read finds it, and writes.
    async with store.db.write() as conn:
        await conn.execute(jobs.update().where(jobs.c.id == start.id).values(status="COMPLETED"))
    watch()
    completed = await store.work.complete_idle_crawls()
    assert len(completed) == 1
    return completed


async def _api_inserts(store: Stores, watch: Callable[[], object]) -> object:
    watch()
    return await _new_jobs(store)


@pytest.mark.parametrize(
    "write",
    [_claims, _lease_renewals, _hand_backs, _due_dispatches, _idle_crawls, _api_inserts],
    ids=["claim", "renew", "hand-back", "dispatch", "idle-crawls", "api-inserts"],
)
async def test_the_other_hot_writes_let_go_of_the_lock_without_the_event_loop(
    store: Stores, monkeypatch: pytest.MonkeyPatch, write: Write
) -> None:
    probes: list[LoopStoppedWhileHeld] = []

    await write(store, lambda: probes.append(watching(monkeypatch)))

    assert [probe.let_go_while_stopped for probe in probes] == [[True]]  # one write, no loop
