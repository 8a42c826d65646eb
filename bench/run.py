"""TaskCrawler end-to-end benchmark: ``python -m bench.run [--size N] [--quick] [--scale]``.

Starts its own target site (``bench.target``), then, each as real processes:

1. the limits: a bare aiohttp fetch loop on the same pages (and with our extraction), a bare
   FastAPI endpoint, bare inserts (asyncpg / sqlite3), Scrapy fetching and extracting the pages;
2. embedded mode: ``taskcrawler serve`` on a temporary SQLite file;
3. production mode: ``taskcrawler api`` + one ``taskcrawler worker`` on PostgreSQL + Redis
   (a database ``tc_bench_<random>`` and a Redis prefix of its own, both removed afterwards).

In each mode: ``--size`` distinct pages through ``POST /api/v1/jobs/batch`` (1,000 a call), timed
from the first request until every job is final (jobs/s end to end; ``--repeat`` runs, 3 by
default, on new pages each time, and the median counts); single POSTs from 64 concurrent
clients (POST/s); a steady offered load of 500 POST/s (p50/p99), and in production the same
load again with the worker paused (the API's own p99); CPU seconds per job from /proc; worker
RSS sampled over the run. ``--scale`` also runs 10x the size, to check the cost stays linear.
Prints a table and writes ``bench/RESULTS.md`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
FINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")

TARGETS = {
    "e2e_pg": 1000.0,
    "e2e_sqlite": 500.0,
    "post_per_s": 1500.0,
    "p99_ms": 25.0,
}


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_port(
    port: int, timeout: float = 30.0, proc: subprocess.Popen[bytes] | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port} after {timeout}s")


class Procs:
    """Child processes, each logging to a file; all stopped (SIGTERM, then SIGKILL) at the end."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self.started: list[subprocess.Popen[bytes]] = []

    def start(
        self, name: str, args: Sequence[str], env: dict[str, str], cwd: Path = REPO
    ) -> subprocess.Popen[bytes]:
        """``cwd`` is also where ``python -m taskcrawler`` is imported from (it comes first on
        ``sys.path``), so another checkout runs its own code."""
        log = open(self.logdir / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            list(args), env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, close_fds=True
        )
        log.close()
        self.started.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def stop_all(self) -> None:
        for proc in reversed(self.started):
            self.stop(proc)


def run_json(args: Sequence[str], env: dict[str, str], timeout: float) -> dict[str, Any]:
    """Run a helper process to the end and parse the JSON line it prints last."""
    done = subprocess.run(
        list(args), env=env, cwd=REPO, capture_output=True, timeout=timeout, check=False
    )
    lines = [line for line in done.stdout.decode().splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"{' '.join(args[:4])} failed ({done.returncode}): {done.stderr.decode()[-2000:]}"
        )
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def base_env(repo: Path = REPO) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TASKCRAWLER_") and k not in {"POSTGRES_ASYNC_URL", "REDIS_URL"}
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _stat_fields(path: str) -> list[str]:
    """The fields of a /proc ``stat`` file after the command name (which may hold spaces)."""
    return Path(path).read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """user + system CPU of a process (and its reaped children) from /proc."""
    utime, stime, cutime, cstime = (int(x) for x in _stat_fields(f"/proc/{pid}/stat")[11:15])
    return (utime + stime + cutime + cstime) / CLK_TCK


def loop_cpu_seconds(pid: int) -> float:
    """CPU of a process's main thread alone: its event loop, without the helper threads."""
    utime, stime = (int(x) for x in _stat_fields(f"/proc/{pid}/task/{pid}/stat")[11:13])
    return (utime + stime) / CLK_TCK


