"""What a test's own database costs: ``python -m bench.database_per_test [--rounds 5]``.

Each test gets a migrated, empty PostgreSQL database (tests/support/databases.py). This times
both ways of giving it one, on the server the tests would use (or ``--pg-url``): a fresh
``CREATE DATABASE … TEMPLATE`` and its DROP, against the pool's reuse (a row written, the
database emptied and checked for the next test). Prints one line of milliseconds per test.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import asyncpg

from bench.deployment import postgres
from taskcrawler.storage import upgrade_database
from tests.support.databases import insert_some_row
from tests.support.services import DatabasePool, asyncpg_url, temporary_database


async def fresh_clone_ms(pg_admin: str, template: str, rounds: int) -> float:
    started = time.perf_counter()
    for _ in range(rounds):
        async with temporary_database(pg_admin, template=template):
            pass
    return (time.perf_counter() - started) * 1000 / rounds


async def pool_reuse_ms(pool: DatabasePool, rounds: int) -> float:
    started = time.perf_counter()
    for _ in range(rounds):
        name = await pool.acquire()
        conn = await asyncpg.connect(asyncpg_url(pool.url(name)))
        try:
            await insert_some_row(conn, "jobs")
        finally:
            await conn.close()
        if not await pool.release(name):
            raise RuntimeError(f"the pool dropped {name} instead of reusing it")
    return (time.perf_counter() - started) * 1000 / rounds


async def measure(pg_url: str | None, rounds: int) -> None:
    async with (
        postgres(pg_url) as pg_admin,
        temporary_database(pg_admin, prefix="tc_tpl_") as template_url,
    ):
        await upgrade_database(template_url)
        template = template_url.rsplit("/", 1)[1]
        pool = await DatabasePool.for_template(pg_admin, template)
        try:
            fresh = await fresh_clone_ms(pg_admin, template, rounds)
            reuse = await pool_reuse_ms(pool, rounds)
        finally:
            await pool.close()
    print(f"per test: fresh clone + drop {fresh:.0f} ms, pool reuse (jobs used) {reuse:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg-url", help="an admin URL (default: found or started as the tests do)")
    parser.add_argument("--rounds", type=int, default=5, help="databases given out each way")
    args = parser.parse_args()
    asyncio.run(measure(args.pg_url, args.rounds))


if __name__ == "__main__":
    main()
