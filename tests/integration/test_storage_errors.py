"""A transaction PostgreSQL rolls back to break a deadlock wrote nothing, and is retried as
an outage is, not raised as a crash (its writers back off and write again)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import sqlalchemy as sa

from taskcrawler.domain import StorageUnavailable
from taskcrawler.storage import Database
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.errors import retried_when_rolled_back, unavailable_on_connection_errors
from taskcrawler.storage.tables import crawls


async def _two_crawls(db: Database) -> tuple[uuid.UUID, uuid.UUID]:
    first, second = uuid.uuid4(), uuid.uuid4()
    async with db.write() as conn:
        for crawl_id in (first, second):
            await conn.execute(
                crawls.insert().values(
                    id=crawl_id, url="http://a.test/", spec={}, status="RUNNING",
                    created_at=sa.func.now(),
                )
            )  # fmt: skip
    return first, second


async def test_a_deadlock_victim_is_unavailable_not_a_crash(pg_url: str) -> None:
    db = open_database(pg_url, pool_size=4)
    try:
        first, second = await _two_crawls(db)
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


async def test_a_one_transaction_write_rolled_back_by_a_deadlock_runs_again(
    pg_url: str,
) -> None:
    db = open_database(pg_url, pool_size=4)
    attempts: list[uuid.UUID] = []
    try:
        first, second = await _two_crawls(db)
        both_hold_one = asyncio.Barrier(2)

        @unavailable_on_connection_errors
        @retried_when_rolled_back()
        async def lock_in_order(a: uuid.UUID, b: uuid.UUID) -> None:
            attempts.append(a)
            async with db.write() as conn:
                await conn.execute(crawls.update().where(crawls.c.id == a).values(discovered=1))
                if attempts.count(a) == 1:  # the deadlock, once
                    await both_hold_one.wait()
                await conn.execute(crawls.update().where(crawls.c.id == b).values(discovered=2))

        results = await asyncio.gather(
            lock_in_order(first, second), lock_in_order(second, first), return_exceptions=True
        )
        async with db.read() as conn:
            written = set((await conn.execute(sa.select(crawls.c.discovered).where(
                crawls.c.id.in_([first, second])))).scalars())  # fmt: skip
    finally:
        await db.close()
    assert list(results) == [None, None]  # the victim ran again and committed
    assert len(attempts) == 3
    assert written == {1, 2}  # the last to commit wrote both rows


async def test_a_write_that_fails_otherwise_is_not_run_again() -> None:
    calls = 0

    @retried_when_rolled_back()
    async def refused() -> None:
        nonlocal calls
        calls += 1
        raise ValueError("not a rollback")

    with pytest.raises(ValueError, match="not a rollback"):
        await refused()
    assert calls == 1
