"""One database: an async engine, and how to write to it safely on either backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from taskcrawler.storage.engine import create_engine
from taskcrawler.storage.errors import unavailable_on_connection_errors


class Database:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name
        # SQLite has one writer at a time; queueing writes here beats "database is locked" retries.
        self._write_lock = asyncio.Lock() if self.dialect == "sqlite" else None
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")

    @classmethod
    def from_url(cls, url: str, *, pool_size: int = 10) -> Database:
        return cls(create_engine(url, pool_size=pool_size))

    async def close(self) -> None:
        await self.engine.dispose()

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
        round trips of a one-statement transaction, each one CPU in this process too. On SQLite
        it is :meth:`write`, since writes there queue for the one writer anyway.
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
