"""Crawl throughput against single-URL jobs, in one run: ``python -m bench.crawl [--pages N]
[--backend sqlite|postgresql] [--queue memory|redis] [--concurrency C] [--format F ...]``; and a
crawl's memory with a big frontier: ``python -m bench.crawl --frontier N [--seconds S]``.

Generates the local test site (tests/support/site.py) with ``--pages`` pages, then, in this
process, with one worker built as the composition root builds one:

1. crawls the site from its home page (sitemaps included) until the crawl is COMPLETED:
   crawl pages/s (every page of the crawl counts, fetched or failed);
2. submits exactly the URLs that crawl found as single jobs (one batch insert) and waits until
   every one is final: jobs/s.

The ratio (crawl pages/s over jobs/s) is the cost of the frontier: link discovery, the per-crawl
lock and the inserts in each outcome's transaction. RSS is read from /proc at the start, the peak
while running, and the end. SQLite uses a temporary file; PostgreSQL a database of its own
(created and dropped, found as the tests find it). ``--queue memory`` (the default) is the
in-process queue and politeness; ``--queue redis`` is the production shape: the Redis queue,
politeness and robots.txt cache shared through Redis (found as the tests find it, under a prefix
of its own, removed at the end). Either way the site is served from a thread of this process,
so the RSS includes its model of the site.

``--frontier N``: a site served from a child process (so this process's RSS is the worker's)
whose pages each link to ``FANOUT`` new pages, crawled with ``limit`` N: the frontier fills to
N pages long before they are fetched. The worker runs until the crawl is COMPLETED or for
``--seconds``, then the crawl is cancelled; its RSS at the start, once the frontier is full, at
its peak and at the end says whether memory follows the frontier.

Not a test: run it once, briefly, and note the figure with its command.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from prometheus_client import CollectorRegistry
from sqlalchemy.ext.asyncio import create_async_engine

from taskcrawler import bootstrap
from taskcrawler.domain.crawls import CrawlStatus
from taskcrawler.domain.jobs import JobQuery, NewJob
from taskcrawler.domain.keys import Caller
from taskcrawler.observability import WorkerMetrics
from taskcrawler.service.crawls import CrawlPolicy, CrawlService
from taskcrawler.settings import Settings
from taskcrawler.storage import Storage, upgrade_database
from taskcrawler.storage.tables import crawls as crawls_table
from taskcrawler.worker.worker import Worker
from tests.support.site import SiteHosts, start_site

OWNER = Caller(owner="bench")
#: New links on each page of the ``--frontier`` site: 100,000 URLs are known after 500 pages.
FANOUT = 200


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Peak:
    """The peak RSS, sampled every 0.1 s while running."""

    def __init__(self) -> None:
        self.value = rss_mb()

    async def run(self) -> None:
        while True:
            self.value = max(self.value, rss_mb())
            await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def database(backend: str) -> AsyncIterator[str]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite+aiosqlite:///{folder}/bench.db"
            await upgrade_database(url)
            yield url
        return
    from tests.support.services import (
        create_database,
        drop_database,
        resolve_postgres,
        unique_name,
    )

    server = await resolve_postgres()
    name = unique_name("tc_bench_crawl_")
    try:
        url = await create_database(server.url, name)
        await upgrade_database(url)
        yield url
    finally:
        await drop_database(server.url, name)
        server.close()


@contextlib.asynccontextmanager
async def redis_server(queue: str) -> AsyncIterator[tuple[str | None, str]]:
    """The Redis URL (None for the in-process queue) and a key prefix of this run's own."""
    from tests.support.services import unique_name

    prefix = unique_name("tc_bench_crawl_")
    if queue == "memory":
        yield None, prefix
        return
    from tests.support.redis import delete_prefix
    from tests.support.services import resolve_redis

    server = await resolve_redis()
    try:
        yield server.url, prefix
    finally:
        await delete_prefix(server.url, prefix)
        server.close()


