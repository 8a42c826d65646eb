"""The worker's hot statements find their rows by primary key, whatever the statistics say.

Statistics taken while no job was PENDING (or PROCESSING) make PostgreSQL estimate one such
row. A partial index on the status alone then looked cheapest, and a claim scanned every
PENDING job to find the few it was given: a cost that grew with the backlog.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from taskcrawler.storage.postgres.sql import CLAIM_JOBS, guarded_outcome_update
from tests.support.services import asyncpg_url

_ROWS = """
    INSERT INTO jobs (id, owner, url, url_key, host, status, retry_count, created_at,
                      dispatch_at, lease_token, lease_expires_at)
    SELECT gen_random_uuid(), '', 'http://plan.test/' || $1 || g, md5($1 || g), 'plan.test', $1,
           0, now(), CASE WHEN $1 = 'PENDING' THEN now() END,
           CASE WHEN $1 = 'PROCESSING' THEN gen_random_uuid() END,
           CASE WHEN $1 = 'PROCESSING' THEN now() END
    FROM generate_series(1, $2) AS g
"""


@pytest.fixture
async def misjudged(pg_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A jobs table whose statistics were taken when every job was finished, and which now
    holds a backlog of PENDING and PROCESSING jobs."""
    conn = await asyncpg.connect(asyncpg_url(pg_url))
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
    assert "pk_jobs" in plan
    assert "ix_jobs_dispatch" not in plan


@pytest.mark.parametrize("mode", ["force_generic_plan", "force_custom_plan"])
async def test_an_outcome_write_looks_its_jobs_up_by_id(
    misjudged: asyncpg.Connection, mode: str
) -> None:
    sql, _ = guarded_outcome_update(("b_id", "b_token", "status", "finished_at"))
    ids, tokens = await _three(misjudged, "PROCESSING")
    completed = "ARRAY['COMPLETED', 'COMPLETED', 'COMPLETED'], ARRAY[now(), now(), now()]"
    plan = await _plan(misjudged, sql, f"{ids}, {tokens}, {completed}", mode)
    assert "pk_jobs" in plan
    assert "ix_jobs_lease" not in plan
