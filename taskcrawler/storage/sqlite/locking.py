"""SQLite's one writer, queued for across processes (``serve``'s API and its worker process).

SQLite lets a second process wait for the write lock only by sleeping and trying again (its busy
handler: 1, 2, 5, 10 … 100 ms), so a process that writes often (a draining worker) keeps it
while the other sleeps: measured, the API's inserts waited half a second at 500 POST/s. An
exclusive ``flock`` on a file beside the database is a queue the kernel keeps: released, the
waiter wakes at once. Writers of one process queue first on their own asyncio lock
(:class:`~taskcrawler.storage.database.Database`), so at most one thread per process waits here.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator

#: Beside the database's own -wal and -shm files.
SUFFIX = "-writer"


class WriterLock:
    """An exclusive lock on ``path`` (created if missing), taken without blocking the loop."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def _descriptor(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return self._fd

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        fd = self._descriptor()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: no thread needed
        except BlockingIOError:
            await _wait_for(fd)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


async def _wait_for(fd: int) -> None:
    """Block a thread in ``flock`` until the lock is ours. Cancelled meanwhile, the thread still
    gets it in the end: it is released then, or no process could ever write again."""
    taking = asyncio.get_running_loop().run_in_executor(None, fcntl.flock, fd, fcntl.LOCK_EX)
    try:
        await asyncio.shield(taking)
    except asyncio.CancelledError:
        taking.add_done_callback(lambda done: _release_if_taken(fd, done))
        raise


def _release_if_taken(fd: int, taking: asyncio.Future[None]) -> None:
    if not taking.cancelled() and taking.exception() is None:
        fcntl.flock(fd, fcntl.LOCK_UN)


class NoLock:
    """For a database no other process can open (``:memory:``)."""

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        yield

    def close(self) -> None:
        return None


def writer_lock(database: str | None) -> WriterLock | NoLock:
    """The lock of the SQLite database file ``database`` (a URL's database part)."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return NoLock()
    return WriterLock(database + SUFFIX)
