"""IN lists against one array parameter on PostgreSQL: ``python -m bench.in_lists``.

Runs the worker's lock query (``SELECT … FOR UPDATE`` of a batch of job ids) 400 times with
batch sizes drawn from 1-500, once with ``id IN (…)`` and once with ``id = ANY($1)``, twice
each, alternated, in a database of its own (created and dropped). Prints per statement: wall
time, this process's CPU, and PostgreSQL's CPU (all its processes, from /proc). An IN list is
one statement text per size, prepared and planned again; the array is one statement.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

from bench.deployment import postgres
from bench.measure import cpu_seconds
from taskcrawler.storage.adapters import create_engine
from taskcrawler.storage.postgres.sql import any_of
from taskcrawler.storage.rows import PROCESSING
from taskcrawler.storage.tables import jobs, metadata
from tests.support.services import temporary_database


def postgres_cpu_seconds() -> float:
    total = 0.0
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().startswith("postgres"):
                total += cpu_seconds(int(comm.parent.name))
        except OSError:  # the process ended between the two reads
            continue
    return total


async def measure(url: str, statements: int) -> None:
    engine = create_engine(url, pool_size=2)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        ids = [uuid.uuid4() for _ in range(500)]
        rng = random.Random(1)
        sizes = [rng.randint(1, 500) for _ in range(statements)]
        for form in ("IN list", "= ANY", "IN list", "= ANY"):
            wall, cpu, pg = time.perf_counter(), time.process_time(), postgres_cpu_seconds()
            for size in sizes:
                batch = ids[:size]
                match = jobs.c.id.in_(batch) if form == "IN list" else any_of(jobs.c.id, batch)
                async with engine.begin() as conn:
                    await conn.execute(
                        sa.select(jobs.c.id)
                        .where(match, jobs.c.status == PROCESSING)
                        .with_for_update()
                    )
            per = 1000 / len(sizes)
            print(
                f"{form:<8} {(time.perf_counter() - wall) * per:6.2f} ms wall, "
                f"{(time.process_time() - cpu) * per:5.2f} ms our CPU, "
                f"{(postgres_cpu_seconds() - pg) * per:5.2f} ms PostgreSQL CPU per statement",
                flush=True,
            )
    finally:
        await engine.dispose()


async def in_a_database_of_its_own(pg_url: str | None, statements: int) -> None:
    async with (
        postgres(pg_url) as pg_admin,
        temporary_database(pg_admin, prefix="tc_bench_") as url,
    ):
        await measure(url, statements)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg-url", help="an admin URL (default: found or started as the tests do)")
    parser.add_argument("--statements", type=int, default=400)
    args = parser.parse_args()
    asyncio.run(in_a_database_of_its_own(args.pg_url, args.statements))


if __name__ == "__main__":
    main()
