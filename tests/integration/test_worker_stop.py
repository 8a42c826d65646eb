"""A stop request ends a worker's idle wait on the queue at once, and the ended wait takes no id
from the queue; a stop that comes while a turn looks at the lines does not wait the idle wait
out: on the in-process queue and on Redis."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence

import pytest

from taskcrawler import bootstrap
from taskcrawler.fetch import Fetcher, MemoryHostLimiter
from taskcrawler.queue import HostLines, JobQueue, MemoryHostLines, MemoryQueue, Ready
from taskcrawler.queue.redis import RedisQueue
from taskcrawler.settings import Settings
from taskcrawler.storage import open_storage
from taskcrawler.worker import worker as worker_module
from taskcrawler.worker.worker import Worker
from tests.support.workers import running_worker

#: Far longer than the test's deadline: a stop that waited the consume call out would hang.
ENDLESS_WAIT_SECONDS = 60.0


@pytest.fixture(params=["memory", "redis"])
async def queue(
    request: pytest.FixtureRequest, redis_url: str, redis_prefix: str
) -> AsyncIterator[JobQueue]:
    q: JobQueue = (
        MemoryQueue()
        if request.param == "memory"
        else RedisQueue.from_url(redis_url, prefix=redis_prefix)
    )
    yield q
    await q.close()


@contextlib.asynccontextmanager
async def idle_worker(
    sqlite_url: str, queue: JobQueue, lines: HostLines | None = None
) -> AsyncIterator[Worker]:
    """A worker whose idle wait on the queue would outlast the test, and no sweeps."""
    settings = Settings(_env_file=None, database_url=sqlite_url, sweep_interval_seconds=3600)
    storage = open_storage(sqlite_url)
    fetcher = Fetcher(settings, limiter=MemoryHostLimiter(4))
    worker = Worker(
        bootstrap.worker_config(settings),
        storage.work,
        queue,
        fetcher,
        bootstrap.page_parser(settings),
        lines=lines,
    )
    try:
        yield worker
    finally:
        await fetcher.close()
        await worker.parser.aclose()
        await storage.close()


async def test_a_stop_ends_the_idle_wait_and_takes_no_id(
    sqlite_url: str, queue: JobQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "CONSUME_WAIT_SECONDS", ENDLESS_WAIT_SECONDS)
    async with idle_worker(sqlite_url, queue) as worker:
        async with asyncio.timeout(20):
            async with running_worker(worker):
                await asyncio.sleep(0.2)  # the consume loop is in its (endless) wait now
        # The ended wait holds nothing: an id published now waits in the queue for a worker.
        job_id = uuid.uuid4()
        await queue.publish([job_id])
        assert await queue.consume(10, wait_seconds=0) == [job_id]


class StopWhileLooking(MemoryHostLines):
    """Lines whose first look sets the stop, and returns once the worker has seen it: the stop
    lands between the turn's look at the lines and its wait on the queue."""

    def __init__(self, stop: asyncio.Event) -> None:
        super().__init__()
        self.stop = stop
        self.worker: Worker | None = None

    async def ready(self, limit: int, *, wake: Sequence[str] = ()) -> Ready:
        if not self.stop.is_set() and self.worker is not None:
            self.stop.set()
            await self.worker._stopping.wait()
        return await super().ready(limit, wake=wake)


async def test_a_stop_during_a_turn_does_not_wait_the_idle_wait_out(
    sqlite_url: str, queue: JobQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "CONSUME_WAIT_SECONDS", ENDLESS_WAIT_SECONDS)
    stop = asyncio.Event()
    lines = StopWhileLooking(stop)
    async with idle_worker(sqlite_url, queue, lines) as worker:
        lines.worker = worker
        async with asyncio.timeout(20):
            await worker.run(stop)
        assert stop.is_set()
