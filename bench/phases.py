"""The phases of ``python -m bench.run``: the limits, and each mode's end-to-end runs and loads."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.deployment import (
    Deployment,
    Sampler,
    bench_command,
    deployment,
    loadgen,
    run_json,
    wait_final,
)
from bench.measure import (
    cpu_speed_ms,
    descendants,
    loop_cpu_seconds,
    machine_ticks,
    tree_cpu_seconds,
)
from tests.support.processes import ProcessManager
from tests.support.services import asyncpg_url, free_port, temporary_database


@dataclass
class ModeResult:
    mode: str
    runs: list[dict[str, Any]] = field(default_factory=list)  # --size (the median), then --scale
    repeats: list[dict[str, Any]] = field(default_factory=list)  # every run of --size
    closed: dict[str, Any] = field(default_factory=dict)
    open: dict[str, Any] = field(default_factory=dict)
    open_alone: dict[str, Any] = field(default_factory=dict)  # the worker paused
    two_workers: dict[str, Any] = field(default_factory=dict)  # production: a second worker
    rss: dict[str, float] = field(default_factory=dict)


async def end_to_end(
    dep: Deployment,
    target: str,
    *,
    start: int,
    size: int,
    final_after: int,
    measured: dict[str, int],
    sampler: Sampler,
    within: float,
) -> dict[str, Any]:
    """``size`` new pages (from page ``start``) through the batch endpoint, timed until
    ``final_after`` jobs are final; CPU is read for the ``measured`` processes."""
    speed = cpu_speed_ms()  # the machine drifts within a run: how fast, right now
    cpu0 = {name: tree_cpu_seconds(pid) for name, pid in measured.items()}
    loop0, machine0 = loop_cpu_seconds(dep.loop_pid), machine_ticks()
    launched = time.monotonic()
    submitted = await loadgen(
        dep.helpers, "batch", dep.api, target, start=start, count=size, max_seconds=within
    )
    finished, counts = await wait_final(dep.counter, final_after, sampler, within=within)
    cpu1 = {name: tree_cpu_seconds(pid) for name, pid in measured.items()}
    loop1, machine1 = loop_cpu_seconds(dep.loop_pid), machine_ticks()
    # Timed from the first request: the load generator's own start-up (0.3 s of a 6 s run
    # here) is not the service's time. CPU and the busy figures still cover it.
    elapsed = finished - submitted["started_at"]
    cpu = {name: cpu1[name] - cpu0[name] for name in measured}
    return {
        "size": size,
        "seconds": elapsed,
        "jobs_per_s": size / elapsed,
        "submit_rows_per_s": size / submitted["seconds"],
        "client_start_s": submitted["started_at"] - launched,
        "created": submitted["created"],
        "counts": counts,
        "failed_by_code": await dep.counter.failures(),
        "cpu_s": cpu,
        "cpu_ms_per_job": sum(cpu.values()) / size * 1000,
        # which resource ran out: the (first) worker's (first) event loop, or the machine
        "loop_busy": (loop1 - loop0) / elapsed,
        "machine_busy": (machine1[0] - machine0[0]) / max(1, machine1[1] - machine0[1]),
        "cpu_speed_ms": speed,
    }


def signal_tree(pid: int, sig: signal.Signals) -> None:
    """``sig`` to a process and every descendant (a worker and its extraction processes)."""
    for member in [pid, *descendants(pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, sig)


async def pause_worker(dep: Deployment) -> None:
    """Stop the worker's processes (SIGCONT to :func:`signal_tree` lets them go). On SQLite
    never while one holds the writer lock: the API's inserts would wait for it until the
    worker is let go, after the inserts, that is never (a run of ``bench.writer_hold`` hung so,
    the worker stopped in its first sweep's write)."""
    lock = writer_lock_of(dep)
    for _ in range(1000):
        signal_tree(dep.worker_pid, signal.SIGSTOP)
        if lock is None:
            return
        await stopped(dep.worker_pid)
        if lock_free(lock):
            return
        signal_tree(dep.worker_pid, signal.SIGCONT)
        await asyncio.sleep(0.005)
    raise RuntimeError("the worker held SQLite's writer lock at every one of 1,000 stops")


def writer_lock_of(dep: Deployment) -> str | None:
    """The file of SQLite's writer lock (``taskcrawler/storage/sqlite/locking.py``); None on
    PostgreSQL."""
    from sqlalchemy.engine import make_url

    from taskcrawler.storage.sqlite.locking import writer_lock

    url = make_url(dep.env["TASKCRAWLER_DATABASE_URL"])
    if not url.drivername.startswith("sqlite"):
        return None
    lock = writer_lock(url.database)
    return None if lock is None else lock.path


async def stopped(pid: int) -> None:
    """Until every thread of ``pid`` and of its descendants is stopped: a signal is delivered
    after ``kill`` returns."""
    for _ in range(1000):
        if all(state in "TtXZ" for state in thread_states(pid)):
            return
        await asyncio.sleep(0.001)


def thread_states(pid: int) -> list[str]:
    """The scheduler's state letter of each thread of ``pid`` and of its descendants."""
    states = []
    for member in [pid, *descendants(pid)]:
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{member}/task").iterdir():
                with contextlib.suppress(OSError):
                    states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
    return states


def lock_free(path: str) -> bool:
    """Whether nobody holds the exclusive flock of ``path`` (taken and let go at once)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


async def backlog(
    dep: Deployment,
    target: str,
    *,
    start: int,
    size: int,
    within: float,
    profile: Path | None = None,
    formats: str | None = None,
) -> dict[str, Any]:
    """``size`` new pages queued while the worker is stopped, then the worker let go and timed
    until every job is final: the worker's own throughput, the API idle. ``profile``: a py-spy
    recording of the worker (and its children) while it drains, in py-spy's raw format."""
    await pause_worker(dep)
    try:
        options = {"formats": formats} if formats else {}
        await loadgen(
            dep.helpers, "batch", dep.api, target, start=start, count=size, max_seconds=within,
            **options,
        )  # fmt: skip
    finally:
        signal_tree(dep.worker_pid, signal.SIGCONT)
    speed = cpu_speed_ms()
    cpu0 = {name: tree_cpu_seconds(pid) for name, pid in dep.pids.items()}
    machine0 = machine_ticks()
    spy = None
    if profile is not None:
        spy = dep.helpers.start_command(
            [str(Path(sys.executable).with_name("py-spy")), "record", "--subprocesses",
             "--pid", str(dep.worker_pid), "--rate", "200", "--nonblocking",
             "--format", "raw", "--output", str(profile)],
            name="py-spy",
        )  # fmt: skip
    began = time.monotonic()
    try:
        finished, counts = await wait_final(
            dep.counter, size, Sampler(dep.worker_pid), within=within
        )
    finally:
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            await spy.wait(within=60)
    cpu1 = {name: tree_cpu_seconds(pid) for name, pid in dep.pids.items()}
    machine1 = machine_ticks()
    elapsed = finished - began
    cpu = {name: cpu1[name] - cpu0[name] for name in cpu0}
    return {
        "size": size,
        "seconds": elapsed,
        "jobs_per_s": size / elapsed,
        "counts": counts,
        "failed_by_code": await dep.counter.failures(),
        "cpu_s": cpu,
        "cpu_ms_per_job": sum(cpu.values()) / size * 1000,
        "machine_busy": (machine1[0] - machine0[0]) / max(1, machine1[1] - machine0[1]),
        "load_average": os.getloadavg()[0],
        "cpu_speed_ms": speed,
    }


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median jobs/s (the lower middle of an even number): one sample of this
    machine can land in a slow minute, the middle of a few rarely does."""
    ordered = sorted(runs, key=lambda run: run["jobs_per_s"])
    return ordered[(len(ordered) - 1) // 2]


class ModeRun:
    """The phases of one mode on one deployment, each on pages no earlier phase used."""

    def __init__(self, cfg: argparse.Namespace, dep: Deployment, target: str) -> None:
        self.cfg = cfg
        self.dep = dep
        self.target = target
        self.sampler = Sampler(dep.worker_pid)
        self.next_page = cfg.page_base
        self.total_final = 0  # jobs the database should hold as final once the phase is done

    async def measure(self, size: int, measured: dict[str, int]) -> dict[str, Any]:
        self.total_final += size
        run = await end_to_end(
            self.dep,
            self.target,
            start=self.next_page,
            size=size,
            final_after=self.total_final,
            measured=measured,
            sampler=self.sampler,
            within=self.cfg.timeout,
        )
        self.next_page += size
        return run

    async def reported(self, size: int) -> dict[str, Any]:
        run = await self.measure(size, self.dep.pids)
        self.say(f"{size} jobs end to end: {run['jobs_per_s']:.0f} jobs/s")
        return run

    async def closed_load(self) -> dict[str, Any]:
        """Single POSTs, 64 concurrent clients, while the workers drain what they create."""
        load = await loadgen(
            self.dep.helpers,
            "closed",
            self.dep.api,
            self.target,
            start=self.next_page,
            count=self.cfg.posts,
            concurrency=64,
            max_seconds=self.cfg.post_seconds,
        )
        self.next_page += self.cfg.posts
        self.total_final += load["requests"] - load["errors"]
        self.say(f"POST/s at 64 clients: {load['per_second']:.0f}")
        return load

    async def steady_load(self, label: str) -> dict[str, Any]:
        """A steady offered load on new pages; the caller waits for the jobs it created."""
        load = await loadgen(
            self.dep.helpers,
            "open",
            self.dep.api,
            self.target,
            start=self.next_page,
            rate=self.cfg.rate,
            duration=self.cfg.open_seconds,
            max_seconds=30,
        )
        self.next_page += load["requests"]
        self.total_final += load["requests"] - load["errors"]
        self.say(
            f"at {self.cfg.rate:.0f} POST/s{label}: p50 {load['p50_ms']:.1f} ms, "
            f"p99 {load['p99_ms']:.1f} ms"
        )
        return load

    async def drained(self) -> None:
        await wait_final(self.dep.counter, self.total_final, self.sampler, within=self.cfg.timeout)

    def say(self, text: str) -> None:
        print(f"  [{self.dep.mode}] {text}", flush=True)


async def run_mode(
    mode: str, cfg: argparse.Namespace, target: str, workdir: Path, pg_admin: str, redis_url: str
) -> ModeResult:
    result = ModeResult(mode)
    async with deployment(mode, workdir, pg_admin=pg_admin, redis_url=redis_url) as dep:
        phases = ModeRun(cfg, dep, target)
        result.repeats = [await phases.reported(cfg.size) for _ in range(cfg.repeat)]
        result.runs.append(median_run(result.repeats))
        if cfg.scale:
            result.runs.append(await phases.reported(cfg.size * 10))

        result.closed = await phases.closed_load()
        await phases.drained()
        result.open = await phases.steady_load("")
        await phases.drained()
        if mode == "production":
            # The same load with the worker paused: the API's own latency, apart from the CPU
            # it shares with a draining worker. The worker drains the backlog once resumed.
            await pause_worker(dep)
            try:
                result.open_alone = await phases.steady_load(", worker paused")
            finally:
                signal_tree(dep.worker_pid, signal.SIGCONT)
            await phases.drained()

            # Not a target's setup but the machine's ceiling: the same size through two workers.
            second = await dep.add_worker("production-worker-2")
            result.two_workers = await phases.measure(cfg.size, dep.pids | {"worker2": second.pid})
            phases.say(
                f"two workers, {cfg.size} jobs end to end: "
                f"{result.two_workers['jobs_per_s']:.0f} jobs/s"
            )
        phases.sampler.sample()
        values = [v for _, v in phases.sampler.samples]
        result.rss = {"start": values[0], "peak": max(values), "end": values[-1]}
    return result


async def run_limits(
    cfg: argparse.Namespace, target: str, workdir: Path, pg_admin: str
) -> dict[str, Any]:
    """What TaskCrawler is up against, measured on the same pages, in the same run."""
    limits: dict[str, Any] = {"cpu_speed_ms": cpu_speed_ms()}
    async with ProcessManager(workdir / "limits") as processes:
        fetch = ["fetch", "--target", target, "--count", str(cfg.size)]
        # pages far from the ones the modes use, so no cache anywhere could help
        fetch += ["--start", str(cfg.page_base + 5_000_000)]
        limits["fetch"] = await run_json(processes, "limits", fetch, within=cfg.timeout)
        limits["fetch_extract"] = await run_json(
            processes, "limits", [*fetch, "--extract"], within=cfg.timeout
        )
        print(f"  bare aiohttp fetch loop: {limits['fetch']['per_second']:.0f} pages/s", flush=True)

        limits["bare_api"] = await bare_api(cfg, target, workdir)
        print(f"  bare FastAPI endpoint: {limits['bare_api']['per_second']:.0f} POST/s", flush=True)

        async with temporary_database(pg_admin, prefix="tc_bench_") as url:
            inserts = [
                "inserts",
                "--pg-url", asyncpg_url(url),
                "--sqlite-path", str(workdir / "inserts.db"),
                "--rows", str(cfg.size),
                "--seconds", str(cfg.insert_seconds),
            ]  # fmt: skip
            limits["inserts"] = await run_json(processes, "limits", inserts, within=cfg.timeout)
        figures = {k: round(v) for k, v in limits["inserts"].items()}
        print(f"  bare inserts: {json.dumps(figures)}", flush=True)

        limits["scrapy"] = await scrapy(cfg, target, processes)
    return limits


async def bare_api(cfg: argparse.Namespace, target: str, workdir: Path) -> dict[str, Any]:
    """A bare FastAPI endpoint (no database) at 64 clients: the ceiling of the API's POST/s."""
    port = free_port()
    async with ProcessManager(workdir / "bare-api") as processes:
        server = processes.start_command(
            bench_command("limits", "bareapi", "--port", str(port)), name="bare-api"
        )
        await server.wait_for_port(port, within=30)
        load = await loadgen(
            processes,
            "closed",
            f"http://127.0.0.1:{port}",
            target,
            count=cfg.posts,
            concurrency=64,
            max_seconds=cfg.post_seconds,
        )
    if load["errors"]:
        raise RuntimeError(f"the bare FastAPI endpoint answered errors: {load}")
    return load


async def scrapy(
    cfg: argparse.Namespace, target: str, processes: ProcessManager
) -> dict[str, Any] | None:
    """Scrapy fetching and extracting the same pages, if it is installed (``.[bench]``)."""
    if cfg.no_scrapy:
        return None
    try:
        import scrapy as _  # noqa: F401
    except ImportError:
        print("  scrapy not installed (pip install -e '.[bench]'): skipped")
        return None
    args = ["--target", target, "--count", str(cfg.size)]
    args += ["--start", str(cfg.page_base + 6_000_000)]
    result = await run_json(processes, "scrapy_run", args, within=cfg.timeout * 3)
    print(f"  scrapy: {result['per_second']:.0f} pages/s", flush=True)
    return result