def machine_ticks() -> tuple[int, int]:
    """(busy, all) clock ticks of every core since boot, from /proc/stat."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return sum(ticks) - idle, sum(ticks)


def rss_mb(pid: int) -> float:
    pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return pages * PAGE_SIZE / 2**20


# --------------------------------------------------------------------------- job counting


class Counter:
    """Counts final jobs straight from the database (the source of truth).

    On PostgreSQL through one connection kept open: a connection per poll (20 a second) would
    fork a server backend each time, CPU taken from what is measured.
    """

    def __init__(self, mode: str, *, sqlite_path: Path | None = None, pg_url: str | None = None):
        self.mode = mode
        self.sqlite_path = sqlite_path
        self.pg_url = pg_url
        self._pg: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def failures(self) -> dict[str, int]:
        """FAILED jobs by error code: a failed job is not a fast job."""
        return self.counts(
            "SELECT coalesce(error_code, '?') || ' (e.g. ' || substr(max(error_log), 1, 160)"
            " || ')', count(*) FROM jobs WHERE status = 'FAILED' GROUP BY error_code"
        )

    def counts(
        self, query: str = "SELECT status, count(*) FROM jobs GROUP BY status"
    ) -> dict[str, int]:
        if self.mode == "embedded":
            assert self.sqlite_path is not None
            conn = sqlite3.connect(f"file:{self.sqlite_path}?mode=ro", uri=True, timeout=10)
            try:
                return dict(conn.execute(query).fetchall())
            finally:
                conn.close()
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(self._pg_counts(query))

    async def _pg_counts(self, query: str) -> dict[str, int]:
        import asyncpg

        if self._pg is None:
            self._pg = await asyncpg.connect(self.pg_url)
        return {r[0]: r[1] for r in await self._pg.fetch(query)}

    def close(self) -> None:
        if self._loop is None:
            return
        if self._pg is not None:
            self._loop.run_until_complete(self._pg.close())
            self._pg = None
        self._loop.close()
        self._loop = None

    def final(self) -> tuple[int, dict[str, int]]:
        counts = self.counts()
        return sum(counts.get(s, 0) for s in FINAL_STATES), counts


@dataclass
class Sampler:
    """Worker RSS over the run, sampled whenever the driver polls."""

    pid: int
    samples: list[tuple[float, float]] = field(default_factory=list)

    def sample(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.samples.append((time.monotonic(), rss_mb(self.pid)))


def wait_final(
    counter: Counter, expected: int, sampler: Sampler, timeout: float
) -> tuple[float, dict[str, int]]:
    """Poll until ``expected`` jobs are final; return when that happened and the counts."""
    deadline = time.monotonic() + timeout
    while True:
        sampler.sample()
        done, counts = counter.final()
        if done >= expected:
            return time.monotonic(), counts
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {done}/{expected} jobs final after {timeout}s: {counts}")
        time.sleep(0.05)


# --------------------------------------------------------------------------- one mode


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


def loadgen(mode: str, api: str, target: str, env: dict[str, str], **opts: Any) -> dict[str, Any]:
    args = [PY, "-m", "bench.loadgen", mode, "--api", api, "--target", target]
    for key, value in opts.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return run_json(args, env, timeout=float(opts.get("max_seconds", 120)) + 60)


@dataclass
class Deployment:
    """One mode of TaskCrawler running as real processes, on a database of its own."""

    mode: str
    api: str
    env: dict[str, str]
    pids: dict[str, int]
    worker_pid: int  # the process that runs the (first) worker
    counter: Counter
    repo: Path


@contextlib.contextmanager
def deployment(
    mode: str,
    procs: Procs,
    workdir: Path,
    *,
    pg_admin: str,
    redis_url: str,
    repo: Path = REPO,
    settings: dict[str, str] | None = None,
) -> Iterator[Deployment]:
    """Start ``mode`` from the checkout ``repo`` (``TASKCRAWLER_*`` ``settings`` on top of the
    benchmark's); stop its processes and drop its database and Redis keys on the way out."""
    shared = list(procs.started)
    env = base_env(repo) | {
        "TASKCRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
        "TASKCRAWLER_HOST_CONCURRENCY": "1000",
        "TASKCRAWLER_LOG_FORMAT": "json",
        "TASKCRAWLER_LOG_LEVEL": "WARNING",
    }
    port = free_port()
    env["TASKCRAWLER_PORT"] = str(port)
    db_name = None
    prefix = None
    if mode == "embedded":
        db_path = workdir / f"bench_{secrets.token_hex(4)}.db"
        env["TASKCRAWLER_DATABASE_URL"] = f"sqlite+aiosqlite:///{db_path}"
        counter = Counter(mode, sqlite_path=db_path)
    else:
        db_name = f"tc_bench_{secrets.token_hex(4)}"
        pg_url = create_pg_database(pg_admin, db_name)
        prefix = f"tcbench:{secrets.token_hex(4)}"
        env["TASKCRAWLER_DATABASE_URL"] = pg_url.replace("postgresql://", "postgresql+asyncpg://")
        env["TASKCRAWLER_REDIS_URL"] = redis_url
        env["TASKCRAWLER_REDIS_PREFIX"] = prefix
        counter = Counter(mode, pg_url=pg_url)
    env |= settings or {}
    try:
        if mode == "embedded":
            server = procs.start("embedded-serve", [PY, "-m", "taskcrawler", "serve"], env, repo)
            wait_port(port, 60, server)
            pids = {"serve": server.pid}
        else:
            subprocess.run(
                [PY, "-m", "taskcrawler", "migrate"],
                env=env,
                cwd=repo,
                check=True,
                capture_output=True,
                timeout=120,
            )
            server = procs.start("production-api", [PY, "-m", "taskcrawler", "api"], env, repo)
            worker = procs.start(
                "production-worker", [PY, "-m", "taskcrawler", "worker"], env, repo
            )
            wait_port(port, 60, server)
            pids = {"api": server.pid, "worker": worker.pid}
        worker_pid = pids.get("worker", server.pid)
        yield Deployment(mode, f"http://127.0.0.1:{port}", env, pids, worker_pid, counter, repo)
    finally:
        counter.close()  # before the database is dropped
        for proc in list(procs.started):  # this deployment's processes only: the target stays up
            if proc not in shared:
                procs.stop(proc)
                procs.started.remove(proc)
        if db_name is not None:
            drop_pg_database(pg_admin, db_name)
        if prefix is not None:
            delete_redis_prefix(redis_url, prefix)


def end_to_end(
    dep: Deployment,
    target: str,
    *,
    start: int,
    size: int,
    final_after: int,
    measured: dict[str, int],
    sampler: Sampler,
    timeout: float,
) -> dict[str, Any]:
    """``size`` new pages (from page ``start``) through the batch endpoint, timed until
    ``final_after`` jobs are final; CPU is read for the ``measured`` processes."""
    speed = cpu_speed_ms()  # the machine drifts within a run: how fast, right now
    cpu0 = {name: cpu_seconds(pid) for name, pid in measured.items()}
    loop0, machine0 = loop_cpu_seconds(dep.worker_pid), machine_ticks()
    launched = time.monotonic()
    submitted = loadgen(
        "batch", dep.api, target, dep.env, start=start, count=size, max_seconds=timeout
    )
    finished, counts = wait_final(dep.counter, final_after, sampler, timeout)
    cpu1 = {name: cpu_seconds(pid) for name, pid in measured.items()}
    loop1, machine1 = loop_cpu_seconds(dep.worker_pid), machine_ticks()
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
        "failed_by_code": dep.counter.failures(),
        "cpu_s": cpu,
        "cpu_ms_per_job": sum(cpu.values()) / size * 1000,
        # which resource ran out: the (first) worker's event loop, or the machine
        "loop_busy": (loop1 - loop0) / elapsed,
        "machine_busy": (machine1[0] - machine0[0]) / max(1, machine1[1] - machine0[1]),
        "cpu_speed_ms": speed,
    }


