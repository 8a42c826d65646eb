"""On SQLite one outcome write holds the writer lock every process queues for (the API's inserts
of new jobs too): the worker writes at most the store's bound of transitions in one transaction
(``outcome_batch``, the backend's), however many wait, and each transition exactly once. The
store here gives a bound of its own, smaller than the backend's, so a worker that ignored it
would be seen.

Counted, not timed: the first write is held back until every job of the test waits for its
write, so an unbounded group commit would take all the others in its next transaction."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa
from aiohttp import web

from taskcrawler.queue import MemoryQueue
from taskcrawler.storage import NewJob, Storage, open_storage, tables
from tests.support.held_writes import HeldFirstWrite, held_worker
from tests.support.workers import running_worker

HOST = "batch.test"
BOUND = 16
DRAIN_SECONDS = 60


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
    store = HeldFirstWrite(storage.work, jobs, bound)
    worker, fetcher = held_worker(store, queue, HOST)
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