def settings_for(
    url: str, concurrency: int, redis_url: str | None = None, prefix: str = "taskcrawler"
) -> Settings:
    return Settings(
        _env_file=None,
        database_url=url,
        redis_url=redis_url,
        redis_prefix=prefix,
        allow_private_networks=True,
        respect_robots=True,
        worker_concurrency=concurrency,
        # One host: politeness must not be what sets the pace.
        host_concurrency=concurrency,
        archive_pages=False,
        sweep_interval_seconds=0.5,
        shutdown_grace_seconds=1.0,
        db_pool_size=20,
    )


async def until(check: Any, interval: float = 0.05) -> None:
    while True:
        if await check():
            return
        await asyncio.sleep(interval)


@dataclass
class Rig:
    """One worker, built by the composition root, and the runtime it runs on."""

    runtime: bootstrap.Runtime
    worker: Worker


@contextlib.asynccontextmanager
async def rig(
    backend: str, queue_kind: str, concurrency: int, formats: tuple[str, ...]
) -> AsyncIterator[Rig]:
    async with database(backend) as url, redis_server(queue_kind) as (redis_url, prefix):
        settings = settings_for(url, concurrency, redis_url, prefix)
        runtime = bootstrap.Runtime.open(settings)
        fetcher = bootstrap.fetcher(settings, runtime.redis)
        parser = bootstrap.page_parser(settings)
        embedder = bootstrap.embedder(settings) if "chunks" in formats else None
        metrics = WorkerMetrics(CollectorRegistry())
        worker = bootstrap.worker(runtime, fetcher, parser, metrics, page_embedder=embedder)
        stop = asyncio.Event()
        running = asyncio.create_task(worker.run(stop))
        try:
            yield Rig(runtime, worker)
        finally:
            stop.set()
            await running
            await fetcher.close()
            await parser.aclose()
            if embedder is not None:
                await embedder.close()
            await runtime.close()


async def run(
    pages: int,
    backend: str,
    concurrency: int,
    formats: tuple[str, ...] = ("metadata",),
    queue_kind: str = "memory",
) -> dict[str, Any]:
    server = start_site(seed=2, pages=pages, hosts=SiteHosts.loopback())
    site = server.site
    assert site is not None
    start_rss = rss_mb()
    peak = Peak()
    sampler = asyncio.create_task(peak.run())
    try:
        async with rig(backend, queue_kind, concurrency, formats) as r:
            cpu = time.process_time()
            crawl_seconds, urls = await crawl(r, site.start_url, formats)
            crawl_cpu, cpu = time.process_time() - cpu, time.process_time()
            jobs_seconds = await single_jobs(r, urls, formats)
            jobs_cpu = time.process_time() - cpu
    finally:
        sampler.cancel()
        server.close()
    return {
        "backend": backend,
        "queue": queue_kind,
        "formats": list(formats),
        "pages": len(urls),
        "crawl_pages_per_s": len(urls) / crawl_seconds,
        "jobs_per_s": len(urls) / jobs_seconds,
        "ratio": jobs_seconds / crawl_seconds,
        # This process's CPU (worker and the site's thread) per page: a crawl's extra work in
        # Python, told apart from time spent waiting (for the database, for the crawl's lock).
        "cpu_ms_per_page": (1000 * crawl_cpu / len(urls), 1000 * jobs_cpu / len(urls)),
        "rss_mb": (round(start_rss), round(peak.value), round(rss_mb())),
    }


def crawl_service(r: Rig) -> CrawlService:
    return CrawlService(
        CrawlPolicy(max_limit=1_000_000, redispatch_after=r.runtime.settings.redispatch_seconds),
        r.runtime.storage.crawls,
        r.runtime.storage.jobs,
        r.runtime.queue,
    )


async def crawl_state(storage: Storage, crawl_id: UUID) -> tuple[str, int]:
    """The crawl's status and discovered pages, read from its row alone: polling the live
    counts (a GROUP BY over its pages) 20 times a second would cost the worker's database time
    of its own as the frontier grows."""
    async with storage.db.read() as conn:
        row = (
            await conn.execute(
                sa.select(crawls_table.c.status, crawls_table.c.discovered).where(
                    crawls_table.c.id == crawl_id
                )
            )
        ).one()
    return str(row.status), int(row.discovered)


