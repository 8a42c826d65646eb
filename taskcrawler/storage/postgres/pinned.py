"""A PostgreSQL connection a caller keeps for itself (the API's group commit)."""

from __future__ import annotations

import contextlib
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine


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
