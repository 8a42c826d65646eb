"""A transaction PostgreSQL rolls back to break a deadlock wrote nothing, and is retried as
an outage is, not raised as a crash (its writers back off and write again)."""

from __future__ import annotations

import asyncio
import uuid

import sqlalchemy as sa

from taskcrawler.domain import StorageUnavailable
from taskcrawler.storage import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.tables import crawls


async def test_a_deadlock_victim_is_unavailable_not_a_crash(pg_url: str) -> None:
    db = Database.from_url(pg_url, pool_size=4)
    first, second = uuid.uuid4(), uuid.uuid4()
    now = sa.func.now()
    try:
        async with db.write() as conn:
            for crawl_id in (first, second):
                await conn.execute(
                    crawls.insert().values(
                        id=crawl_id, url="http://a.test/", spec={}, status="RUNNING",
                        created_at=now,
                    )
                )  # fmt: skip
        both_hold_one = asyncio.Barrier(2)

        @unavailable_on_connection_errors
        async def lock_in_order(a: uuid.UUID, b: uuid.UUID) -> None:
            async with db.write() as conn:
                await conn.execute(crawls.update().where(crawls.c.id == a).values(discovered=1))
                await both_hold_one.wait()
                await conn.execute(crawls.update().where(crawls.c.id == b).values(discovered=2))

        results = await asyncio.gather(
            lock_in_order(first, second), lock_in_order(second, first), return_exceptions=True
        )
    finally:
        await db.close()
    failures = [r for r in results if isinstance(r, BaseException)]
    assert len(failures) == 1, results  # PostgreSQL aborts one of the two, the other commits
    assert isinstance(failures[0], StorageUnavailable), failures[0]
    assert "deadlock" in str(failures[0])