async def crawl(r: Rig, start_url: str, formats: tuple[str, ...]) -> tuple[float, list[str]]:
    service = crawl_service(r)
    started = time.perf_counter()
    crawl_ = await service.start(OWNER, service.spec(start_url, limit=1_000_000, formats=formats))

    async def done() -> bool:
        return (await crawl_state(r.runtime.storage, crawl_.id))[0] != CrawlStatus.RUNNING.value

    await until(done)
    seconds = time.perf_counter() - started
    urls: list[str] = []
    cursor = None
    while True:
        page, cursor = await service.pages(OWNER, crawl_.id, JobQuery(limit=500, cursor=cursor))
        urls.extend(job.url for job in page)
        if cursor is None:
            return seconds, urls


async def single_jobs(r: Rig, urls: list[str], formats: tuple[str, ...]) -> float:
    started = time.perf_counter()
    created = await r.runtime.storage.jobs.create_jobs(
        [NewJob(url, owner="bench-jobs", formats=formats) for url in urls], redispatch_after=30
    )
    ids: list[UUID] = [c.job.id for c in created]
    await r.runtime.queue.publish(ids)

    async def done() -> bool:
        return await r.runtime.storage.jobs.count_unfinished("bench-jobs") == 0

    await until(done)
    return time.perf_counter() - started


# --- a big frontier ---------------------------------------------------------------------------


