"""Claims that fetch: a worker claims a job only when its host has a slot for it, so under
default-like politeness (few fetches at once per host) every page costs one claim, on one slow
host and on many, in one process (in-process lines) and over Redis (shared lines, two workers).

Counted, not timed: the ids handed to the database's claim are counted, and the worker's own
tally of deferrals (a claim that fetched nothing) must stay at zero."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import pytest
from aiohttp import web

from taskcrawler import bootstrap
from taskcrawler.domain import ClaimedJob
from taskcrawler.domain.transitions import Transition
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.politeness import HostLimiter, MemoryHostLimiter, RedisHostLimiter
from taskcrawler.queue import JobQueue, MemoryHostLines, MemoryQueue
from taskcrawler.queue.redis import RedisHostLines, RedisQueue, redis_client
from taskcrawler.settings import Settings
from taskcrawler.storage import NewJob, Storage, open_storage
from taskcrawler.storage.ports import WorkRepository
from taskcrawler.worker.worker import Worker
from tests.support.hostile import StaticResolver, fetch_settings
from tests.support.workers import running_worker

PAGE_SECONDS = 0.02  # each page answers after this: its host stays busy while it is fetched
HOST_CONCURRENCY = 2  # few slots per host, many fetch slots per worker: the storm's setting
WORKER_CONCURRENCY = 20
MAX_CLAIMS_PER_PAGE = 1.1
DRAIN_SECONDS = 60


class CountingClaims:
    """The workers' store, counting the ids each claim hands the database; ``final`` is set
    once ``pages`` attempts are written (none is deferred or retried here)."""

    def __init__(self, inner: WorkRepository, pages: int) -> None:
        self._inner = inner
        self.asked = 0
        self.recorded = 0
        self.pages = pages
        self.final = asyncio.Event()

    async def claim(self, job_ids: Sequence[UUID], **options: Any) -> list[ClaimedJob]:
        self.asked += len(job_ids)
        return await self._inner.claim(job_ids, **options)

    async def record_transitions(
        self, transitions: Sequence[Transition], **options: Any
    ) -> list[UUID]:
        added = await self._inner.record_transitions(transitions, **options)
        self.recorded += len(transitions)
        if self.recorded >= self.pages:
            self.final.set()
        return added

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass
class Site:
    port: int
    hits: int = 0


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    served = Site(0)

    async def page(request: web.Request) -> web.Response:
        served.hits += 1
        await asyncio.sleep(PAGE_SECONDS)
        return web.Response(
            text="<html><title>p</title><p>page</p></html>", content_type="text/html"
        )

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)
    runner = web.AppRunner(app)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    served.port = runner.addresses[0][1]
    yield served
    await runner.cleanup()


@dataclass
class Shared:
    """What the workers of one deployment share: the database, the queue, the lines, the
    politeness limiter (each worker gets the same ones, as processes sharing a Redis do)."""

    storage: Storage
    queue: JobQueue
    make_lines: Any
    make_limiter: Any


@pytest.fixture(params=["in-process", "redis"])
async def shared(
    request: pytest.FixtureRequest, sqlite_url: str, redis_url: str, redis_prefix: str
) -> AsyncIterator[Shared]:
    storage = open_storage(sqlite_url)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(storage.close)
        if request.param == "in-process":
            lines, limiter = MemoryHostLines(), MemoryHostLimiter(HOST_CONCURRENCY)
            yield Shared(storage, MemoryQueue(), lambda: lines, lambda: limiter)
            return
        client = redis_client(redis_url)
        stack.push_async_callback(client.aclose)
        yield Shared(
            storage,
            RedisQueue(client, prefix=redis_prefix),
            lambda: RedisHostLines(client, prefix=redis_prefix),
            lambda: RedisHostLimiter(client, concurrency=HOST_CONCURRENCY, prefix=redis_prefix),
        )


def make_worker(
    shared: Shared, store: CountingClaims, hosts: Sequence[str]
) -> tuple[Worker, Fetcher]:
    settings = Settings(_env_file=None, worker_concurrency=WORKER_CONCURRENCY)
    limiter: HostLimiter = shared.make_limiter()
    fetcher = Fetcher(
        fetch_settings(allow_private_networks=True, host_wait_seconds=1.0),
        resolver=StaticResolver({host: ["127.0.0.1"] for host in hosts}),
        limiter=limiter,
    )
    worker = Worker(
        bootstrap.worker_config(settings),
        store,
        shared.queue,
        fetcher,
        bootstrap.page_parser(settings),
        lines=shared.make_lines(),
    )
    return worker, fetcher


async def drain(shared: Shared, urls: list[str], workers: int = 1) -> tuple[list[Worker], int]:
    """Queue ``urls`` before any worker runs, then run ``workers`` workers until all are done.
    Returns the workers and the ids their claims handed the database."""
    hosts = sorted({url.split("/")[2].split(":")[0] for url in urls})
    # Published once and not again: the sweeper publishes a PENDING job once more when its
    # dispatch is this old, which a starved machine can reach here (a duplicate costs a claim).
    created = await shared.storage.jobs.create_jobs(
        [NewJob(url) for url in urls], redispatch_after=DRAIN_SECONDS * 10
    )
    await shared.queue.publish([c.job.id for c in created])
    store = CountingClaims(shared.storage.work, len(urls))
    built = [make_worker(shared, store, hosts) for _ in range(workers)]
    try:
        async with AsyncExitStack() as stack:
            for worker, _ in built:
                await stack.enter_async_context(running_worker(worker))
            async with asyncio.timeout(DRAIN_SECONDS):
                await store.final.wait()
    finally:
        for worker, fetcher in built:
            await fetcher.close()
            await worker.parser.aclose()
    return [worker for worker, _ in built], store.asked


def assert_one_claim_a_page(drained: tuple[list[Worker], int], pages: int, site: Site) -> None:
    workers, asked = drained
    assert sum(w.stats.completed for w in workers) == pages
    assert sum(w.stats.deferred for w in workers) == 0  # no claim that fetched nothing
    assert sum(w.stats.claimed for w in workers) == pages
    assert asked <= MAX_CLAIMS_PER_PAGE * pages
    assert site.hits == pages


async def test_one_slow_host_costs_one_claim_a_page(shared: Shared, site: Site) -> None:
    urls = [f"http://slow.test:{site.port}/p/{i}" for i in range(40)]
    drained = await drain(shared, urls)
    assert_one_claim_a_page(drained, len(urls), site)


async def test_many_hosts_cost_one_claim_a_page(shared: Shared, site: Site) -> None:
    urls = [f"http://h{i % 8}.test:{site.port}/p/{i}" for i in range(48)]
    drained = await drain(shared, urls)
    assert_one_claim_a_page(drained, len(urls), site)


# Over Redis only: in-process, each worker process has a queue and lines of its own.
@pytest.mark.parametrize("shared", ["redis"], indirect=True)
async def test_two_workers_on_one_slow_host_cost_one_claim_a_page(
    shared: Shared, site: Site
) -> None:
    """Two workers of one deployment (two worker hosts, over Redis): neither claims a page
    whose host the other holds every slot of."""
    assert shared.make_lines().shared
    urls = [f"http://slow.test:{site.port}/p/{i}" for i in range(40)]
    drained = await drain(shared, urls, workers=2)
    assert_one_claim_a_page(drained, len(urls), site)
