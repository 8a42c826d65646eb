"""The API's group commit keeps one PostgreSQL connection of its own (a PinnedConnection): it
must survive the server dropping that connection, a cancelled statement, and misuse."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import asyncpg
import pytest
import sqlalchemy as sa

from taskcrawler.domain import StorageUnavailable
from taskcrawler.storage import Database, JobStore, NewJob
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.postgres.pinned import PinnedConnection


@pytest.fixture
async def db(pg_url: str) -> AsyncIterator[Database]:
    database = open_database(pg_url, pool_size=4)
    yield database
    await database.close()


async def backend_pid(pinned: PinnedConnection) -> int:
    [row] = await pinned.fetch("SELECT pg_backend_pid()")
    return int(row[0])


async def terminate(db: Database, pid: int) -> None:
    async with db.engine.connect() as conn:
        await conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})


async def test_one_connection_serves_statement_after_statement(db: Database) -> None:
    pinned = db.pinned()
    first = await backend_pid(pinned)
    assert [await backend_pid(pinned) for _ in range(3)] == [first] * 3
    assert db.engine.pool.checkedout() == 1  # type: ignore[attr-defined]
    await db.close()
    assert db.engine.pool.checkedout() == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("pause", [0.0, 0.3])
async def test_a_connection_the_server_dropped_is_replaced(db: Database, pause: float) -> None:
    store = JobStore(db).with_pinned_connection()
    assert store._pinned is not None
    for round_ in range(4):  # the next statement races the news of the close: try it often
        before = await backend_pid(store._pinned)
        await terminate(db, before)
        await asyncio.sleep(pause)
        # At most one statement fails, as StorageUnavailable (the API answers 503, the client
        # retries); the next runs on a new connection.
        with contextlib.suppress(StorageUnavailable):
            await store.create_jobs([NewJob(f"http://x.test/{round_}")], redispatch_after=30)
        [again] = await store.create_jobs([NewJob(f"http://x.test/{round_}")], redispatch_after=30)
        assert await store.get_job(again.job.id) is not None
        assert await backend_pid(store._pinned) != before


async def test_a_cancelled_statement_does_not_poison_the_next(db: Database) -> None:
    pinned = db.pinned()
    before = await backend_pid(pinned)
    task = asyncio.create_task(pinned.fetch("SELECT pg_sleep(10)"))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await backend_pid(pinned) != before  # the interrupted connection was not reused
    assert (await pinned.fetch("SELECT 1"))[0][0] == 1


async def test_statements_do_not_overlap(db: Database) -> None:
    pinned = db.pinned()
    slow = asyncio.create_task(pinned.fetch("SELECT pg_sleep(0.3)"))
    await asyncio.sleep(0.05)
    with pytest.raises(RuntimeError, match="one statement at a time"):
        await pinned.fetch("SELECT 1")
    await slow


async def test_other_errors_are_not_taken_for_an_unavailable_database(db: Database) -> None:
    pinned = db.pinned()
    with pytest.raises(asyncpg.UndefinedTableError):
        await pinned.fetch("SELECT * FROM no_such_table")
    assert (await pinned.fetch("SELECT 1"))[0][0] == 1


async def test_sqlite_has_no_pinned_connections(sqlite_url: str) -> None:
    db = open_database(sqlite_url)
    try:
        assert JobStore(db).with_pinned_connection()._pinned is None
        with pytest.raises(ValueError, match="PostgreSQL only"):
            db.pinned()
    finally:
        await db.close()
