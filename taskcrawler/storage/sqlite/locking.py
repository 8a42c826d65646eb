"""SQLite's one writer, queued for across processes (``serve``'s API and its worker process).

SQLite lets a second process wait for the write lock only by sleeping and trying again (its busy
handler: 1, 2, 5, 10 … 100 ms), so a process that writes often (a draining worker) keeps it
while the other sleeps: measured, the API's inserts waited half a second at 500 POST/s. An
exclusive ``flock`` on a file beside the database is a queue the kernel keeps: released, the
waiter wakes at once.

The lock is taken and let go in the connection's own thread (aiosqlite runs each connection in
one): taken by the ``BEGIN IMMEDIATE`` that starts every write transaction, let go by its commit
or rollback. Done from the event loop instead, a busy loop (a worker parsing pages) would hold
the lock past the commit until it came round to releasing it. Writers of one process queue first
on their own asyncio lock (:class:`~taskcrawler.storage.database.Database`), so at most one
thread per process waits here, and they share one descriptor.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from typing import Any

#: Beside the database's own -wal and -shm files.
SUFFIX = "-writer"


class WriterLock:
    """An exclusive ``flock`` of ``path`` (created if missing); blocking, for a thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def _descriptor(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return self._fd

    def acquire(self) -> None:
        fcntl.flock(self._descriptor(), fcntl.LOCK_EX)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def writer_lock(database: str | None) -> WriterLock | None:
    """The lock of the SQLite database file ``database`` (a URL's database part); None for a
    database no other process can open."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return WriterLock(database + SUFFIX)


def locking_connection(lock: WriterLock, begin_write: str) -> type[sqlite3.Connection]:
    """A ``sqlite3`` connection class (``sqlite3.connect(factory=…)``) whose ``begin_write``
    statement takes ``lock`` first, and whose commit or rollback of that transaction lets it
    go."""

    class LockingCursor(sqlite3.Cursor):
        def execute(self, sql: str, parameters: Any = (), /) -> LockingCursor:
            if sql != begin_write:
                return super().execute(sql, parameters)
            connection = self.connection
            assert isinstance(connection, LockingConnection)
            connection.take_lock()
            try:
                return super().execute(sql, parameters)
            except BaseException:
                connection.let_go()
                raise

    class LockingConnection(sqlite3.Connection):
        holding = False

        def cursor(self, factory: Any = LockingCursor) -> Any:
            return super().cursor(factory)

        def take_lock(self) -> None:
            lock.acquire()
            self.holding = True

        def let_go(self) -> None:
            if self.holding:
                self.holding = False
                lock.release()

        def commit(self) -> None:
            try:
                super().commit()
            finally:
                self.let_go()

        def rollback(self) -> None:
            try:
                super().rollback()
            finally:
                self.let_go()

        def close(self) -> None:
            try:
                super().close()
            finally:
                self.let_go()

    return LockingConnection
