"""The suite's shared fixtures, a plugin of the processes that run tests (tests/conftest.py
registers it): real PostgreSQL and Redis (see tests/support/services.py), a database or key
prefix of its own for every test, a local HTTP target, and managed ``taskcrawler`` subprocesses.

Everything a test creates is named with a random suffix and removed afterwards, so several test
runs (CI jobs, developers) can share one PostgreSQL and one Redis on the same machine.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from taskcrawler.storage import upgrade_database
from tests.support.processes import ProcessManager
from tests.support.run_once import built_once
from tests.support.served import Served, served_on_sqlite, sqlite_copy
from tests.support.services import (
    DatabasePool,
    Resolved,
    admin_execute,
    create_database,
    delete_prefix,
    drop_abandoned_databases,
    drop_database,
    mark_owned,
    resolve_pgvector,
    resolve_postgres,
    resolve_redis,
    unique_name,
)
from tests.support.site import Site, SiteServer, start_site
from tests.support.target import TargetServer, start_target

# --------------------------------------------------------------------------- PostgreSQL


@pytest.fixture(scope="session")
async def pg_service() -> AsyncIterator[Resolved]:
    """The PostgreSQL server of this session: its URL and where it came from."""
    resolved = await resolve_postgres()
    try:
        yield resolved
    finally:
        resolved.close()


@pytest.fixture(scope="session")
def pg_admin_url(pg_service: Resolved) -> str:
    """asyncpg-style URL of a database on a server where we may CREATE/DROP DATABASE."""
    return pg_service.url


@pytest.fixture(scope="session")
async def pg_template(pg_admin_url: str) -> AsyncIterator[str]:
    """Name of a migrated template database: the migrations run once per session, and each test's
    database is a copy of it."""
    await drop_abandoned_databases(pg_admin_url)
    name = unique_name("tc_tpl_")
    url = await create_database(pg_admin_url, name)
    try:
        await mark_owned(pg_admin_url, name)
        await upgrade_database(url)
        yield name
    finally:
        await drop_database(pg_admin_url, name)


@pytest.fixture(scope="session")
async def pg_pool(pg_admin_url: str, pg_template: str) -> AsyncIterator[DatabasePool]:
    pool = await DatabasePool.for_template(pg_admin_url, pg_template)
    try:
        yield pool
    finally:
        await pool.close()


@pytest.fixture
async def pg_url(pg_pool: DatabasePool) -> AsyncIterator[str]:
    """SQLAlchemy URL (``postgresql+asyncpg://``) of a migrated, empty database no other test is
    using; emptied or dropped afterwards (see DatabasePool for why it may be reused)."""
    name = await pg_pool.acquire()
    try:
        yield pg_pool.url(name)
    finally:
        await pg_pool.release(name)


@pytest.fixture(scope="session")
async def pgvector_service(pg_admin_url: str) -> AsyncIterator[Resolved]:
    """A PostgreSQL server with pgvector, for the vector tests (started when the session's
    server lacks the extension: they never skip)."""
    resolved = await resolve_pgvector(pg_admin_url)
    try:
        yield resolved
    finally:
        resolved.close()


@pytest.fixture(scope="session")
async def pgvector_template(pgvector_service: Resolved) -> AsyncIterator[str]:
    name = unique_name("tc_vtpl_")
    url = await create_database(pgvector_service.url, name)
    try:
        await mark_owned(pgvector_service.url, name)
        await upgrade_database(url)
        yield name
    finally:
        await drop_database(pgvector_service.url, name)


@pytest.fixture
async def pgvector_url(pgvector_service: Resolved, pgvector_template: str) -> AsyncIterator[str]:
    """SQLAlchemy URL of a migrated, empty database on a server with pgvector."""
    name = unique_name("tc_v_")
    url = await create_database(pgvector_service.url, name, pgvector_template)
    try:
        await mark_owned(pgvector_service.url, name)
        yield url
    finally:
        await drop_database(pgvector_service.url, name)


@pytest.fixture
async def pg_url_without_vectors(pg_url: str) -> str:
    """A migrated empty PostgreSQL database without pgvector: the session's server has none
    (the shared PostgreSQL 15), or its extension is dropped (a server started from the wheel)."""
    await admin_execute(pg_url, "DROP EXTENSION IF EXISTS vector CASCADE")
    return pg_url


@pytest.fixture(params=["sqlite", "pgvector"])
def vector_database_url(request: pytest.FixtureRequest) -> str:
    """A migrated empty database that stores vectors, on each backend in turn."""
    fixture = "sqlite_url" if request.param == "sqlite" else "pgvector_url"
    return str(request.getfixturevalue(fixture))


# --------------------------------------------------------------------------- SQLite


@pytest.fixture(scope="session")
async def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once per run, by the first test process that needs it; the others
    copy it. Running Alembic costs a process 0.2-0.3 s of CPU (and importing it 0.1 s), and a
    copy of the file is the same schema, byte for byte."""
    return await built_once(tmp_path_factory, "sqlite-template.db", _migrate_sqlite)


async def _migrate_sqlite(path: Path) -> None:
    await upgrade_database(f"sqlite+aiosqlite:///{path}")
    # The migration's engine is disposed: everything is in the main file, no journal beside it.
    sidecars = [p.name for p in path.parent.iterdir() if p != path]
    assert not sidecars, f"the migrated template left {sidecars} beside it"


@pytest.fixture
def sqlite_url(tmp_path: Path, _sqlite_template: Path) -> str:
    """SQLAlchemy URL of a migrated SQLite file in the test's own tmp_path (a copy of the
    session's migrated template)."""
    return sqlite_copy(_sqlite_template, tmp_path)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str:
    """A migrated empty database on each backend in turn: contract tests run on both."""
    fixture = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(fixture))


