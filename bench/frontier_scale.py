"""How far one PostgreSQL carries a crawl frontier: ``python -m bench.frontier_scale [--rows N]``.

A crawl's frontier is its PENDING jobs. This writes ``--rows`` new pages into the frontiers of
``--crawls`` crawls the way a worker's outcome batch does (storage/crawls.py: the crawl's row
locked, the batch's links looked up, the new ones inserted, the crawl's count raised, one
transaction per batch of ``--links`` links), from ``--writers`` connections at once, with no
fetching at all: what is measured is the database's side alone. At every tenth of the rows it
prints the insert rate of that tenth and the jobs table's bytes per row (heap, indexes), so the
slope says where one database stops keeping up. PostgreSQL found or started as the tests do.

Each tenth also runs ANALYZE on the jobs table, as autovacuum would: a PostgreSQL without
autovacuum (the tests' servers run without it) keeps the plans it made while the table was
empty, and then looks a batch's links up by reading every page of the crawl's owner.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from taskcrawler.domain.crawls import Candidate
from taskcrawler.domain.keys import Caller
from taskcrawler.queue.memory import MemoryQueue
from taskcrawler.service.crawls import CrawlPolicy, CrawlService
from taskcrawler.storage import Storage, open_storage, upgrade_database
from taskcrawler.storage.crawls import KnownPages, _admit, _page_template, _unknown
from taskcrawler.storage.rows import utcnow
from taskcrawler.storage.tables import crawls
from tests.support.services import create_database, drop_database, resolve_postgres, unique_name

OWNER = Caller(owner="bench")


async def start_crawls(storage: Storage, count: int, limit: int) -> list[UUID]:
    service = CrawlService(
        CrawlPolicy(max_limit=limit, redispatch_after=30.0), storage.crawls, storage.jobs,
        MemoryQueue(),
    )  # fmt: skip
    started = []
    for n in range(count):
        spec = service.spec(f"https://site{n}.example/", limit=limit, sitemap="skip")
        started.append((await service.start(OWNER, spec)).id)
    return started


async def add_batch(storage: Storage, crawl_id: UUID, links: list[str]) -> int:
    """One outcome batch's frontier step for one crawl, as storage/crawls.py's advance does."""
    backend = storage.db.backend

    def add(conn: Connection) -> int:
        row = conn.execute(
            sa.select(crawls.c.owner, crawls.c.spec, crawls.c.discovered)
            .where(crawls.c.id == crawl_id)
            .with_for_update()
        ).one()
        template = _page_template(crawl_id, row.owner, row.spec, utcnow(), 30.0)
        candidates = [Candidate(link, 1) for link in links]
        added = _admit(
            conn,
            backend,
            template,
            _unknown(crawl_id, candidates, KnownPages()),
            int(row.spec["limit"]) - row.discovered,
            {},
        )
        conn.execute(
            crawls.update()
            .where(crawls.c.id == crawl_id)
            .values(discovered=crawls.c.discovered + len(added))
        )
        return len(added)

    return await storage.db.run_write(add)


async def sizes(storage: Storage) -> dict[str, int]:
    async with storage.db.write() as conn:
        await conn.exec_driver_sql("ANALYZE jobs")
        row = (
            await conn.exec_driver_sql(
                "SELECT (SELECT count(*) FROM jobs), pg_relation_size('jobs'),"
                " pg_indexes_size('jobs')"
            )
        ).one()
    return {"rows": int(row[0]), "heap": int(row[1]), "indexes": int(row[2])}


async def run(url: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    storage = open_storage(url, pool_size=args.writers + 1)
    try:
        crawl_ids = await start_crawls(storage, args.crawls, args.rows)
        numbers = itertools.count()
        batches = args.rows // args.links
        step = max(1, batches // 10)
        figures: list[dict[str, Any]] = []
        done = 0
        lock = asyncio.Lock()
        started = last = time.perf_counter()

        async def writer(n: int) -> None:
            nonlocal done, last
            while True:
                batch = next(numbers)
                if batch >= batches:
                    return
                crawl_id = crawl_ids[batch % len(crawl_ids)]
                links = [
                    f"https://site{crawl_id.int % 997}.example/p/{batch}/{i}?ref={n}"
                    for i in range(args.links)
                ]
                await add_batch(storage, crawl_id, links)
                async with lock:
                    done += 1
                    if done % step == 0:
                        now = time.perf_counter()
                        size = await sizes(storage)
                        figure = {
                            "rows": size["rows"],
                            "rows_per_s": round(step * args.links / (now - last)),
                            "heap_bytes_per_row": round(size["heap"] / size["rows"]),
                            "index_bytes_per_row": round(size["indexes"] / size["rows"]),
                        }
                        figures.append(figure)
                        print(figure, flush=True)
                        last = time.perf_counter()

        await asyncio.gather(*(writer(n) for n in range(args.writers)))
        total = time.perf_counter() - started
        print(f"{batches * args.links:,} frontier rows in {total:.1f} s", flush=True)
        return figures
    finally:
        await storage.close()


async def main_async(args: argparse.Namespace) -> None:
    server = await resolve_postgres(args.pg_url) if args.pg_url else await resolve_postgres()
    name = unique_name("tc_bench_frontier_")
    try:
        url = await create_database(server.url, name)
        await upgrade_database(url)
        await run(url, args)
    finally:
        await drop_database(server.url, name)
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.frontier_scale", description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--crawls", type=int, default=8)
    parser.add_argument("--links", type=int, default=200, help="new links per batch (200)")
    parser.add_argument("--writers", type=int, default=4, help="connections writing at once")
    parser.add_argument("--pg-url", help="an admin URL (default: found or started as the tests do)")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
