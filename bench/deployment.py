"""TaskCrawler deployed for a benchmark, as real processes, and the helpers a phase drives it with.

The processes, databases and key prefixes come from the test harness (tests/support/): the same
code starts and stops ``taskcrawler`` processes, creates and drops a database, deletes a Redis
prefix and finds (or starts) PostgreSQL and Redis for the tests and for the benchmarks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from bench.measure import rss_mb
from tests.support.processes import REPO_ROOT, ManagedProcess, ProcessManager
from tests.support.services import (
    asyncpg_url,
    create_database,
    delete_prefix,
    drop_database,
    free_port,
    resolve_postgres,
    resolve_redis,
    unique_name,
)

FINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED")
#: Every deployment's settings, under what a phase adds: fetch the local target site, let no
#: politeness limit what is measured (every page is on one host), log only what went wrong.
BENCH_SETTINGS = {
    "TASKCRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
    "TASKCRAWLER_HOST_CONCURRENCY": "1000",
    "TASKCRAWLER_LOG_FORMAT": "json",
    "TASKCRAWLER_LOG_LEVEL": "WARNING",
}
#: Long enough for a worker's graceful shutdown (its grace period is 10 s by default).
STOP_GRACE_SECONDS = 20.0


@contextlib.asynccontextmanager
async def postgres(admin_url: str | None) -> AsyncIterator[str]:
    """``admin_url``, else a PostgreSQL found or started as the tests find one (and stopped on
    the way out if we started it)."""
    if admin_url is not None:
        yield admin_url
        return
    resolved = await resolve_postgres()
    try:
        yield resolved.url
    finally:
        resolved.close()


@contextlib.asynccontextmanager
async def redis(url: str | None) -> AsyncIterator[str]:
    """``url``, else a Redis found or started as the tests find one."""
    if url is not None:
        yield url
        return
    resolved = await resolve_redis()
    try:
        yield resolved.url
    finally:
        resolved.close()


def bench_command(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", f"bench.{module}", *args]


async def run_json(
    processes: ProcessManager, module: str, args: Sequence[str], *, within: float
) -> dict[str, Any]:
    """Run ``python -m bench.<module> args`` to the end and parse the JSON line it prints last."""
    helper = processes.start_command(bench_command(module, *args), name=module)
    try:
        code = await helper.wait(within=within)
    except TimeoutError:
        helper.kill()
        raise
    lines = [line for line in helper.output().splitlines() if line.startswith("{")]
    if code != 0 or not lines:
        raise RuntimeError(f"bench.{module} failed ({code}): {helper.output()[-2000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


async def loadgen(
    processes: ProcessManager, mode: str, api: str, target: str, **opts: Any
) -> dict[str, Any]:
    """``python -m bench.loadgen MODE`` with ``opts`` as its options; its JSON answer."""
    args = [mode, "--api", api, "--target", target]
    for key, value in opts.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    within = float(opts.get("max_seconds", 120)) + 60
    return await run_json(processes, "loadgen", args, within=within)


@contextlib.asynccontextmanager
async def target_site(processes: ProcessManager, *options: str) -> AsyncIterator[str]:
    """``bench.target`` in a process of its own: its CPU is not the service's, nor the driver's.
    ``options``: the target's own (``--hosts``, ``--slow``)."""
    port = free_port()
    command = bench_command("target", "--port", str(port), *options)
    site = processes.start_command(command, name="target")
    await site.wait_for_port(port, within=30)
    yield f"http://127.0.0.1:{port}"


class JobCounter:
    """Counts jobs by status straight from the database (the source of truth).

    On PostgreSQL through one connection kept open: a connection per poll (20 a second) would
    fork a server backend each time, CPU taken from what is measured.
    """

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self._pg: asyncpg.Connection | None = None

    async def counts(
        self, query: str = "SELECT status, count(*) FROM jobs GROUP BY status"
    ) -> dict[str, int]:
        if self.database_url.startswith("sqlite"):
            return await asyncio.to_thread(self._sqlite_counts, query)
        if self._pg is None:
            self._pg = await asyncpg.connect(asyncpg_url(self.database_url), timeout=10)
        return {row[0]: row[1] for row in await self._pg.fetch(query)}

    def _sqlite_counts(self, query: str) -> dict[str, int]:
        path = self.database_url.split(":///", 1)[1]
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            return dict(conn.execute(query).fetchall())
        finally:
            conn.close()

    async def failures(self) -> dict[str, int]:
        """FAILED jobs by error code: a failed job is not a fast job."""
        return await self.counts(
            "SELECT coalesce(error_code, '?') || ' (e.g. ' || substr(max(error_log), 1, 160)"
            " || ')', count(*) FROM jobs WHERE status = 'FAILED' GROUP BY error_code"
        )

    async def final(self) -> tuple[int, dict[str, int]]:
        counts = await self.counts()
        return sum(counts.get(s, 0) for s in FINAL_STATES), counts

    async def close(self) -> None:
        if self._pg is not None:
            await self._pg.close()
            self._pg = None


