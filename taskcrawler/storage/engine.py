"""Engines for both backends. SQLite is tuned so the embedded mode is not fsync-bound."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets readers run beside the writer; NORMAL syncs at checkpoints, not at every commit,
    # which is safe against application crashes (the embedded mode's realistic failure).
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA temp_store=MEMORY")
    cursor.execute("PRAGMA cache_size=-65536")
    cursor.close()


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    if url.startswith("sqlite"):
        engine = create_async_engine(
            url,
            json_serializer=_json_dumps,
            json_deserializer=orjson.loads,
            pool_size=max(2, min(pool_size, 4)),
            max_overflow=0,
        )
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(
        url,
        json_serializer=_json_dumps,
        json_deserializer=orjson.loads,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_timeout=10,
        pool_recycle=1800,
        # Fail fast when PostgreSQL is down, so the API answers 503 instead of hanging.
        connect_args={"timeout": 5},
    )
