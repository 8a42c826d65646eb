"""Crawl throughput against single-URL jobs, in one run: ``python -m bench.crawl [--pages N]
[--backend sqlite|postgresql] [--concurrency C] [--format F ...]``.

Generates the local test site (tests/support/site.py) with ``--pages`` pages, then, in this
process, with one worker built as the composition root builds one:

1. crawls the site from its home page (sitemaps included) until the crawl is COMPLETED:
   crawl pages/s (every page of the crawl counts, fetched or failed);
2. submits exactly the URLs that crawl found as single jobs (one batch insert) and waits until
   every one is final: jobs/s.

The ratio (crawl pages/s over jobs/s) is the cost of the frontier: link discovery, the per-crawl
lock and the inserts in each outcome's transaction. RSS is read from /proc at the start, the peak
while running, and the end. SQLite uses a temporary file and the in-process queue; PostgreSQL a
database of its own (created and dropped, found as the tests find it) and the in-process queue.
Not a test: run it once, briefly, and note the figure with its command.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import UUID

from taskcrawler import bootstrap
from taskcrawler.domain.crawls import CrawlStatus
from taskcrawler.domain.jobs import JobQuery, NewJob
from taskcrawler.domain.keys import Caller
from taskcrawler.fetch import Fetcher, MemoryHostLimiter
from taskcrawler.fetch.sitemaps import SitemapLimits
from taskcrawler.queue.memory import MemoryQueue
from taskcrawler.service.crawls import CrawlPolicy, CrawlService
from taskcrawler.settings import Settings
from taskcrawler.storage import Storage, open_storage, upgrade_database
from taskcrawler.worker.chunking import PageChunker
from taskcrawler.worker.crawling import CrawlPages
from taskcrawler.worker.worker import Worker
from tests.support.site import SiteHosts, start_site

OWNER = Caller(owner="bench")


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


def settings_for(url: str, concurrency: int) -> Settings:
    return Settings(
        _env_file=None,
        database_url=url,
        allow_private_networks=True,
        respect_robots=True,
        worker_concurrency=concurrency,
        archive_pages=False,
        sweep_interval_seconds=0.5,
        shutdown_grace_seconds=1.0,
    )


async def until(check: Any, interval: float = 0.05) -> None:
    while True:
        if await check():
            return
        await asyncio.sleep(interval)


async def run(
    pages: int, backend: str, concurrency: int, formats: tuple[str, ...] = ("metadata",)
) -> dict[str, Any]:
    server = start_site(seed=2, pages=pages, hosts=SiteHosts.loopback())
    site = server.site
    assert site is not None
    start_rss = rss_mb()
    peak = Peak()
    sampler = asyncio.create_task(peak.run())
    try:
        async with database(backend) as url:
            settings = settings_for(url, concurrency)
            storage = open_storage(url, pool_size=20)
            queue = MemoryQueue()
            fetcher = Fetcher(settings, limiter=MemoryHostLimiter(concurrency))
            parser = bootstrap.page_parser(settings)
            embedder = bootstrap.embedder(settings) if "chunks" in formats else None
            chunker = (
                None
                if embedder is None
                else PageChunker(
                    storage.chunks,
                    embedder,
                    bootstrap.chunking_config(settings),
                    timeout_seconds=settings.embedder_timeout_seconds,
                )
            )
            worker = Worker(
                bootstrap.worker_config(settings),
                storage.work,
                queue,
                fetcher,
                parser,
                crawls=CrawlPages(storage.crawls, fetcher, SitemapLimits()),
                chunker=chunker,
            )
            stop = asyncio.Event()
            running = asyncio.create_task(worker.run(stop))
            try:
                crawl_seconds, urls = await crawl(storage, queue, settings, site.start_url, formats)
                jobs_seconds = await single_jobs(storage, queue, urls, formats)
            finally:
                stop.set()
                await running
                await fetcher.close()
                await parser.aclose()
                if embedder is not None:
                    await embedder.close()
                await storage.close()
    finally:
        sampler.cancel()
        server.close()
    return {
        "backend": backend,
        "formats": list(formats),
        "pages": len(urls),
        "crawl_pages_per_s": len(urls) / crawl_seconds,
        "jobs_per_s": len(urls) / jobs_seconds,
        "ratio": jobs_seconds / crawl_seconds,
        "rss_mb": (round(start_rss), round(peak.value), round(rss_mb())),
    }


async def crawl(
    storage: Storage,
    queue: MemoryQueue,
    settings: Settings,
    start_url: str,
    formats: tuple[str, ...],
) -> tuple[float, list[str]]:
    service = CrawlService(
        CrawlPolicy(max_limit=1_000_000, redispatch_after=settings.redispatch_seconds),
        storage.crawls,
        storage.jobs,
        queue,
    )
    started = time.perf_counter()
    crawl_ = await service.start(OWNER, service.spec(start_url, limit=1_000_000, formats=formats))

    async def done() -> bool:
        return (await service.get(OWNER, crawl_.id)).status is not CrawlStatus.RUNNING

    await until(done)
    seconds = time.perf_counter() - started
    urls: list[str] = []
    cursor = None
    while True:
        page, cursor = await service.pages(OWNER, crawl_.id, JobQuery(limit=500, cursor=cursor))
        urls.extend(job.url for job in page)
        if cursor is None:
            return seconds, urls


async def single_jobs(
    storage: Storage, queue: MemoryQueue, urls: list[str], formats: tuple[str, ...]
) -> float:
    started = time.perf_counter()
    created = await storage.jobs.create_jobs(
        [NewJob(url, owner="bench-jobs", formats=formats) for url in urls], redispatch_after=30
    )
    ids: list[UUID] = [c.job.id for c in created]
    await queue.publish(ids)

    async def done() -> bool:
        return await storage.jobs.count_unfinished("bench-jobs") == 0

    await until(done)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.crawl", description=__doc__)
    parser.add_argument("--pages", type=int, default=3000, help="pages of the site (3000)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
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
    args = parser.parse_args()
    formats = tuple(args.formats or ("metadata",))
    result = asyncio.run(run(args.pages, args.backend, args.concurrency, formats))
    print(
        f"{result['backend']} {','.join(formats)}: {result['pages']} pages; "
        f"crawl {result['crawl_pages_per_s']:.0f} "
        f"pages/s, single jobs {result['jobs_per_s']:.0f} jobs/s, ratio {result['ratio']:.2f}; "
        f"RSS start/peak/end {result['rss_mb']} MB"
    )


if __name__ == "__main__":
    main()