def _last_run(result: ModeResult) -> dict[str, Any]:
    """The mode's last end-to-end run (the scale run, if any, comes after the repeats)."""
    return (result.repeats + result.runs[1:])[-1]


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median jobs/s (the lower middle of an even number): one sample of this
    machine can land in a slow minute, the middle of a few rarely does."""
    ordered = sorted(runs, key=lambda run: run["jobs_per_s"])
    return ordered[(len(ordered) - 1) // 2]


def run_mode(
    mode: str,
    cfg: argparse.Namespace,
    target: str,
    procs: Procs,
    workdir: Path,
    pg_admin: str,
) -> ModeResult:
    result = ModeResult(mode)
    with deployment(mode, procs, workdir, pg_admin=pg_admin, redis_url=cfg.redis_url) as dep:
        api, env, counter = dep.api, dep.env, dep.counter
        pids, worker_pid = dep.pids, dep.worker_pid
        sampler = Sampler(worker_pid)
        next_page = cfg.page_base
        total_final = 0

        def measure(size: int, measured: dict[str, int]) -> dict[str, Any]:
            nonlocal next_page, total_final
            total_final += size
            run = end_to_end(
                dep,
                target,
                start=next_page,
                size=size,
                final_after=total_final,
                measured=measured,
                sampler=sampler,
                timeout=cfg.timeout,
            )
            next_page += size
            return run

        def reported(size: int) -> dict[str, Any]:
            run = measure(size, pids)
            print(f"  [{mode}] {size} jobs end to end: {run['jobs_per_s']:.0f} jobs/s", flush=True)
            return run

        result.repeats = [reported(cfg.size) for _ in range(cfg.repeat)]
        result.runs.append(median_run(result.repeats))
        if cfg.scale:
            result.runs.append(reported(cfg.size * 10))

        # single POSTs, 64 concurrent clients, while the workers drain what they create
        result.closed = loadgen(
            "closed",
            api,
            target,
            env,
            start=next_page,
            count=cfg.posts,
            concurrency=64,
            max_seconds=cfg.post_seconds,
        )
        next_page += cfg.posts
        total_final += result.closed["requests"] - result.closed["errors"]
        print(f"  [{mode}] POST/s at 64 clients: {result.closed['per_second']:.0f}", flush=True)
        wait_final(counter, total_final, sampler, cfg.timeout)

        def steady_load(label: str) -> dict[str, Any]:
            """A steady offered load on new pages; the caller waits for the jobs it created."""
            nonlocal next_page, total_final
            load = loadgen(
                "open",
                api,
                target,
                env,
                start=next_page,
                rate=cfg.rate,
                duration=cfg.open_seconds,
                max_seconds=30,
            )
            next_page += load["requests"]
            total_final += load["requests"] - load["errors"]
            print(
                f"  [{mode}] at {cfg.rate:.0f} POST/s{label}: p50 {load['p50_ms']:.1f} ms, "
                f"p99 {load['p99_ms']:.1f} ms",
                flush=True,
            )
            return load

        # a steady offered load
        result.open = steady_load("")
        wait_final(counter, total_final, sampler, cfg.timeout)
        if mode == "production":
            # The same load with the worker paused: the API's own latency, apart from the CPU
            # it shares with a draining worker. The worker drains the backlog once resumed.
            os.kill(worker_pid, signal.SIGSTOP)
            try:
                result.open_alone = steady_load(", worker paused")
            finally:
                os.kill(worker_pid, signal.SIGCONT)
            wait_final(counter, total_final, sampler, cfg.timeout)

            # Not a target's setup but the machine's ceiling: the same size through two workers.
            metrics_port = free_port()
            second = procs.start(
                "production-worker-2",
                [PY, "-m", "taskcrawler", "worker", "--metrics-port", str(metrics_port)],
                env,
            )
            wait_port(metrics_port, 60, second)
            result.two_workers = measure(cfg.size, pids | {"worker2": second.pid})
            print(
                f"  [{mode}] two workers, {cfg.size} jobs end to end: "
                f"{result.two_workers['jobs_per_s']:.0f} jobs/s",
                flush=True,
            )
        sampler.sample()
        values = [v for _, v in sampler.samples]
        result.rss = {"start": values[0], "peak": max(values), "end": values[-1]}
    return result


# --------------------------------------------------------------------------- PostgreSQL / Redis


def _pg_url(admin: str, name: str) -> str:
    base = admin.rsplit("/", 1)[0]
    return f"{base}/{name}"


def create_pg_database(admin: str, name: str) -> str:
    async def go() -> None:
        import asyncpg

        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    asyncio.run(go())
    return _pg_url(admin, name)


def drop_pg_database(admin: str, name: str) -> None:
    async def go() -> None:
        import asyncpg

        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()

    asyncio.run(go())


def delete_redis_prefix(url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def versions(pg_admin: str, redis_url: str) -> dict[str, str]:
    import redis

    async def pg() -> str:
        import asyncpg

        conn = await asyncpg.connect(pg_admin)
        try:
            return str(await conn.fetchval("SHOW server_version"))
        finally:
            await conn.close()

    client = redis.Redis.from_url(redis_url)
    try:
        redis_version = str(client.info("server")["redis_version"])
    finally:
        client.close()
    return {"postgresql": asyncio.run(pg()), "redis": redis_version}


# --------------------------------------------------------------------------- limits


def run_limits(
    cfg: argparse.Namespace, target: str, procs: Procs, workdir: Path, pg_admin: str
) -> dict[str, Any]:
    env = base_env()
    limits: dict[str, Any] = {"cpu_speed_ms": cpu_speed_ms()}
    fetch_args = [PY, "-m", "bench.limits", "fetch", "--target", target, "--count", str(cfg.size)]
    # pages far from the ones the modes use, so no cache anywhere could help
    start = ["--start", str(cfg.page_base + 5_000_000)]
    limits["fetch"] = run_json(fetch_args + start, env, timeout=cfg.timeout)
    limits["fetch_extract"] = run_json(fetch_args + start + ["--extract"], env, timeout=cfg.timeout)
    print(f"  bare aiohttp fetch loop: {limits['fetch']['per_second']:.0f} pages/s", flush=True)

    port = free_port()
    bare = procs.start("bare-api", [PY, "-m", "bench.limits", "bareapi", "--port", str(port)], env)
    try:
        wait_port(port, 30, bare)
        limits["bare_api"] = loadgen(
            "closed",
            f"http://127.0.0.1:{port}",
            target,
            env,
            count=cfg.posts,
            concurrency=64,
            max_seconds=cfg.post_seconds,
        )
    finally:
        procs.stop(bare)
    if limits["bare_api"]["errors"]:
        raise RuntimeError(f"the bare FastAPI endpoint answered errors: {limits['bare_api']}")
    print(f"  bare FastAPI endpoint: {limits['bare_api']['per_second']:.0f} POST/s", flush=True)

    name = f"tc_bench_{secrets.token_hex(4)}"
    url = create_pg_database(pg_admin, name)
    try:
        limits["inserts"] = run_json(
            [
                PY,
                "-m",
                "bench.limits",
                "inserts",
                "--pg-url",
                url,
                "--sqlite-path",
                str(workdir / "inserts.db"),
                "--rows",
                str(cfg.size),
                "--seconds",
                str(1.0 if cfg.quick else 3.0),
            ],
            env,
            timeout=cfg.timeout,
        )
    finally:
        drop_pg_database(pg_admin, name)
    print(f"  bare inserts: {json.dumps({k: round(v) for k, v in limits['inserts'].items()})}")

    if cfg.no_scrapy:
        limits["scrapy"] = None
    else:
        try:
            import scrapy  # noqa: F401
        except ImportError:
            limits["scrapy"] = None
            print("  scrapy not installed (pip install -e '.[bench]'): skipped")
        else:
            limits["scrapy"] = run_json(
                [
                    PY,
                    "-m",
                    "bench.scrapy_run",
                    "--target",
                    target,
                    "--count",
                    str(cfg.size),
                    "--start",
                    str(cfg.page_base + 6_000_000),
                ],
                env,
                timeout=cfg.timeout * 3,
            )
            print(f"  scrapy: {limits['scrapy']['per_second']:.0f} pages/s", flush=True)
    return limits


# --------------------------------------------------------------------------- report


def machine(pg_admin: str, redis_url: str) -> dict[str, str]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = "unknown"
    with contextlib.suppress(OSError):
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 2**20:.1f} GiB"
    info = {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "cpu_speed": f"{cpu_speed_ms():.0f} ms for a fixed pure-Python loop (lower is faster)",
    }
    with contextlib.suppress(Exception):
        info |= versions(pg_admin, redis_url)
    return info


def cpu_speed_ms() -> float:
    """The best of three timings of one fixed CPU-bound loop on one core: runs on different
    days (or machines that call themselves the same) are comparable only alongside this."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for i in range(3_000_000):
            total += i * i
        best = min(best, time.perf_counter() - started)
    return best * 1000


