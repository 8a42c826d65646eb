"""On SQLite one outcome write holds the writer lock every process queues for (the API's inserts
of new jobs too): the worker writes at most the store's bound of transitions in one transaction
(``outcome_batch``, the backend's), however many wait, and each transition exactly once. The
store here gives a bound of its own, smaller than the backend's, so a worker that ignored it
would be seen.

Counted, not timed: the first write is held back until every job of the test waits for its
write, so an unbounded group commit would take all the others in its next transaction."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any
from uuid import UUID

import pytest
import sqlalchemy as sa
from aiohttp import web

from taskcrawler import bootstrap
from taskcrawler.domain.transitions import Transition
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.politeness import MemoryHostLimiter
from taskcrawler.queue import MemoryQueue
from taskcrawler.settings import Settings
from taskcrawler.storage import NewJob, Storage, open_storage, tables
from taskcrawler.storage.ports import WorkRepository
from taskcrawler.worker.worker import Worker
from tests.support.hostile import StaticResolver, fetch_settings
from tests.support.workers import running_worker

HOST = "batch.test"
BOUND = 16
DRAIN_SECONDS = 60


class HeldFirstWrite:
    """The worker's store with the bound ``BOUND``, counting the transitions of each write (one
    transaction each); its first write waits for ``release``, so the transitions decided
    meanwhile pile up."""

    outcome_batch = BOUND

    def __init__(self, inner: WorkRepository, jobs: int) -> None:
        self._inner = inner
        self.jobs = jobs
        self.writes: list[list[UUID]] = []
        self.first_write = asyncio.Event()
        self.release = asyncio.Event()
        self.final = asyncio.Event()

    async def record_transitions(
        self, transitions: Sequence[Transition], **options: Any
    ) -> list[UUID]:
        if not self.first_write.is_set():
            self.first_write.set()
            await self.release.wait()
        added = await self._inner.record_transitions(transitions, **options)
        self.writes.append([t.job.id for t in transitions])
        if sum(map(len, self.writes)) >= self.jobs:
            self.final.set()
        return added

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
async def site_port() -> AsyncIterator[int]:
    async def page(_: web.Request) -> web.Response:
        body = "<html><title>t</title><p>page</p></html>"
        return web.Response(text=body, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield runner.addresses[0][1]
    await runner.cleanup()


@pytest.fixture
async def storage(sqlite_url: str) -> AsyncIterator[Storage]:
    opened = open_storage(sqlite_url)
    yield opened
    await opened.close()


class SavesCounted(Worker):
    """A worker that says when ``jobs`` of its attempts have asked for their write."""

    def __init__(self, *args: Any, jobs: int, **options: Any) -> None:
        super().__init__(*args, **options)
        self.jobs = jobs
        self.asked = 0
        self.all_asked = asyncio.Event()

    async def _save(self, transition: Transition) -> None:
        self.asked += 1
        if self.asked >= self.jobs:
            self.all_asked.set()  # this one is handed to the writer before the test goes on
        await super()._save(transition)


def make_worker(
    store: HeldFirstWrite, queue: MemoryQueue, jobs: int
) -> tuple[SavesCounted, Fetcher]:
    # Every job is fetched at once, so all of them wait behind the held write.
    settings = Settings(_env_file=None, worker_concurrency=jobs)
    fetcher = Fetcher(
        fetch_settings(allow_private_networks=True),
        resolver=StaticResolver({HOST: ["127.0.0.1"]}),
        limiter=MemoryHostLimiter(jobs),
    )
    worker = SavesCounted(
        bootstrap.worker_config(settings),
        store,
        queue,
        fetcher,
        bootstrap.page_parser(settings),
        jobs=jobs,
    )
    return worker, fetcher


async def test_a_sqlite_outcome_write_takes_at_most_the_bound(
    storage: Storage, site_port: int
) -> None:
    bound = BOUND
    assert bound < storage.work.outcome_batch
    jobs = 2 * bound + 5  # whatever the held write took, more than a bound waits behind it
    created = await storage.jobs.create_jobs(
        [NewJob(f"http://{HOST}:{site_port}/p/{n}") for n in range(jobs)],
        redispatch_after=DRAIN_SECONDS * 10,
    )
    queue = MemoryQueue()
    await queue.publish([c.job.id for c in created])
    store = HeldFirstWrite(storage.work, jobs)
    worker, fetcher = make_worker(store, queue, jobs)
    try:
        async with running_worker(worker), asyncio.timeout(DRAIN_SECONDS):
            await store.first_write.wait()
            await worker.all_asked.wait()
            store.release.set()
            await store.final.wait()
    finally:
        await fetcher.close()
        await worker.parser.aclose()

    sizes = [len(write) for write in store.writes]
    assert max(sizes) <= bound, sizes
    written = [job_id for write in store.writes for job_id in write]
    assert sorted(written) == sorted(c.job.id for c in created)  # each once
    assert worker.stats.completed == jobs
    assert await statuses(storage) == {"COMPLETED": jobs}


async def statuses(storage: Storage) -> dict[str, int]:
    query = sa.select(tables.jobs.c.status, sa.func.count()).group_by(tables.jobs.c.status)
    async with storage.db.read_statement() as conn:
        return {status: count for status, count in (await conn.execute(query)).all()}