# --------------------------------------------------------------------------- Redis


@pytest.fixture(scope="session")
async def redis_service() -> AsyncIterator[Resolved]:
    """The Redis server of this session: its URL and where it came from."""
    resolved = await resolve_redis()
    try:
        yield resolved
    finally:
        resolved.close()


@pytest.fixture(scope="session")
def redis_url(redis_service: Resolved) -> str:
    return redis_service.url


@pytest.fixture
async def redis_prefix(redis_url: str) -> AsyncIterator[str]:
    """A key prefix of this test's own; every key under it is deleted afterwards."""
    prefix = unique_name("tctest:")
    yield prefix
    await delete_prefix(redis_url, prefix)


# --------------------------------------------------------------------------- target and processes


@pytest.fixture(scope="session")
def _target_server() -> Iterator[TargetServer]:
    server = start_target()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def target(_target_server: TargetServer) -> TargetServer:
    """The local HTTP target (session-wide server, hits and flaky counters reset per test)."""
    _target_server.reset()
    return _target_server


@pytest.fixture
async def processes(tmp_path: Path) -> AsyncIterator[ProcessManager]:
    """Start ``python -m taskcrawler ...`` subprocesses; all are killed when the test ends."""
    manager = ProcessManager(tmp_path / "processes")
    try:
        yield manager
    finally:
        await manager.close()


@pytest.fixture(scope="module")
async def keyed_server(
    tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path
) -> AsyncIterator[Served]:
    """``taskcrawler serve`` for a whole module, keys required: its tests keep out of each
    other's way with a key each (``tests.support.cli.keyed``), as a key sees only its own jobs,
    crawls and monitors."""
    auth = {"TASKCRAWLER_AUTH_REQUIRED": "true"}
    async with served_on_sqlite(tmp_path_factory, _sqlite_template, **auth) as served:
        yield served


# --------------------------------------------------------------------------- the generated site


@pytest.fixture(scope="module")
def _site_server(request: pytest.FixtureRequest) -> Iterator[SiteServer]:
    """One generated site per test module; the module's ``SITE_OPTIONS`` (a dict of
    :func:`start_site` arguments) shapes it."""
    server = start_site(**getattr(request.module, "SITE_OPTIONS", {}))
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def site_server(_site_server: SiteServer) -> SiteServer:
    """The module's generated site (tests/support/site.py), its records reset per test."""
    _site_server.reset()
    return _site_server


@pytest.fixture
def site(site_server: SiteServer) -> Site:
    """The model of the module's generated site: its pages and the ground truth about them."""
    assert site_server.site is not None
    return site_server.site