def _fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def _verdict(value: float | None, target: float, *, lower_is_better: bool = False) -> str:
    if value is None:
        return "—"
    ok = value < target if lower_is_better else value >= target
    return "met" if ok else "**missed**"


def report(
    cfg: argparse.Namespace,
    info: dict[str, str],
    limits: dict[str, Any] | None,
    modes: dict[str, ModeResult],
    command: str,
) -> str:
    lines: list[str] = []
    add = lines.append
    add("# Benchmark results\n")
    add(f"Command: `{command}`  ")
    add(f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}\n")
    add("## Machine\n")
    add("| | |\n| --- | --- |")
    for key, value in info.items():
        add(f"| {key} | {value} |")
    add("")
    add("Everything (target site, API, worker, PostgreSQL, Redis, load generator) shares these")
    add("cores. `load_before` is the load average when the run began: other work on the machine")
    add("skews every figure, and `cpu_speed` says how fast one core was when it began.\n")

    add("## Figures against the targets (issue 8)\n")
    add("| figure | embedded (SQLite) | production (PostgreSQL + Redis) | target |")
    add("| --- | --- | --- | --- |")

    def both(getter: Any, digits: int = 0) -> tuple[str, str, float | None, float | None]:
        values = []
        for mode in ("embedded", "production"):
            result = modes.get(mode)
            values.append(getter(result) if result is not None else None)
        return _fmt(values[0], digits), _fmt(values[1], digits), values[0], values[1]

    e, p, ev, pv = both(lambda r: r.runs[0]["jobs_per_s"])
    median = f", the median of {cfg.repeat} runs" if cfg.repeat > 1 else ""
    add(
        f"| jobs/s end to end, {cfg.size:,} pages{median} "
        f"| {e} ({_verdict(ev, TARGETS['e2e_sqlite'])}) "
        f"| {p} ({_verdict(pv, TARGETS['e2e_pg'])}) | ≥ 500 embedded, ≥ 1,000 production |"
    )
    if cfg.repeat > 1:
        each = [
            ", ".join(f"{run['jobs_per_s']:,.0f}" for run in modes[mode].repeats)
            if mode in modes
            else "—"
            for mode in ("embedded", "production")
        ]
        add(f"| jobs/s of each of those runs | {each[0]} | {each[1]} | |")
    if cfg.scale:
        e, p, ev, pv = both(lambda r: r.runs[1]["jobs_per_s"])
        add(f"| jobs/s end to end, {cfg.size * 10:,} pages | {e} | {p} | same rate as above |")
    _, p, _, _ = both(lambda r: r.two_workers.get("jobs_per_s"))
    _, c, _, _ = both(lambda r: r.two_workers.get("cpu_ms_per_job"), 2)
    add(
        f"| jobs/s end to end, {cfg.size:,} pages, two worker processes ({c} CPU ms per job) "
        f"| — | {p} | not a target: the machine's ceiling |"
    )
    e, p, ev, pv = both(lambda r: r.closed["per_second"])
    add(
        f"| POST/s, 64 clients (single POSTs) | {e} ({_verdict(ev, TARGETS['post_per_s'])}) "
        f"| {p} ({_verdict(pv, TARGETS['post_per_s'])}) | ≥ 1,500 |"
    )
    e, p, _, _ = both(lambda r: r.closed["p99_ms"], 1)
    add(f"| p99 ms at 64 clients | {e} | {p} | |")
    e, p, _, _ = both(lambda r: r.open["p50_ms"], 1)
    add(f"| p50 ms at {cfg.rate:.0f} POST/s offered | {e} | {p} | |")
    e, p, ev, pv = both(lambda r: r.open["p99_ms"], 1)
    add(
        f"| p99 ms at {cfg.rate:.0f} POST/s offered | {e} "
        f"({_verdict(ev, TARGETS['p99_ms'], lower_is_better=True)}) | {p} "
        f"({_verdict(pv, TARGETS['p99_ms'], lower_is_better=True)}) | < 25 |"
    )
    _, p, _, pv = both(lambda r: r.open_alone.get("p99_ms"), 1)
    add(
        f"| p99 ms at {cfg.rate:.0f} POST/s offered, worker paused (the API alone) | — | {p} "
        f"({_verdict(pv, TARGETS['p99_ms'], lower_is_better=True)}) | < 25 |"
    )
    e, p, _, _ = both(lambda r: r.open["dropped"] + r.open["errors"])
    add(f"| errors + dropped at {cfg.rate:.0f} POST/s | {e} | {p} | 0 |")
    e, p, _, _ = both(lambda r: r.runs[0]["submit_rows_per_s"])
    add(f"| batch submit, rows/s (1,000 a request) | {e} | {p} | |")
    e, p, _, _ = both(lambda r: r.runs[0]["cpu_ms_per_job"], 2)
    add(f"| CPU ms per job (our processes), {cfg.size:,} pages | {e} | {p} | |")
    if cfg.scale:
        e, p, _, _ = both(lambda r: r.runs[1]["cpu_ms_per_job"], 2)
        add(f"| CPU ms per job, {cfg.size * 10:,} pages | {e} | {p} | same as above |")
    e, p, _, _ = both(lambda r: 100 * r.runs[0]["loop_busy"])
    add(f"| worker's event loop busy, % of the end-to-end run | {e} | {p} | |")
    e, p, _, _ = both(lambda r: 100 * r.runs[0]["machine_busy"])
    add(f"| both cores busy, % of the end-to-end run | {e} | {p} | |")
    e, p, _, _ = both(lambda r: r.runs[0]["cpu_speed_ms"])
    add(f"| `cpu_speed` when the end-to-end run began, ms | {e} | {p} | |")
    rss = []
    for mode in ("embedded", "production"):
        r = modes.get(mode)
        rss.append(f"{r.rss['start']:.0f} / {r.rss['peak']:.0f} / {r.rss['end']:.0f}" if r else "—")
    add(f"| worker RSS MB start / peak / end | {rss[0]} | {rss[1]} | flat |")
    # The counts are the database's after each run, so the last run's cover them all.
    e, p, _, _ = both(lambda r: _last_run(r)["counts"].get("FAILED", 0))
    add(f"| FAILED jobs in the end-to-end runs | {e} | {p} | 0 |")
    add("")
    for mode in ("embedded", "production"):
        r = modes.get(mode)
        codes = _last_run(r)["failed_by_code"] if r is not None else None
        if codes:
            add(f"FAILED jobs of the {mode} runs by error code: {codes}.  ")

    for mode in ("embedded", "production"):
        r = modes.get(mode)
        if r is None:
            continue
        split = ", ".join(f"{k} {v:.1f}" for k, v in r.runs[0]["cpu_s"].items())
        add(f"CPU seconds of the {mode} end-to-end run (the median one): {split}.  ")
    add("")

    if limits:
        add("## Limits, measured in the same run\n")
        add(
            f"`cpu_speed` when the limits began: {limits['cpu_speed_ms']:.0f} ms. Where it differs"
            " from the modes' (above), so do the ratios.\n"
        )
        add("| limit | measured | TaskCrawler | ratio |")
        add("| --- | --- | --- | --- |")
        ours = {m: modes[m].runs[0]["jobs_per_s"] for m in modes}
        fetch = limits["fetch"]["per_second"]
        fetch_x = limits["fetch_extract"]["per_second"]
        for label, value in (
            ("bare aiohttp fetch loop, pages/s (100 in flight)", fetch),
            ("aiohttp fetch + our extraction, pages/s", fetch_x),
        ) + (
            (("Scrapy fetch + extract, pages/s", limits["scrapy"]["per_second"]),)
            if limits.get("scrapy")
            else ()
        ):
            for mode, jobs in ours.items():
                add(f"| {label} | {value:,.0f} | {mode} {jobs:,.0f} jobs/s | {jobs / value:.2f} |")
        bare = limits["bare_api"]["per_second"]
        for mode in modes:
            posts = modes[mode].closed["per_second"]
            add(
                f"| bare FastAPI endpoint, POST/s (64 clients) | {bare:,.0f} | {mode} "
                f"{posts:,.0f} POST/s | {posts / bare:.2f} |"
            )
        ins = limits["inserts"]
        for key, mode in (
            ("pg_executemany_rows_per_s", "production"),
            ("sqlite_executemany_rows_per_s", "embedded"),
        ):
            if mode in modes:
                sub = modes[mode].runs[0]["submit_rows_per_s"]
                add(
                    f"| bare inserts `{key}` | {ins[key]:,.0f} | {mode} batch submit "
                    f"{sub:,.0f} rows/s | {sub / ins[key]:.2f} |"
                )
        for key, mode in (
            ("pg_single_commits_per_s", "production"),
            ("sqlite_single_commits_per_s", "embedded"),
        ):
            if mode in modes:
                posts = modes[mode].closed["per_second"]
                add(
                    f"| bare single-row commits `{key}` | {ins[key]:,.0f} | {mode} "
                    f"{posts:,.0f} POST/s | {posts / ins[key]:.2f} |"
                )
        add("")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- main


