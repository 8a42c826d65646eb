"""Fault scenarios with real processes, each ending in an :class:`Outcome`.

Each scenario injects one fault into a running deployment, waits (bounded) until every job is
final, and returns what the database and the target saw. Checks that belong to the fault itself
(the API answered 503 during a PostgreSQL outage, a SIGTERMed worker left within its grace period)
are asserted here, so the tests and ``bench/faults.py`` prove the same things.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from tests.faults.kit import Deployment, Outcome, urls_for
from tests.support.processes import ManagedProcess
from tests.support.services import PostgresProcess, RedisProcess

Scenario = Callable[..., Awaitable[Outcome]]


def _keys(prefix: str, n: int) -> list[str]:
    return [f"{prefix}-{i}" for i in range(n)]


async def kill9_worker(
    d: Deployment, *, jobs: int, delay: float, concurrency: int, processes: int = 1
) -> Outcome:
    """``kill -9`` a worker (all of its processes) with a batch in flight; a second worker
    recovers its leases."""
    await d.api()
    started = time.monotonic()
    await d.submit(urls_for(d.target, _keys("kill", jobs), delay))
    first = await d.started_worker(
        "worker-a", worker_concurrency=concurrency, worker_processes=processes
    )
    # Jobs are fetched in waves (a batch of slots starts together): the kill waits for a
    # moment when one is in flight, not only for the count, which a wave's commit just raised.
    await d.wait_until(
        lambda c: c["COMPLETED"] >= jobs // 3 and c["PROCESSING"] > 0,
        within=60,
        what="a third done, a batch in flight",
    )
    first.kill()
    in_flight = (await d.counts())["PROCESSING"]
    assert in_flight > 0, "the kill should land in the middle of a batch"
    await d.started_worker("worker-b", worker_concurrency=concurrency)
    await d.wait_final(jobs, within=60)
    outcome = await d.outcome("kill -9 worker mid-batch", started=started, total=jobs)
    outcome.notes.append(f"{in_flight} jobs PROCESSING at the kill")
    # Only jobs the dead worker held may run twice, and each such re-run counted an attempt.
    assert outcome.repeated <= in_flight, (outcome, in_flight)
    return outcome


def worker_processes_of(worker: ManagedProcess) -> list[int]:
    """The pids of a ``taskcrawler worker``'s worker processes (its children)."""
    path = Path(f"/proc/{worker.pid}/task/{worker.pid}/children")
    children = [int(pid) for pid in path.read_text().split()] if path.exists() else []
    return [pid for pid in children if b"embedded_worker" in _cmdline(pid)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


async def _until(check: Callable[[], bool], *, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not {what} after {within} s")
        await asyncio.sleep(0.1)


async def kill9_one_worker_process(
    d: Deployment, *, jobs: int, delay: float, concurrency: int
) -> Outcome:
    """One ``taskcrawler worker`` of two processes; ``kill -9`` one of them mid-batch. The
    command starts another in its place, and the leases of the dead one's jobs are recovered."""
    await d.api()
    worker = await d.started_worker("worker", worker_concurrency=concurrency, worker_processes=2)
    await _until(lambda: len(worker_processes_of(worker)) == 2, within=30, what="two processes")
    started = time.monotonic()
    await d.submit(urls_for(d.target, _keys("one", jobs), delay))
    await d.wait_until(lambda c: c["COMPLETED"] >= jobs // 3, within=60, what="a third done")
    victim, survivor = worker_processes_of(worker)
    os.kill(victim, signal.SIGKILL)
    await _until(
        lambda: len(set(worker_processes_of(worker)) - {victim, survivor}) == 1,
        within=30,
        what="a process started in place of the killed one",
    )
    await d.wait_final(jobs, within=60)
    assert worker.running
    outcome = await d.outcome("kill -9 one worker process", started=started, total=jobs)
    outcome.notes.append(f"process {victim} killed, replaced")
    return outcome


async def worker_parent_killed(
    d: Deployment, *, jobs: int, delay: float, concurrency: int
) -> Outcome:
    """``kill -9`` the ``taskcrawler worker`` process alone (not its group): its worker
    processes see the pipe from it end, stop gracefully, finishing what they hold, and
    leave nothing running; a new worker does the rest."""
    await d.api()
    worker = await d.started_worker("worker", worker_concurrency=concurrency, worker_processes=2)
    await _until(lambda: len(worker_processes_of(worker)) == 2, within=30, what="two processes")
    children = worker_processes_of(worker)
    started = time.monotonic()
    await d.submit(urls_for(d.target, _keys("orphan", jobs), delay))
    await d.wait_until(lambda c: c["COMPLETED"] >= jobs // 3, within=60, what="a third done")
    os.kill(worker.pid, signal.SIGKILL)
    grace = float(d.settings["shutdown_grace_seconds"])
    await _until(
        lambda: not any(_cmdline(pid) for pid in children),
        within=grace + 15,
        what="the orphaned worker processes gone",
    )
    await d.started_worker("worker-b", worker_concurrency=concurrency)
    await d.wait_final(jobs, within=60)
    return await d.outcome("kill -9 the worker command alone", started=started, total=jobs)


async def redis_flush_and_restart(
    d: Deployment, redis: RedisProcess, *, jobs: int, delay: float, concurrency: int
) -> Outcome:
    """FLUSHALL mid-run, then a full restart of Redis (no persistence): the queue is emptied
    twice; the sweepers re-publish from the database."""
    await d.api()
    await d.started_worker("worker", worker_concurrency=concurrency)
    started = time.monotonic()
    await d.submit(urls_for(d.target, _keys("flush", jobs), delay))
    await d.wait_until(lambda c: c["COMPLETED"] >= jobs // 4, within=60, what="a quarter done")
    client = aioredis.Redis.from_url(redis.url)
    try:
        depth_before = await client.llen(f"{d.redis_prefix}:queue")
        await client.flushall()
    finally:
        await client.aclose()
    await d.wait_until(lambda c: c["COMPLETED"] >= jobs // 2, within=60, what="half done")
    await redis.restart_async()
    await d.wait_final(jobs, within=60)
    outcome = await d.outcome("Redis FLUSHALL + restart", started=started, total=jobs)
    outcome.notes.append(f"{depth_before} queued ids flushed")
    return outcome


async def redis_down_accepts(d: Deployment, redis: RedisProcess, *, jobs: int) -> Outcome:
    """Redis stopped: /readyz names the queue, the API still answers 201 and the jobs run once
    Redis is back."""
    await d.api()
    await d.started_worker("worker")
    started = time.monotonic()
    await redis.stop_async()
    status, body = await d.request("GET", "/readyz")
    assert status == 503, (status, body)
    assert body is not None and body["checks"]["queue"].startswith("unavailable"), body
    assert body["checks"]["database"] == "ok", body
    for url in urls_for(d.target, _keys("down", jobs), 0):
        status, body = await d.request("POST", "/api/v1/jobs", json={"url": url})
        assert status == 201, (status, body)
    await asyncio.sleep(0.5)
    assert (await d.counts())["PENDING"] == jobs, "nothing can run while the queue is down"
    await redis.start_async()
    await d.wait_final(jobs, within=30)
    status, body = await d.request("GET", "/readyz")
    assert status == 200, (status, body)
    return await d.outcome("Redis down while submitting", started=started, total=jobs)


async def postgres_outage(
    d: Deployment,
    postgres: PostgresProcess,
    *,
    jobs: int,
    delay: float,
    concurrency: int,
    outage: float,
    recover_within: float = 60,
) -> Outcome:
    """PostgreSQL stopped for ``outage`` seconds mid-run: the API answers 503 JSON and writes
    nothing, workers back off and carry on, every job completes."""
    await d.api()
    worker = await d.started_worker("worker", worker_concurrency=concurrency)
    started = time.monotonic()
    await d.submit(urls_for(d.target, _keys("pg", jobs), delay))
    await d.wait_until(lambda c: c["COMPLETED"] >= jobs // 4, within=60, what="a quarter done")
    await postgres.stop_async()
    down_since = time.monotonic()
    refused = 0
    readyz: dict[str, Any] | None = None
    while time.monotonic() - down_since < outage:
        url = d.target.job_url(f"refused-{refused}")
        status, body = await d.request("POST", "/api/v1/jobs", json={"url": url})
        assert status == 503, (status, body)
        assert body is not None and body["dependency"] == "database", body
        refused += 1
        status, readyz = await d.request("GET", "/readyz")
        assert status == 503, (status, readyz)
        await asyncio.sleep(0.2)
    assert readyz is not None and readyz["checks"]["database"].startswith("unavailable"), readyz
    await postgres.start_async()
    await d.wait_final(jobs, within=recover_within)
    assert worker.running, "the worker must ride out the outage\n" + worker.output()[-3000:]
    outcome = await d.outcome(f"PostgreSQL down {outage:g} s", started=started)
    # Nothing half-written: the jobs refused with 503 do not exist.
    assert outcome.jobs == jobs, f"{outcome.jobs - jobs} refused jobs were stored anyway"
    outcome.notes.append(f"{refused} submissions refused with 503 during the outage")
    return outcome


async def postgres_down_at_worker_start(
    d: Deployment, postgres: PostgresProcess, *, jobs: int, outage: float, recover_within: float
) -> Outcome:
    """A worker (re)started while PostgreSQL is down takes ids from the queue it cannot claim;
    they must go back to the queue, not wait for the sweeper's redispatch delay."""
    await d.api()
    started = time.monotonic()
    await d.submit(urls_for(d.target, _keys("pgstart", jobs), 0))
    await postgres.stop_async()
    worker = await d.started_worker("worker")
    await asyncio.sleep(outage)
    await postgres.start_async()
    back = time.monotonic()
    await d.wait_final(jobs, within=recover_within)
    assert worker.running, worker.output()[-3000:]
    outcome = await d.outcome("worker started with PostgreSQL down", started=started, total=jobs)
    outcome.notes.append(f"all final {time.monotonic() - back:.1f} s after PostgreSQL was back")
    return outcome


async def sigterm_rolling(d: Deployment, *, jobs: int, delay: float, concurrency: int) -> Outcome:
    """Rolling restart: a new worker starts, the old one gets SIGTERM mid-run and finishes its
    in-flight jobs within the grace period. Nothing is lost, nothing runs twice."""
    await d.api()
    started = time.monotonic()
    await d.submit(urls_for(d.target, _keys("roll", jobs), delay))
    old = await d.started_worker("worker-old", worker_concurrency=concurrency)
    await d.wait_until(lambda c: c["COMPLETED"] >= jobs // 4, within=60, what="a quarter done")
    await d.started_worker("worker-new", worker_concurrency=concurrency)
    old.terminate()
    code = await old.wait(within=float(d.settings["shutdown_grace_seconds"]) + 5)
    assert code == 0, old.output()[-3000:]
    await d.wait_final(jobs, within=60)
    return await d.outcome("SIGTERM, rolling restart", started=started, total=jobs)


async def sigterm_hand_back(d: Deployment, *, jobs: int, delay: float, grace: float) -> Outcome:
    """SIGTERM with every slot busy on fetches longer than the grace period: the worker leaves
    within the grace period and hands the leases back (PENDING, no attempt counted); the next
    worker runs those jobs. Their only repeat is the fetch the grace period cut short."""
    await d.api()
    started = time.monotonic()
    await d.submit(urls_for(d.target, _keys("handback", jobs), delay))
    old = await d.started_worker(
        "worker-old", worker_concurrency=jobs, shutdown_grace_seconds=grace
    )
    await d.wait_until(lambda c: c["PROCESSING"] == jobs, within=30, what="all in flight")
    signalled = time.monotonic()
    old.terminate()
    code = await old.wait(within=grace + 10)
    took = time.monotonic() - signalled
    assert code == 0, old.output()[-3000:]
    # Within the grace period plus shutdown work (seconds on a loaded machine); not held until
    # a fetch happens to finish. The jobs handed back below are the proof that none finished.
    assert took < grace + 4.0 < delay, f"SIGTERM took {took:.1f} s with a {grace} s grace period"
    handed_back = (await d.counts())["PENDING"]
    assert handed_back == jobs, await d.counts()
    await d.started_worker("worker-new", worker_concurrency=jobs)
    await d.wait_final(jobs, within=30)
    outcome = await d.outcome("SIGTERM, fetches outlast grace", started=started, total=jobs)
    rows = await d.jobs()
    assert all(row["retry_count"] == 0 for row in rows), "a hand-back is not an attempt"
    assert all(d.target.hits_for(str(row["url"])) == 2 for row in rows), d.target.hits
    # Each cut-short fetch is repeated once, by design: the page was never stored.
    outcome.explained = outcome.repeated
    outcome.notes.append(
        f"worker left {took:.1f} s after SIGTERM (grace {grace:g} s), {handed_back} handed back"
    )
    return outcome


async def duplicate_delivery(d: Deployment, *, jobs: int, copies: int, workers: int) -> Outcome:
    """Every id is in the queue ``copies`` times and several workers race for them: each job
    is claimed once, fetched once, and written once."""
    await d.api()
    started = time.monotonic()
    ids = await d.submit(urls_for(d.target, _keys("dup", jobs), 0.05))
    assert d.redis_url is not None
    client = aioredis.Redis.from_url(d.redis_url)
    try:
        key = f"{d.redis_prefix}:queue"
        for _ in range(copies - 1):
            await client.rpush(key, *ids)
        depth = await client.llen(key)
    finally:
        await client.aclose()
    assert depth >= jobs * copies
    for n in range(workers):
        d.worker(f"worker-{n}")
    await d.wait_final(jobs, within=60)
    outcome = await d.outcome(f"duplicate delivery x{copies}", started=started, total=jobs)
    outcome.notes.append(f"{depth} messages for {jobs} jobs, {workers} workers")
    return outcome


async def embedded_restart(d: Deployment, *, jobs: int, delay: float, concurrency: int) -> Outcome:
    """``taskcrawler serve`` (SQLite, in-process queue) killed with jobs pending and in flight,
    restarted on the same file: the in-memory queue is gone, the database is not."""
    server = await d.serve(worker_concurrency=concurrency)
    started = time.monotonic()
    await d.submit(urls_for(d.target, _keys("embedded", jobs), delay))
    # Killed with a quarter done and pages in flight: on a busy machine the worker can sit
    # between two claims, with nothing PROCESSING, when the quarter is reached.
    await d.wait_until(
        lambda c: c["COMPLETED"] >= jobs // 4 and c["PROCESSING"] > 0,
        within=60,
        what="a quarter done and pages in flight",
    )
    server.kill()
    counts = await d.counts()
    assert counts["PENDING"] > 0 and counts["PROCESSING"] > 0, counts
    await d.serve(worker_concurrency=concurrency)
    await d.wait_final(jobs, within=60)
    outcome = await d.outcome("kill -9 embedded serve", started=started, total=jobs)
    outcome.notes.append(
        f"{counts['PENDING']} PENDING and {counts['PROCESSING']} PROCESSING at the kill"
    )
    assert outcome.repeated <= counts["PROCESSING"], (outcome, counts)
    return outcome
