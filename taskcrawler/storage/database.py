"""One database: an async engine, and how to write to it safely on either backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from taskcrawler.storage.backend import Backend, T
from taskcrawler.storage.errors import unavailable_on_connection_errors

if TYPE_CHECKING:
    from taskcrawler.storage.postgres.pinned import PinnedConnection


class Database:
    """An engine, its transactions, and the backend of its kind of database
    (:mod:`taskcrawler.storage.backend`), picked from the URL by
    :func:`taskcrawler.storage.adapters.open_database`."""

    def __init__(self, engine: AsyncEngine, backend: Backend) -> None:
        self.engine = engine
        self.backend = backend
        # SQLite has one writer at a time; queueing writes here beats "database is locked" retries.
        self._write_lock = asyncio.Lock() if backend.serializes_writes else None
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._pinned: list[PinnedConnection] = []

    async def close(self) -> None:
        for pinned in self._pinned:
            await pinned.close()
        await self.engine.dispose()
        # Off the event loop: SQLite's writer thread may be in a transaction still (its caller
        # cancelled), waiting for another process's lock, and closing waits for it to end.
        await asyncio.to_thread(self.backend.close)

    def pinned(self) -> PinnedConnection:
        """A connection of the caller's own, for one statement at a time (PostgreSQL only)."""
        pinned = self.backend.pinned_connection(self._autocommit)
        self._pinned.append(pinned)
        return pinned

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """A transaction for writing, committed on exit."""
        if self._write_lock is None:
            async with self.engine.begin() as conn:
                yield conn
            return
        async with self._write_lock, self.backend.write_transaction(self.engine) as conn:
            yield conn

    async def run_write(self, work: Callable[[Connection], T]) -> T:
        """A transaction for writing made of ``work``'s statements (``work`` is called once,
        with a synchronous connection), committed when it returns; what it returns.

        For the frequent or long writes (a worker's outcomes and claims, the API's new jobs):
        on SQLite their statements then hold the one writer without waiting for this process's
        event loop between them (:meth:`Backend.write_in_one_call`)."""
        if self._write_lock is None:
            return await self.backend.write_in_one_call(self.engine, work)
        async with self._write_lock:
            return await self.backend.write_in_one_call(self.engine, work)

    @asynccontextmanager
    async def write_statement(self) -> AsyncIterator[AsyncConnection]:
        """A connection for one write statement, which is atomic by itself.

        On PostgreSQL it runs outside a transaction: no BEGIN and COMMIT, two of the three
        round trips of a one-statement transaction, each of which costs this process CPU too.
        On SQLite it is :meth:`write`, since writes there queue for the one writer anyway.
        """
        if self._write_lock is not None:
            async with self.write() as conn:
                yield conn
            return
        async with self._autocommit.connect() as conn:
            yield conn

    @asynccontextmanager
    async def read_statement(self) -> AsyncIterator[AsyncConnection]:
        """A connection for one read statement: outside a transaction where writes do not
        queue (PostgreSQL), so one round trip instead of three."""
        if self._write_lock is not None:
            async with self.read() as conn:
                yield conn
            return
        async with self._autocommit.connect() as conn:
            yield conn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as conn:
            yield conn

    @unavailable_on_connection_errors
    async def ping(self) -> None:
        async with self.engine.connect() as conn:
            await conn.execute(sa.select(sa.literal(1)))
