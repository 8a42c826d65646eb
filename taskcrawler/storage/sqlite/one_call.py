"""Write transactions run whole in a thread of their own, on a synchronous connection.

A transaction on SQLite holds the writer lock every process queues for (:mod:`.locking`) from
its ``BEGIN IMMEDIATE`` to its commit. Sent statement by statement through aiosqlite, each
statement is a round trip from the connection's thread to the event loop and back, and the lock
stays held while a busy loop (a worker's thousand fetches and parses) comes round to sending the
next one: most of a hold measured was that wait, not SQL. Here the caller's function runs once,
all its statements in this thread, so the lock is held for the statements' own work only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from sqlalchemy.engine import Connection, Engine

T = TypeVar("T")


class OneCallWriter:
    """Runs ``work(conn)`` as one write transaction in one thread, ``begin_write`` first.

    One thread: a process's writes queue for the one writer anyway (its callers hold
    :class:`~taskcrawler.storage.database.Database`'s write lock)."""

    def __init__(self, engine: Engine, begin_write: str) -> None:
        self._engine = engine
        self._begin_write = begin_write
        self._thread: ThreadPoolExecutor | None = None

    def _executor(self) -> ThreadPoolExecutor:
        """The one thread, started again after :meth:`close` as the engine's connections
        are: a database closed and written to again writes, as it did through its engine."""
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        return self._thread

    async def run(self, work: Callable[[Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor(), self._transaction, work)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # The transaction goes on in its thread, holding the writer lock: the caller lets
            # the process's next writer in only once it is over.
            await asyncio.wait({future})
            raise

    def _transaction(self, work: Callable[[Connection], T]) -> T:
        with self._engine.begin() as conn:
            conn.exec_driver_sql(self._begin_write)
            return work(conn)

    def close(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.shutdown(wait=True)
        self._engine.dispose()