@contextlib.contextmanager
def target_server(procs: Procs) -> Iterator[str]:
    port = free_port()
    proc = procs.start("target", [PY, "-m", "bench.target", "--port", str(port)], base_env())
    wait_port(port, 30, proc)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        procs.stop(proc)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--size", type=int, default=5000, help="pages end to end (default 5000)")
    parser.add_argument("--quick", action="store_true", help="shorter load phases")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of --size per mode; the median counts (3)"
    )
    parser.add_argument("--scale", action="store_true", help="also run 10x --size (linearity)")
    parser.add_argument(
        "--modes", default="embedded,production", help="comma-separated: embedded,production"
    )
    parser.add_argument("--no-limits", action="store_true", help="skip the limits")
    parser.add_argument("--no-scrapy", action="store_true", help="skip Scrapy")
    parser.add_argument(
        "--pg-url",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="an admin URL: the benchmark creates and drops its own database",
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--rate", type=float, default=500.0, help="offered POST/s (default 500)")
    parser.add_argument("--posts", type=int, help="single POSTs at 64 clients (10000; quick 2000)")
    parser.add_argument(
        "--open-seconds", type=float, help="length of the steady-load phase (10; quick 3)"
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "RESULTS.md")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--timeout", type=float, default=600.0, help="bound of every phase")
    parser.add_argument("--keep-logs", action="store_true", help="keep the process logs")
    cfg = parser.parse_args(argv)
    cfg.posts = cfg.posts or (2000 if cfg.quick else 10000)
    cfg.post_seconds = 10.0 if cfg.quick else 30.0
    cfg.open_seconds = cfg.open_seconds or (3.0 if cfg.quick else 10.0)
    cfg.page_base = secrets.randbelow(1_000_000) * 100
    if cfg.size < 10:
        parser.error("--size must be at least 10")
    if cfg.repeat < 1:
        parser.error("--repeat must be at least 1")
    return cfg


def main(argv: Sequence[str] | None = None) -> int:
    cfg = parse_args(argv)
    command = "python -m bench.run " + " ".join(sys.argv[1:] if argv is None else argv)
    workdir = Path(tempfile.mkdtemp(prefix="tc_bench_"))
    procs = Procs(workdir)
    pg_admin = cfg.pg_url
    info = machine(pg_admin, cfg.redis_url)
    print(f"machine: {info}", flush=True)
    modes: dict[str, ModeResult] = {}
    limits = None
    try:
        with target_server(procs) as target:
            if not cfg.no_limits:
                print("limits:", flush=True)
                limits = run_limits(cfg, target, procs, workdir, pg_admin)
            for mode in [m.strip() for m in cfg.modes.split(",") if m.strip()]:
                print(f"{mode}:", flush=True)
                # What the previous mode wrote (the embedded run left 128-143 MB dirty in one
                # run) would otherwise be written back while this mode is measured, probably
                # with every commit's flush waiting behind it: flush it first.
                os.sync()
                modes[mode] = run_mode(mode, cfg, target, procs, workdir, pg_admin)
    except BaseException:
        print(f"logs kept in {workdir}", file=sys.stderr)
        raise
    finally:
        procs.stop_all()
    text = report(cfg, info, limits, modes, command)
    cfg.out.write_text(text)
    if cfg.json:
        raw = {
            "machine": info,
            "limits": limits,
            "modes": {name: vars(r) for name, r in modes.items()},
        }
        cfg.json.write_text(json.dumps(raw, indent=2, default=str))
    print()
    print(text)
    print(f"written to {cfg.out}")
    if not cfg.keep_logs:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"logs in {workdir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
