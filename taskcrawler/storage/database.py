"""One database: an async engine, and how to write to it safely on either backend."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from taskcrawler.storage.engine import create_engine
from taskcrawler.storage.errors import unavailable_on_connection_errors


class PinnedConnection:
    """A PostgreSQL connection kept out of the pool by a caller that runs one statement at a
    time, which it sends to the driver (asyncpg) as it is, outside any transaction.

    For the API's group commit: checking a connection out of SQLAlchemy's pool and back in, and
    going through its execution layer, took about twice the CPU of the statement's own round
    trip. A connection found closed is replaced before use; after an error it is dropped, and
    the next statement takes a new one from the pool.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine  # an AUTOCOMMIT engine
        self._conn: AsyncConnection | None = None
        self._driver: Any = None
        self._busy = False

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        """The rows ``sql`` returns, ``$1..$n`` bound to ``args``."""
        if self._busy:
            raise RuntimeError("a pinned connection runs one statement at a time")
        self._busy = True
        driver = None
        try:
            driver = await self._connected()
            return list(await driver.fetch(sql, *args))
        except BaseException as exc:  # cancelled mid-statement too: its state is unknown
            lost = driver is not None and driver.is_closed()  # before dropping closes it
            await self._drop(invalidate=True)
            if lost and isinstance(exc, Exception) and not isinstance(exc, OSError):
                # The server closed it while the statement went out; asyncpg may then report a
                # protocol state error rather than a lost connection. It is a lost connection.
                raise ConnectionResetError(f"connection lost: {exc}") from exc
            raise
        finally:
            self._busy = False

    async def _connected(self) -> Any:
        if self._driver is not None and self._driver.is_closed():
            await self._drop(invalidate=True)
        if self._conn is None:
            self._conn = await self._engine.connect()
            self._driver = (await self._conn.get_raw_connection()).driver_connection
        return self._driver

    async def _drop(self, *, invalidate: bool) -> None:
        conn, self._conn, self._driver = self._conn, None, None
        if conn is None:
            return
        with contextlib.suppress(Exception):
            if invalidate:  # not back into the pool: SQLAlchemy saw none of its errors
                await conn.invalidate()
            await conn.close()

    async def close(self) -> None:
        await self._drop(invalidate=False)


class Database:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name
        # SQLite has one writer at a time; queueing writes here beats "database is locked" retries.
        self._write_lock = asyncio.Lock() if self.dialect == "sqlite" else None
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._pinned: list[PinnedConnection] = []

    @classmethod
    def from_url(cls, url: str, *, pool_size: int = 10) -> Database:
        return cls(create_engine(url, pool_size=pool_size))

    async def close(self) -> None:
        for pinned in self._pinned:
            await pinned.close()
        await self.engine.dispose()

    def pinned(self) -> PinnedConnection:
        """A connection of the caller's own, for one statement at a time (PostgreSQL only)."""
        if self.dialect != "postgresql":
            raise ValueError("pinned connections send statements to asyncpg: PostgreSQL only")
        pinned = PinnedConnection(self._autocommit)
        self._pinned.append(pinned)
        return pinned

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """A transaction for writing, committed on exit."""
        if self._write_lock is None:
            async with self.engine.begin() as conn:
                yield conn
            return
        async with self._write_lock, self.engine.begin() as conn:
            yield conn

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
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as conn:
            yield conn

    def insert(self, table: sa.Table) -> Any:
        """INSERT with the dialect's ON CONFLICT support."""
        module = postgresql if self.dialect == "postgresql" else sqlite
        return module.insert(table)

    @unavailable_on_connection_errors
    async def ping(self) -> None:
        async with self.engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))
