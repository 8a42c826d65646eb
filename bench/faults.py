"""The fault table: each fault scenario of tests/faults at a larger size.

    python -m bench.faults            # all scenarios
    python -m bench.faults kill9 pg   # those whose name contains a word

Real processes, real PostgreSQL and Redis: the shared servers (or throwaway ones, as the tests
find them) for scenarios that only need a database and a key prefix, servers of our own for the
scenarios that stop one. Prints: fault | jobs | completed | failed | lost | repeated fetches |
of which accounted for (an attempt counted by a recovered lease, or a fetch cut short by SIGTERM
and handed back) | seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from taskcrawler.storage import upgrade_database
from tests.faults import scenarios
from tests.faults.kit import Deployment, FaultTarget, Outcome, start_fault_target
from tests.support.processes import ProcessManager
from tests.support.services import (
    Resolved,
    admin_execute,
    create_database,
    delete_prefix,
    drop_database,
    resolve_postgres,
    resolve_redis,
    start_postgres,
    start_redis,
    unique_name,
    with_database,
)

#: Lease for scenarios that do not kill a process. The tests' 2 s lease makes recovery after
#: kill -9 quick, but on a loaded 2-core machine a live worker's heartbeat can miss it, and the
#: job is then (correctly, counted as an attempt) run again: a re-run the fault did not cause.
LEASE = 10

HEADER = ("fault", "jobs", "completed", "failed", "lost", "repeated", "accounted", "s")


class Bench:
    def __init__(self, pg: Resolved, redis: Resolved, target: FaultTarget, workdir: Path) -> None:
        self.pg = pg
        self.redis = redis
        self.target = target
        self.workdir = workdir

    @contextlib.asynccontextmanager
    async def deployment(
        self, *, database: str = "shared", redis: str = "shared", **settings: Any
    ) -> AsyncIterator[tuple[Deployment, Any, Any]]:
        """A deployment on the shared servers or on our own (``"own"``) for the one stopped."""
        self.target.reset()
        async with contextlib.AsyncExitStack() as stack:
            own_pg = own_redis = None
            if database == "own":
                own_pg = start_postgres()
                stack.callback(own_pg.close)
                await admin_execute(own_pg.admin_url, "CREATE DATABASE tc")
                db_url = own_pg.url("tc")
            elif database == "sqlite":
                db_url = f"sqlite+aiosqlite:///{tempfile.mkdtemp(dir=self.workdir)}/tc.db"
            else:
                name = unique_name("tc_faults_")
                await create_database(self.pg.url, name)
                stack.push_async_callback(drop_database, self.pg.url, name)
                db_url = with_database(self.pg.url, name, driver="postgresql+asyncpg")
            if database != "sqlite":
                await upgrade_database(db_url)
            if redis == "own":
                own_redis = start_redis()
                stack.callback(own_redis.close)
                redis_url, prefix = own_redis.url, "taskcrawler"
            else:
                redis_url, prefix = self.redis.url, unique_name("tcbench:")
                stack.push_async_callback(delete_prefix, redis_url, prefix)
            processes = ProcessManager(Path(tempfile.mkdtemp(dir=self.workdir)))
            d = Deployment(
                processes,
                self.target,
                db_url,
                redis_url=None if database == "sqlite" else redis_url,
                redis_prefix=prefix,
                settings=settings,
            )
            stack.push_async_callback(d.close)
            stack.push_async_callback(processes.close, show_output=False)
            yield d, own_pg, own_redis


async def kill9(b: Bench) -> Outcome:
    async with b.deployment() as (d, _, _):
        return await scenarios.kill9_worker(d, jobs=2000, delay=0.2, concurrency=100)


async def kill9_processes(b: Bench) -> Outcome:
    async with b.deployment() as (d, _, _):
        return await scenarios.kill9_worker(d, jobs=2000, delay=0.2, concurrency=50, processes=2)


async def kill9_one_process(b: Bench) -> Outcome:
    async with b.deployment() as (d, _, _):
        return await scenarios.kill9_one_worker_process(d, jobs=2000, delay=0.2, concurrency=50)


async def parent_killed(b: Bench) -> Outcome:
    async with b.deployment() as (d, _, _):
        return await scenarios.worker_parent_killed(d, jobs=1000, delay=0.2, concurrency=50)


async def redis_restart(b: Bench) -> Outcome:
    async with b.deployment(redis="own", lease_seconds=LEASE) as (d, _, redis):
        return await scenarios.redis_flush_and_restart(
            d, redis, jobs=2000, delay=0.05, concurrency=50
        )


async def redis_down(b: Bench) -> Outcome:
    async with b.deployment(redis="own") as (d, _, redis):
        return await scenarios.redis_down_accepts(d, redis, jobs=200)


async def pg_outage(b: Bench) -> Outcome:
    async with b.deployment(database="own", lease_seconds=15) as (d, pg, _):
        return await scenarios.postgres_outage(
            d, pg, jobs=1000, delay=0.1, concurrency=50, outage=5.0
        )


async def sigterm_rolling(b: Bench) -> Outcome:
    async with b.deployment(lease_seconds=LEASE) as (d, _, _):
        return await scenarios.sigterm_rolling(d, jobs=1000, delay=0.2, concurrency=50)


async def sigterm_hand_back(b: Bench) -> Outcome:
    async with b.deployment() as (d, _, _):
        return await scenarios.sigterm_hand_back(d, jobs=50, delay=6.0, grace=1.0)


async def duplicates(b: Bench) -> Outcome:
    async with b.deployment(lease_seconds=LEASE) as (d, _, _):
        return await scenarios.duplicate_delivery(d, jobs=2000, copies=3, workers=3)


async def embedded(b: Bench) -> Outcome:
    async with b.deployment(database="sqlite") as (d, _, _):
        return await scenarios.embedded_restart(d, jobs=1000, delay=0.1, concurrency=50)


SCENARIOS: dict[str, Callable[[Bench], Awaitable[Outcome]]] = {
    "kill9": kill9,
    "kill9-processes": kill9_processes,
    "kill9-one-process": kill9_one_process,
    "parent-killed": parent_killed,
    "redis-restart": redis_restart,
    "redis-down": redis_down,
    "pg-outage": pg_outage,
    "sigterm-rolling": sigterm_rolling,
    "sigterm-hand-back": sigterm_hand_back,
    "duplicates": duplicates,
    "embedded": embedded,
}


def _table(rows: list[tuple[Any, ...]]) -> str:
    cells = [tuple(str(c) for c in row) for row in [HEADER, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(HEADER))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "-|-".join("-" * w for w in widths))
    return "\n".join(lines)


async def main(words: list[str]) -> int:
    chosen = {n: f for n, f in SCENARIOS.items() if not words or any(w in n for w in words)}
    pg, redis = await resolve_postgres(), await resolve_redis()
    target = start_fault_target()
    rows: list[tuple[Any, ...]] = []
    notes: list[str] = []
    problems = 0
    try:
        with tempfile.TemporaryDirectory(prefix="tc-faults-") as workdir:
            bench = Bench(pg, redis, target, Path(workdir))
            for name, scenario in chosen.items():
                started = time.monotonic()
                print(f"running {name} ...", file=sys.stderr, flush=True)
                try:
                    outcome = await scenario(bench)
                except AssertionError as exc:
                    problems += 1
                    rows.append((name, "-", "-", "-", "-", "-", "-", "-"))
                    notes.append(
                        f"{name}: CHECK FAILED after {time.monotonic() - started:.0f} s: {exc}"
                    )
                    continue
                rows.append(outcome.row())
                problems += outcome.lost + outcome.failed + outcome.unexplained
                notes += [f"{outcome.fault}: {note}" for note in outcome.notes]
    finally:
        target.close()
        pg.close()
        redis.close()
    print(_table(rows))
    print()
    for note in notes:
        print(f"- {note}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
