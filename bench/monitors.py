"""Monitors at scale: ``python -m bench.monitors [--urls 10000] [--rounds 4] [--sqlite]``.

``--urls`` pages on a local site, each watched by a monitor of its own (the scheduler's worst
case: one slot per page), fetched by one in-process worker and read by one scheduler on a clock
this script moves, so rounds follow each other as fast as the work allows. Every page has an
``ETag``; ``--change`` of them change before each round after the first.

Prints one line per round:

* fire: wall time of firing every due slot (restarting each page's job, publishing it), per slot;
* fetch: until every job is final (the worker's fetches, 304s included);
* read: change detection of the round's runs (a 200 is parsed again through the selectors and
  compared; a 304 is recorded as the baseline's content), per run;
* bytes: response bodies the site sent for unchanged pages and for changed ones;
* db: the database's size, and its growth since the round before;

then the idle cost of one poll (nothing due, nothing to read), which every worker pays every
``TASKCRAWLER_MONITOR_POLL_SECONDS``: as the rounds left the tables, and after a VACUUM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

from bench.deployment import postgres
from taskcrawler import bootstrap
from taskcrawler.domain.monitors import MonitorSpec
from taskcrawler.fetch import Fetcher
from taskcrawler.queue import MemoryQueue
from taskcrawler.settings import Settings
from taskcrawler.storage import Storage, upgrade_database
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.tables import jobs
from taskcrawler.worker.monitoring import MonitorConfig, MonitorScheduler
from taskcrawler.worker.parsing import PageParser
from taskcrawler.worker.worker import Worker
from tests.support.changing_site import ChangingSiteServer, PageKind
from tests.support.databases import temporary_database
from tests.support.workers import running_worker

T0 = datetime(2030, 1, 1, tzinfo=UTC)
INTERVAL = 60.0
_TABLES = ("jobs", "job_runs", "run_contents", "monitors", "monitor_pages", "monitor_rounds")


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@contextlib.asynccontextmanager
async def database(sqlite: bool, pg_url: str | None) -> AsyncIterator[str]:
    if sqlite:
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite+aiosqlite:///{folder}/bench.db"
            await upgrade_database(url)
            yield url
        return
    async with postgres(pg_url) as admin, temporary_database(admin, prefix="tc_bench_") as url:
        await upgrade_database(url)
        yield url


async def size_bytes(storage: Storage, url: str) -> int:
    if url.startswith("sqlite"):
        path = Path(url.split(":///", 1)[1])
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    async with storage.db.read() as conn:
        return int(await conn.scalar(sa.text("SELECT pg_database_size(current_database())")) or 0)


async def table_sizes(storage: Storage) -> str:
    if storage.db.backend.name != "postgresql":
        return ""
    async with storage.db.read() as conn:
        sizes = {
            name: int(await conn.scalar(sa.text(f"SELECT pg_total_relation_size('{name}')")) or 0)
            for name in _TABLES
        }
    return ", ".join(f"{name} {size / 1e6:.1f} MB" for name, size in sizes.items())


async def wait_final(storage: Storage) -> None:
    unfinished = jobs.c.status.in_(("PENDING", "PROCESSING"))
    while True:
        async with storage.db.read() as conn:
            left = await conn.scalar(sa.select(sa.func.count()).where(unfinished))
        if not left:
            return
        await asyncio.sleep(0.2)


async def measure(args: argparse.Namespace) -> None:
    site = ChangingSiteServer(seed=1, per_kind=0)
    for number in range(args.urls):
        site.site.add_page(f"/etag/{number}", PageKind.ETAG)
    site.start()
    rng = random.Random(1)
    settings = Settings(
        _env_file=None,
        allow_private_networks=True,
        respect_robots=False,
        worker_concurrency=args.concurrency,
        host_concurrency=args.concurrency,
        max_retries=0,
        archive_pages=True,
    )
    try:
        async with database(args.sqlite, args.pg_url) as url:
            storage = Storage.on(open_database(url, pool_size=10))
            queue = MemoryQueue()
            fetcher = Fetcher(settings)
            parser = PageParser(processes=1)
            worker = Worker(bootstrap.worker_config(settings), storage.work, queue, fetcher, parser)
            clock = Clock(T0)
            scheduler = MonitorScheduler(
                MonitorConfig(batch=500), storage.monitor_work, queue, parser, clock=clock
            )
            try:
                # Monitors are created once the worker's restart sweep is over: that sweep
                # publishes every PENDING job, and would run pages ahead of their first slot.
                async with running_worker(worker):
                    await rounds(args, site, storage, url, scheduler, clock, rng)
            finally:
                await fetcher.close()
                await parser.aclose()
                await storage.close()
    finally:
        site.close()


async def rounds(
    args: argparse.Namespace,
    site: ChangingSiteServer,
    storage: Storage,
    url: str,
    scheduler: MonitorScheduler,
    clock: Clock,
    rng: random.Random,
) -> None:
    started = time.perf_counter()
    paths = sorted(site.site.pages)
    for path in paths:
        spec = MonitorSpec.create(
            interval_seconds=INTERVAL, url=site.url(path), min_interval_seconds=1
        )
        await storage.monitors.create("bench", spec, now=T0, redispatch_after=30)
    created = time.perf_counter() - started
    size = await size_bytes(storage, url)
    print(
        f"{args.urls:,} monitors created in {created:.1f} s; db {size / 1e6:.1f} MB "
        f"({'SQLite' if args.sqlite else 'PostgreSQL'})",
        flush=True,
    )
    for k in range(args.rounds):
        clock.now = T0 + timedelta(seconds=k * INTERVAL)
        changed: set[str] = set()
        if k:
            changed = set(rng.sample(paths, int(len(paths) * args.change)))
            for path in changed:
                site.site.change(path)
        served_from = len(site.served)
        t0 = time.perf_counter()
        fired = await scheduler.fire_due()
        t1 = time.perf_counter()
        await wait_final(storage)
        t2 = time.perf_counter()
        read = await scheduler.read_runs()
        t3 = time.perf_counter()
        served = site.served[served_from:]
        unchanged_bytes = sum(s.body_bytes for s in served if s.path not in changed)
        changed_bytes = sum(s.body_bytes for s in served if s.path in changed)
        not_modified = sum(1 for s in served if s.status == 304)
        before, size = size, await size_bytes(storage, url)
        slots = max(1, len(fired))
        print(
            f"round {k}: fire {len(fired):,} slots {t1 - t0:.2f} s "
            f"({(t1 - t0) / slots * 1000:.2f} ms/slot); fetch {t2 - t1:.1f} s "
            f"({not_modified:,} answered 304); read {read:,} runs {t3 - t2:.1f} s "
            f"({(t3 - t2) / max(1, read) * 1000:.2f} ms/run), "
            f"changes so far {scheduler.stats.changes:,}; bytes: unchanged pages "
            f"{unchanged_bytes:,}, changed {changed_bytes:,} ({len(changed):,} pages); db "
            f"{size / 1e6:.1f} MB (+{(size - before) / 1e6:.2f} MB)",
            flush=True,
        )
    # A run can finish after its round's reading (a page whose slot fired while its last run was
    # unread runs again once that run is recorded): read until nothing is left, then count. Its
    # run was started by the reading just done, so it is waited for before the next.
    await wait_final(storage)
    while await scheduler.read_runs():
        await wait_final(storage)
    print(f"after the rounds: {scheduler.stats.changes:,} changes", flush=True)
    print(await table_sizes(storage), flush=True)
    # What every worker pays per poll when nothing is due and nothing is unread.
    clock.now = T0 + timedelta(seconds=(args.rounds - 1) * INTERVAL + 1)
    print(f"idle poll (nothing due, nothing to read): {await idle_ms(scheduler):.1f} ms")
    if storage.db.backend.name == "postgresql":
        # The rounds leave each row's old versions behind until (auto)vacuum removes them; an
        # index scan for due monitors or unread runs walks past every one of them.
        async with storage.db.engine.connect() as conn:
            autocommit = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await autocommit.execute(sa.text("VACUUM ANALYZE"))
        print(f"idle poll after VACUUM: {await idle_ms(scheduler):.1f} ms", flush=True)


async def idle_ms(scheduler: MonitorScheduler, polls: int = 20) -> float:
    t0 = time.perf_counter()
    for _ in range(polls):
        await scheduler.tick()
    return (time.perf_counter() - t0) / polls * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=10_000, help="pages, one monitor each")
    parser.add_argument("--rounds", type=int, default=4, help="rounds, the baseline included")
    parser.add_argument("--change", type=float, default=0.01, help="share changed per round")
    parser.add_argument("--concurrency", type=int, default=100, help="fetches in flight")
    parser.add_argument("--sqlite", action="store_true", help="SQLite instead of PostgreSQL")
    parser.add_argument("--pg-url", help="an admin URL (default: found or started as tests do)")
    args = parser.parse_args()
    os.environ.setdefault("TASKCRAWLER_LOG_LEVEL", "WARNING")
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
