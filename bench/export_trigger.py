"""What the export trigger (migration 0008) costs the worker's outcome writes on PostgreSQL:
20,000 PROCESSING jobs made COMPLETED in batches of 200, as the worker writes them, with the
trigger, without it, and with it again (the order evens out a warming cache).

    .venv/bin/python -m bench.export_trigger postgresql://postgres@127.0.0.1:5432/EMPTY_DB
"""

from __future__ import annotations

import asyncio
import sys
import time

import asyncpg

from taskcrawler.storage import upgrade_database

JOBS, BATCH = 20_000, 200


async def run(conn: asyncpg.Connection, label: str) -> None:
    await conn.execute("TRUNCATE jobs CASCADE")
    await conn.execute(
        "INSERT INTO jobs (id, owner, url, url_key, host, status, created_at)"
        " SELECT gen_random_uuid(), 'o', 'http://x/' || g, md5(g::text) || md5(g::text), 'x',"
        f" 'PROCESSING', now() FROM generate_series(1, {JOBS}) g"
    )
    ids = [row[0] for row in await conn.fetch("SELECT id FROM jobs")]
    took = []
    for start in range(0, JOBS, BATCH):
        began = time.perf_counter()
        await conn.execute(
            "UPDATE jobs SET status = 'COMPLETED', finished_at = now()"
            " FROM unnest($1::uuid[]) AS b(id) WHERE jobs.id = b.id",
            ids[start : start + BATCH],
        )
        took.append(time.perf_counter() - began)
    took.sort()
    print(
        f"{label}: {len(took)} batches of {BATCH}: total {sum(took) * 1000:.0f} ms,"
        f" median {took[len(took) // 2] * 1000:.2f} ms a batch"
    )


async def main(dsn: str) -> None:
    await upgrade_database(dsn.replace("postgresql://", "postgresql+asyncpg://", 1))
    conn = await asyncpg.connect(dsn)
    try:
        await run(conn, "with the trigger   ")
        await conn.execute("ALTER TABLE jobs DISABLE TRIGGER jobs_export_seq")
        await run(conn, "without the trigger")
        await conn.execute("ALTER TABLE jobs ENABLE TRIGGER jobs_export_seq")
        await run(conn, "with the trigger   ")
    finally:
        await conn.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
