"""SQLite's writers queue across processes on a flock beside the database, taken by a write
transaction's BEGIN and let go by its end, in the connection's own thread."""

from __future__ import annotations

import asyncio
import fcntl
import sqlite3
import threading
from pathlib import Path

import sqlalchemy as sa

from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.sqlite.locking import WriterLock, locking_connection, writer_lock
from taskcrawler.storage.sqlite.sql import BEGIN_WRITE


def _connect(path: Path) -> sqlite3.Connection:
    """A connection as another process would have it: a lock of its own on the same file.
    Statements go through ``cursor()``, as aiosqlite sends them (``Connection.execute`` makes
    its cursor without calling the method)."""
    factory = locking_connection(WriterLock(f"{path}-writer"), BEGIN_WRITE)
    return sqlite3.connect(path, factory=factory, check_same_thread=False, timeout=0.1)


def _begin_in_thread(connection: sqlite3.Connection) -> threading.Event:
    began = threading.Event()

    def begin() -> None:
        connection.cursor().execute(BEGIN_WRITE)
        began.set()

    threading.Thread(target=begin, daemon=True).start()
    return began


def test_a_second_writer_waits_for_the_first_to_commit(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    first, second = _connect(path), _connect(path)
    first.execute("CREATE TABLE t (x)")
    first.commit()
    first.cursor().execute(BEGIN_WRITE)
    first.execute("INSERT INTO t VALUES (1)")
    began = _begin_in_thread(second)
    # Past SQLite's own busy timeout (0.1 s here): the flock waits, SQLite never says "locked".
    assert not began.wait(0.5)
    first.commit()
    assert began.wait(5)
    second.execute("INSERT INTO t VALUES (2)")
    second.commit()
    assert first.execute("SELECT count(*) FROM t").fetchone() == (2,)


def test_a_rollback_lets_go_and_a_reader_never_does(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    writer, reader, other = _connect(path), _connect(path), _connect(path)
    writer.cursor().execute(BEGIN_WRITE)
    reader.execute("SELECT 1").fetchall()
    reader.rollback()  # holds nothing, so lets nothing go
    began = _begin_in_thread(other)
    assert not began.wait(0.3)
    writer.rollback()
    assert began.wait(5)
    other.rollback()


def _locked(path: Path) -> bool:
    with path.open("rb") as file:
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(file.fileno(), fcntl.LOCK_UN)
        return False


def test_only_a_database_file_has_a_lock_file() -> None:
    assert writer_lock(":memory:") is None
    assert writer_lock(None) is None
    lock = writer_lock("/data/taskcrawler.db")
    assert lock is not None
    assert lock.path == "/data/taskcrawler.db-writer"


async def test_two_databases_on_one_file_take_turns_to_write(tmp_path: Path) -> None:
    """As ``serve``'s API and worker processes do: a write waits for the other's, however long."""
    url = f"sqlite+aiosqlite:///{tmp_path}/t.db"
    one, two = open_database(url), open_database(url)
    try:
        async with one.write() as conn:
            await conn.execute(sa.text("CREATE TABLE t (x)"))
        order: list[str] = []

        async def second_write() -> None:
            async with two.write() as conn:
                await conn.execute(sa.text("INSERT INTO t VALUES (2)"))
            order.append("second")

        async with one.write() as conn:
            await conn.execute(sa.text("INSERT INTO t VALUES (1)"))
            assert _locked(tmp_path / "t.db-writer")
            waiting = asyncio.create_task(second_write())
            await asyncio.sleep(0.3)
            order.append("first")
        await asyncio.wait_for(waiting, 10)
        assert order == ["first", "second"]
        assert not _locked(tmp_path / "t.db-writer")
        async with two.read() as conn:
            assert (await conn.execute(sa.text("SELECT count(*) FROM t"))).scalar() == 2
    finally:
        await one.close()
        await two.close()
