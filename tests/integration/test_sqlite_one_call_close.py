"""Closing a SQLite database whose writer thread is still in a write (its caller cancelled
while the write waited for another process's lock): the event loop goes on meanwhile, and the
database is as usable after closing as its engine is.

Shown without timing: another process's hold of the writer lock is let go only by the test, or
by a guard after ``GIVE_UP_SECONDS`` (far beyond any close's own time), so a close that stood the
event loop still until the lock was free lets the test run again only once the guard let go."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from taskcrawler.storage import Database
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.sqlite.locking import SUFFIX, WriterLock

GIVE_UP_SECONDS = 20


class OtherProcessHold:
    """The writer lock held through a descriptor of its own, as another process holds it; let
    go by :meth:`let_go`, or by the guard."""

    def __init__(self, database_url: str) -> None:
        self._lock = WriterLock(f"{make_url(database_url).database}{SUFFIX}")
        self._lock.acquire()
        self.let_go_by_guard = threading.Event()
        self._guard = threading.Timer(GIVE_UP_SECONDS, self._give_up)
        self._guard.start()

    def _give_up(self) -> None:
        self.let_go_by_guard.set()
        self._lock.release()

    def let_go(self) -> None:
        self._guard.cancel()
        if not self.let_go_by_guard.is_set():
            self._lock.release()
        self._lock.close()


def waiting_for_the_lock(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set when a writer of this process starts waiting for the lock."""
    waiting = threading.Event()
    acquire = WriterLock.acquire

    def acquired(lock: WriterLock) -> None:
        waiting.set()
        acquire(lock)

    monkeypatch.setattr(WriterLock, "acquire", acquired)
    return waiting


def closing_started(monkeypatch: pytest.MonkeyPatch, db: Database) -> threading.Event:
    """Set when the database's backend starts letting go of what it holds."""
    started = threading.Event()
    close: Callable[[], None] = db.backend.close

    def closing() -> None:
        started.set()
        close()

    monkeypatch.setattr(db.backend, "close", closing)
    return started


async def _wait(event: threading.Event) -> None:
    assert await asyncio.to_thread(event.wait, GIVE_UP_SECONDS)


async def test_closing_lets_the_event_loop_run_while_a_write_waits_for_the_lock(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = open_database(sqlite_url)
    waiting = waiting_for_the_lock(monkeypatch)
    other = OtherProcessHold(sqlite_url)
    try:
        write = asyncio.create_task(db.run_write(lambda conn: conn.execute(sa.select(1))))
        await _wait(waiting)
        write.cancel()  # the write goes on in its thread, waiting for the lock
        started = closing_started(monkeypatch, db)
        closing = asyncio.create_task(db.close())
        await _wait(started)

        assert not other.let_go_by_guard.is_set()  # the loop ran while the lock was held
    finally:
        other.let_go()
    await closing
    with pytest.raises(asyncio.CancelledError):
        await write


async def test_a_closed_database_writes_as_its_engine_reads(sqlite_url: str) -> None:
    db = open_database(sqlite_url)
    await db.close()
    try:
        async with db.read() as conn:
            assert (await conn.execute(sa.select(1))).scalar_one() == 1

        assert await db.run_write(lambda conn: conn.execute(sa.select(2)).scalar_one()) == 2
    finally:
        await db.close()