def serve_wide_site(port: Any, ready: Any) -> None:
    """A site where page ``n`` links to pages ``n*FANOUT+1 … n*FANOUT+FANOUT``, made on the fly
    (it keeps nothing per page): run in a child process."""
    from aiohttp import web

    async def page(request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        links = "".join(f'<a href="/w/{n * FANOUT + i}">{i}</a> ' for i in range(1, FANOUT + 1))
        body = f"<html><head><title>Page {n}</title></head><body><p>{links}</p></body></html>"
        return web.Response(text=body, content_type="text/html")

    async def main() -> None:
        app = web.Application()
        app.add_routes([web.get("/w/{n:[0-9]+}", page)])
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port.value = runner.addresses[0][1]
        ready.set()
        await asyncio.Event().wait()

    asyncio.run(main())


async def frontier(
    size: int, backend: str, concurrency: int, queue_kind: str, seconds: float
) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    port, ready = context.Value("i", 0), context.Event()
    child = context.Process(target=serve_wide_site, args=(port, ready), daemon=True)
    child.start()
    try:
        if not ready.wait(30):
            raise RuntimeError("the wide site did not start")
        return await _frontier(
            f"http://127.0.0.1:{port.value}/w/0", size, backend, concurrency, queue_kind, seconds
        )
    finally:
        child.terminate()
        child.join(10)


async def _frontier(
    start_url: str, size: int, backend: str, concurrency: int, queue_kind: str, seconds: float
) -> dict[str, Any]:
    start_rss = rss_mb()
    peak = Peak()
    sampler = asyncio.create_task(peak.run())
    full_at: tuple[float, float] | None = None  # (seconds, RSS) when the frontier was full
    try:
        async with rig(backend, queue_kind, concurrency, ("metadata",)) as r:
            service = crawl_service(r)
            started = time.perf_counter()
            spec = service.spec(start_url, limit=size, sitemap="skip")
            crawl_ = await service.start(OWNER, spec)
            while time.perf_counter() - started < seconds:
                status, discovered = await crawl_state(r.runtime.storage, crawl_.id)
                if full_at is None and discovered >= size:
                    full_at = (time.perf_counter() - started, rss_mb())
                if status != CrawlStatus.RUNNING.value:
                    break
                await asyncio.sleep(0.5)
            elapsed = time.perf_counter() - started
            final = await service.cancel(OWNER, crawl_.id)
            sizes = await table_sizes(r.runtime.settings.database_url)
    finally:
        sampler.cancel()
    counts = final.counts
    return {
        "backend": backend,
        "queue": queue_kind,
        "limit": size,
        "status": final.status.value,
        "discovered": counts.discovered,
        "fetched": counts.completed + counts.failed,
        "seconds": elapsed,
        "full_at": None if full_at is None else (round(full_at[0], 1), round(full_at[1])),
        "rss_mb": (round(start_rss), round(peak.value), round(rss_mb())),
        "tables": sizes,
    }


#: The tables a crawl's pages fill: the jobs (the frontier is its PENDING rows), what each
#: fetched page keeps, its links, its runs.
_CRAWL_TABLES = ("jobs", "job_contents", "job_links", "job_runs", "page_archive")


async def table_sizes(database_url: str) -> dict[str, dict[str, int]]:
    """PostgreSQL only (empty on SQLite): each crawl table's rows, its heap, index and TOAST
    bytes, and its dead tuples (what VACUUM has yet to reclaim) after the run."""
    if not database_url.startswith("postgresql"):
        return {}
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as conn:
            await conn.exec_driver_sql(f"ANALYZE {', '.join(_CRAWL_TABLES)}")
            sizes: dict[str, dict[str, int]] = {}
            for table in _CRAWL_TABLES:
                row = (
                    await conn.exec_driver_sql(
                        f"SELECT (SELECT count(*) FROM {table}), pg_relation_size('{table}'), "
                        f"pg_indexes_size('{table}'), pg_total_relation_size('{table}'), "
                        f"n_dead_tup FROM pg_stat_user_tables WHERE relname = '{table}'"
                    )
                ).one()
                rows, heap, indexes, total, dead = (int(value) for value in row)
                sizes[table] = {
                    "rows": rows,
                    "heap": heap,
                    "indexes": indexes,
                    "toast": total - heap - indexes,
                    "dead": dead,
                }
            return sizes
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.crawl", description=__doc__)
    parser.add_argument("--pages", type=int, default=3000, help="pages of the site (3000)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument(
        "--queue",
        choices=("memory", "redis"),
        default="memory",
        help="the in-process queue and politeness (memory), or Redis's (the production shape)",
    )
    parser.add_argument(
        "--concurrency", type=int, default=100, help="worker concurrency (100, the default's)"
    )
    parser.add_argument(
        "--format",
        dest="formats",
        action="append",
        help="what every page keeps (may be repeated; default metadata); `chunks` embeds them "
        "with TASKCRAWLER_EMBEDDER, to compare a crawl with chunks against one without",
    )
    parser.add_argument(
        "--frontier",
        type=int,
        help="instead: crawl a site of endless pages with this limit, and report the RSS",
    )
    parser.add_argument(
        "--seconds", type=float, default=120.0, help="--frontier: run at most this long (120)"
    )
    args = parser.parse_args()
    if args.frontier:
        found = asyncio.run(
            frontier(args.frontier, args.backend, args.concurrency, args.queue, args.seconds)
        )
        print(
            f"{found['backend']}, {found['queue']} queue, limit {found['limit']}: "
            f"{found['discovered']} discovered, {found['fetched']} fetched in "
            f"{found['seconds']:.0f} s ({found['status']}); frontier full at (s, RSS MB) "
            f"{found['full_at']}; RSS start/peak/end {found['rss_mb']} MB"
        )
        for table, size in found["tables"].items():
            per_row = (size["heap"] + size["indexes"] + size["toast"]) / max(size["rows"], 1)
            print(
                f"  {table}: {size['rows']:,} rows, heap {size['heap']:,} B, indexes "
                f"{size['indexes']:,} B, TOAST {size['toast']:,} B, {per_row:,.0f} B/row, "
                f"{size['dead']:,} dead tuples"
            )
        return
    formats = tuple(args.formats or ("metadata",))
    result = asyncio.run(run(args.pages, args.backend, args.concurrency, formats, args.queue))
    print(
        f"{result['backend']}, {result['queue']} queue, {','.join(formats)}: "
        f"{result['pages']} pages; crawl {result['crawl_pages_per_s']:.0f} "
        f"pages/s, single jobs {result['jobs_per_s']:.0f} jobs/s, ratio {result['ratio']:.2f}; "
        f"RSS start/peak/end {result['rss_mb']} MB; CPU ms/page of this process, crawl/jobs "
        f"{result['cpu_ms_per_page'][0]:.2f}/{result['cpu_ms_per_page'][1]:.2f}"
    )


if __name__ == "__main__":
    main()
