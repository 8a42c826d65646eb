"""Fixtures of the fault tests: a per-job hit-counting target, and PostgreSQL/Redis servers of
the test's own where a test stops one (never the shared ones)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from taskcrawler.storage import upgrade_database
from tests.faults.kit import Deployment, FaultTarget, start_fault_target
from tests.support.processes import ProcessManager
from tests.support.services import (
    PostgresProcess,
    RedisProcess,
    admin_execute,
    start_postgres,
    start_redis,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def _fault_target_server() -> Iterator[FaultTarget]:
    server = start_fault_target()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def fault_target(_fault_target_server: FaultTarget) -> FaultTarget:
    _fault_target_server.reset()
    return _fault_target_server


@pytest.fixture
def own_redis() -> Iterator[RedisProcess]:
    server = start_redis()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
async def own_postgres() -> AsyncIterator[PostgresProcess]:
    server = start_postgres()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
async def own_pg_url(own_postgres: PostgresProcess) -> str:
    await admin_execute(own_postgres.admin_url, "CREATE DATABASE tc")
    url = own_postgres.url("tc")
    await upgrade_database(url)
    return url


@contextlib.asynccontextmanager
async def _deployed(
    processes: ProcessManager,
    target: FaultTarget,
    database_url: str,
    *,
    redis_url: str | None = None,
    redis_prefix: str = "taskcrawler",
) -> AsyncIterator[Deployment]:
    """A deployment whose processes are stopped before its own resources are released; its
    API in the test's own process (kit.Deployment says why)."""
    deployment = Deployment(
        processes,
        target,
        database_url,
        redis_url=redis_url,
        redis_prefix=redis_prefix,
        api_in_process=True,
    )
    try:
        yield deployment
    finally:
        await processes.close()
        await deployment.close()


@pytest.fixture
async def production(
    processes: ProcessManager,
    fault_target: FaultTarget,
    pg_url: str,
    redis_url: str,
    redis_prefix: str,
) -> AsyncIterator[Deployment]:
    """Shared PostgreSQL (a fresh database) and shared Redis (a fresh prefix)."""
    async with _deployed(
        processes, fault_target, pg_url, redis_url=redis_url, redis_prefix=redis_prefix
    ) as deployment:
        yield deployment


@pytest.fixture
async def with_own_redis(
    processes: ProcessManager, fault_target: FaultTarget, pg_url: str, own_redis: RedisProcess
) -> AsyncIterator[Deployment]:
    async with _deployed(processes, fault_target, pg_url, redis_url=own_redis.url) as deployment:
        yield deployment


@pytest.fixture
async def with_own_postgres(
    processes: ProcessManager,
    fault_target: FaultTarget,
    own_pg_url: str,
    redis_url: str,
    redis_prefix: str,
) -> AsyncIterator[Deployment]:
    async with _deployed(
        processes, fault_target, own_pg_url, redis_url=redis_url, redis_prefix=redis_prefix
    ) as deployment:
        yield deployment


@pytest.fixture
async def embedded(
    processes: ProcessManager, fault_target: FaultTarget, tmp_path: Path
) -> AsyncIterator[Deployment]:
    sqlite = f"sqlite+aiosqlite:///{tmp_path / 'tc.db'}"
    async with _deployed(processes, fault_target, sqlite) as deployment:
        yield deployment