@dataclass
class Sampler:
    """A process's RSS over the run, sampled whenever the driver polls."""

    pid: int
    samples: list[tuple[float, float]] = field(default_factory=list)

    def sample(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.samples.append((time.monotonic(), rss_mb(self.pid)))


async def wait_final(
    counter: JobCounter, expected: int, sampler: Sampler, *, within: float
) -> tuple[float, dict[str, int]]:
    """Poll until ``expected`` jobs are final; return when that happened and the counts."""
    deadline = time.monotonic() + within
    while True:
        sampler.sample()
        done, counts = await counter.final()
        if done >= expected:
            return time.monotonic(), counts
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {done}/{expected} jobs final after {within} s: {counts}")
        await asyncio.sleep(0.05)


@dataclass
class Deployment:
    """One mode of TaskCrawler running as real processes, on a database of its own."""

    mode: str
    api: str
    env: dict[str, str]
    pids: dict[str, int]
    worker_pid: int  # the process that runs the (first) worker
    counter: JobCounter
    processes: ProcessManager
    #: The process whose main thread runs the (first) worker's (first) event loop.
    loop_pid: int
    # Helpers (load generators) run beside the deployment, not in it: stopped with the mode.
    helpers: ProcessManager

    async def add_worker(self, name: str) -> ManagedProcess:
        """One more ``taskcrawler worker``, ready once its metrics port answers."""
        metrics_port = free_port()
        worker = self.processes.start(
            ["worker", "--metrics-port", str(metrics_port)], self.env, name=name
        )
        await worker.wait_for_port(metrics_port, within=60)
        return worker


def _child_with(parent: int, marker: str) -> int | None:
    for pid in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
        with contextlib.suppress(OSError):
            if marker in Path(f"/proc/{pid}/cmdline").read_text():
                return int(pid)
    return None


async def child_pid(parent: int, marker: str, within: float) -> int | None:
    """The child of ``parent`` whose command line holds ``marker`` (``serve``'s worker)."""
    deadline = time.monotonic() + within
    while True:
        if (pid := _child_with(parent, marker)) is not None:
            return pid
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def deployment(
    mode: str,
    workdir: Path,
    *,
    pg_admin: str,
    redis_url: str,
    repo: Path = REPO_ROOT,
    settings: dict[str, str] | None = None,
) -> AsyncIterator[Deployment]:
    """Start ``mode`` from the checkout ``repo`` (``TASKCRAWLER_*`` ``settings`` on top of the
    benchmark's); stop its processes and drop its database and Redis keys on the way out."""
    port = free_port()
    # PYTHONPATH puts ``repo``'s taskcrawler first, so another checkout runs its own code.
    metrics_port = free_port()
    env = BENCH_SETTINGS | {
        "TASKCRAWLER_PORT": str(port),
        "TASKCRAWLER_WORKER_METRICS_PORT": str(metrics_port),
        "PYTHONPATH": str(repo),
    }
    logs = workdir / f"{mode}-{secrets.token_hex(4)}"
    async with contextlib.AsyncExitStack() as stack:
        if mode == "embedded":
            database_url = f"sqlite+aiosqlite:///{logs / 'bench.db'}"
        else:
            name = unique_name("tc_bench_")
            database_url = await create_database(pg_admin, name)
            stack.push_async_callback(drop_database, pg_admin, name)
            prefix = unique_name("tcbench:")
            stack.push_async_callback(delete_prefix, redis_url, prefix)
            env |= {"TASKCRAWLER_REDIS_URL": redis_url, "TASKCRAWLER_REDIS_PREFIX": prefix}
        env["TASKCRAWLER_DATABASE_URL"] = database_url
        env |= settings or {}
        counter = JobCounter(database_url)
        stack.push_async_callback(counter.close)  # before the database is dropped
        processes = await stack.enter_async_context(ProcessManager(logs, grace=STOP_GRACE_SECONDS))
        helpers = await stack.enter_async_context(ProcessManager(logs / "helpers"))
        if mode == "embedded":
            server = processes.start(["serve"], env, name="embedded-serve")
            pids = {"serve": server.pid}
            worker_host = server
        else:
            migrate = processes.start(["migrate"], env, name="migrate")
            if await migrate.wait(within=120) != 0:
                raise RuntimeError(f"taskcrawler migrate failed:\n{migrate.output()[-2000:]}")
            server = processes.start(["api"], env, name="production-api")
            worker = processes.start(["worker"], env, name="production-worker")
            pids = {"api": server.pid, "worker": worker.pid}
            worker_host = worker
        await server.wait_for_port(port, within=60)
        # Spawned before the API listens; a version whose worker shares the API's process
        # (``bench.ab`` against an older ref) has none.
        if mode == "embedded" and (child := await child_pid(server.pid, "embedded_worker", 5)):
            pids["worker"] = child
        if "worker" in pids:
            # A worker process serves /metrics once it is built, just before it consumes. The
            # API answers before that: measured from there, a phase would time the worker's
            # start-up (imports, parser processes) as if it were its throughput.
            await worker_host.wait_for_port(metrics_port, within=60)
        worker_pid = pids.get("worker", server.pid)
        # A worker of several processes runs its loops in children; one of them is measured.
        loop_pid = await child_pid(worker_pid, "embedded_worker", 0) or worker_pid
        yield Deployment(
            mode,
            f"http://127.0.0.1:{port}",
            env,
            pids,
            worker_pid,
            counter,
            processes,
            loop_pid,
            helpers,
        )
