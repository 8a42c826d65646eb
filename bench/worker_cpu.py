"""CPU per job of the worker's whole loop, in process: ``python -m bench.worker_cpu``.

``--jobs`` new pages of the benchmark's target site (``bench.target``, a process of its own)
are queued through the batch endpoint (the app called straight through ASGI, not timed), then
one worker, as ``taskcrawler worker`` builds it (``run_worker``: claim, fetch, extract, persist,
ack, metrics, logging, sweeper, monitor scheduler, webhooks), drains them in this process; the
process's CPU time from its start to the last job's final state is divided by the jobs (the
worker's start-up is not counted, its idle helpers are). On a machine others share, CPU per job
moves much less than jobs per second. The worker's CPU a second once the queue is empty (its
helpers', paid per second whatever the jobs) is measured after each run, and the net figure per
job takes it away for the run's length: at the few dozen jobs a second of a busy machine the
helpers are a large part of the gross figure, which then follows the speed. Not counted:
PostgreSQL's and Redis's own CPU, and a parse in the parser's processes (the target's pages are
small: they are parsed inline).

``--mode production`` (PostgreSQL + Redis) or ``embedded`` (SQLite, the in-process queue).
``--ref`` runs a git ref's ``taskcrawler`` too, alternated with this tree's, each run in a
process of its own; ``--profile`` writes cProfile's stats of this tree's first run to a file
(calls per job are deterministic; times under the profiler are not the worker's), or, for a
file named ``*.txt``, py-spy's samples (raw format, only while holding the GIL). Every run
drops its database and deletes its Redis keys.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvloop

from bench.deployment import BENCH_SETTINGS
from bench.post_cpu import _extract, _post
from tests.support.databases import temporary_database
from tests.support.processes import REPO_ROOT, ProcessManager
from tests.support.services import delete_prefix, free_port, resolve_postgres, resolve_redis

BATCH = 1000
#: How long the worker's idle CPU is measured after each run.
IDLE_SECONDS = 3.0


async def _queue_jobs(settings: Any, target: str, jobs: int, formats: str | None) -> None:
    """``jobs`` new pages through ``POST /api/v1/jobs/batch``, ``BATCH`` a call."""
    from taskcrawler.api.app import create_app

    app = create_app(settings)
    run = secrets.token_hex(6)
    async with app.router.lifespan_context(app):
        for first in range(0, jobs, BATCH):
            urls = [f"{target}/p/{n}?r={run}" for n in range(first, min(jobs, first + BATCH))]
            batch: dict[str, Any] = {"urls": urls}
            if formats:
                batch["formats"] = formats.split(",")
            status = await _post(app, json.dumps(batch).encode(), path="/api/v1/jobs/batch")
            if status not in (200, 201, 202):
                raise RuntimeError(f"batch answered {status}")


def _spy(output: str) -> subprocess.Popen[bytes]:
    """py-spy recording this process (its main thread, GIL holders only) into ``output``."""
    command = [str(Path(sys.executable).with_name("py-spy")), "record", "--pid",
               str(os.getpid()), "--rate", "250", "--nonblocking", "--gil", "--format", "raw",
               "--output", output]  # fmt: skip
    spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached
    return spy


class _Finals:
    """Jobs in a final state, read from the worker's two counters only: a whole registry's
    collect, 50 times a second, cost about 1% of the CPU this benchmark charges to the worker."""

    def __init__(self, registry: Any) -> None:
        # A private map, but the only way to one metric's samples without collecting them all.
        collectors = registry._names_to_collectors
        self._counters = [collectors[f"taskcrawler_jobs_{end}"] for end in ("completed", "failed")]

    def __call__(self) -> float:
        return sum(
            sample.value
            for counter in self._counters
            for metric in counter.collect()
            for sample in metric.samples
            if sample.name.endswith("_total")
        )


async def one_run(settings_env: dict[str, str], target: str, jobs: int, formats: str | None,
                  profile: str | None, within: float) -> dict[str, float]:  # fmt: skip
    from prometheus_client import CollectorRegistry

    from taskcrawler.settings import Settings
    from taskcrawler.storage.migrate import upgrade_database
    from taskcrawler.worker import runner

    try:
        from taskcrawler.running import run_worker
    except ImportError:  # a version measured from before run_worker left the worker package
        run_worker = runner.run_worker  # type: ignore[attr-defined]

    os.environ.update(settings_env)
    _configure_like_the_worker(settings_env)
    settings = Settings()
    await upgrade_database(settings.database_url)
    await _queue_jobs(settings, target, jobs, formats)
    # What ``taskcrawler worker`` does once started, in the version measured.
    gc.collect()
    gc.freeze()  # freeze_startup_heap
    getattr(runner, "collect_less_often", lambda: None)()
    registry = CollectorRegistry()
    stop = asyncio.Event()
    worker = asyncio.create_task(run_worker(settings, stop=stop, registry=registry))
    # Built once its metrics exist (the Worker makes them); nothing to wait on but a poll.
    while registry.get_sample_value("taskcrawler_jobs_claimed_total") is None:  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    finals = _Finals(registry)
    spy = _spy(profile) if profile and profile.endswith(".txt") else None
    if spy is not None:
        profile = None
    # The main thread's CPU clock: a wall clock would charge a function with the time it waits
    # for the GIL while a thread (a resolver, a parse) holds it.
    profiler = cProfile.Profile(time.thread_time) if profile else None
    collector = _GcClock()
    gc.callbacks.append(collector)
    wall, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    deadline = time.monotonic() + within
    while finals() < jobs:
        if time.monotonic() > deadline or worker.done():
            raise RuntimeError(f"{finals():.0f} of {jobs} jobs final")
        await asyncio.sleep(0.02)
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        await asyncio.to_thread(spy.wait, 60)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    gc.callbacks.remove(collector)
    idle = await _idle_cpu_per_second()
    stop.set()
    await worker
    return {
        "cpu_ms_per_job": cpu / jobs * 1000,
        "idle_ms_per_s": idle * 1000,
        "net_cpu_ms_per_job": max(0.0, cpu - idle * wall) / jobs * 1000,
        "jobs_per_s": jobs / wall,
        "gc_ms_per_job": collector.seconds / jobs * 1000,
        "gc_full_per_1000_jobs": collector.full / jobs * 1000,
    }


async def _idle_cpu_per_second() -> float:
    """The worker's CPU per second once its queue is empty: its helpers' (sweeper, monitor
    scheduler, webhooks, heartbeat), paid per second whatever the jobs. At the few dozen jobs a
    second of a busy machine they are a large part of the CPU per job; the net figure takes them
    away, so that runs at different speeds compare."""
    await asyncio.sleep(0.5)  # the last writes and their acks
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.sleep(IDLE_SECONDS)
    return (time.process_time() - cpu) / (time.perf_counter() - wall)


class _GcClock:
    """The garbage collector's time on this thread's CPU clock, and its full collections."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.thread_time()
            return
        self.seconds += time.thread_time() - self._began
        self.full += info["generation"] == 2


@contextlib.asynccontextmanager
async def _deployment(args: argparse.Namespace, workdir: Path) -> AsyncIterator[dict[str, str]]:
    """The settings of one run: its own database (and Redis prefix), dropped on the way out."""
    env = BENCH_SETTINGS | {"TASKCRAWLER_WORKER_METRICS_PORT": "0"}
    if args.mode == "embedded":
        # In the run's temporary folder, removed with it.
        path = workdir / f"{secrets.token_hex(4)}.db"
        yield env | {"TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{path}"}
        return
    prefix = "bench_worker_cpu_" + secrets.token_hex(4)
    async with temporary_database(args.pg_url, prefix="bench_worker_cpu_") as url:
        try:
            yield env | {"TASKCRAWLER_DATABASE_URL": url, "TASKCRAWLER_REDIS_URL": args.redis_url,
                         "TASKCRAWLER_REDIS_PREFIX": prefix}  # fmt: skip
        finally:
            await delete_prefix(args.redis_url, prefix)


def _child(tree: Path | None, args: argparse.Namespace, env: dict[str, str], target: str) -> Any:
    """One run of the code in ``tree`` (None: this tree's) in a process of its own."""
    path = str(REPO_ROOT) if tree is None else f"{tree}{os.pathsep}{REPO_ROOT}"
    command = [sys.executable, "-m", "bench.worker_cpu", "--child", "--target", target,
               "--jobs", str(args.jobs), "--settings", json.dumps(env)]  # fmt: skip
    if args.formats:
        command += ["--formats", args.formats]
    # ``python -m`` puts the working directory first on sys.path: run from the ref's tree, or
    # this checkout's taskcrawler would be imported in its place.
    out = subprocess.run(command, env=os.environ | {"PYTHONPATH": path}, cwd=tree or REPO_ROOT,
                         check=True, capture_output=True, text=True,
                         timeout=args.timeout + 120)  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    imported = Path(result.pop("taskcrawler"))
    if not imported.is_relative_to(tree or REPO_ROOT):
        raise RuntimeError(f"the run imported {imported}, not the code of {tree or REPO_ROOT}")
    return result


async def main_async(args: argparse.Namespace) -> None:
    if args.mode == "production":
        args.pg_url = args.pg_url or (await resolve_postgres()).url
        args.redis_url = args.redis_url or (await resolve_redis()).url
    with tempfile.TemporaryDirectory() as workdir:
        work = Path(workdir)
        async with ProcessManager(work / "site") as processes:
            port = free_port()
            site = processes.start_command(
                [sys.executable, "-m", "bench.target", "--port", str(port)], name="target"
            )
            await site.wait_for_port(port, within=30)
            target = f"http://127.0.0.1:{port}"
            tree = None
            if args.ref:
                tree = work / "ref"
                tree.mkdir()
                _extract(args.ref, tree)
            figures: dict[str, list[dict[str, float]]] = {"this": [], args.ref or "": []}
            for n in range(args.runs):
                async with _deployment(args, work) as env:
                    if args.profile and n == 0:
                        this = await one_run(env, target, args.jobs, args.formats, args.profile,
                                             args.timeout)  # fmt: skip
                    else:
                        this = _child(None, args, env, target)
                figures["this"].append(this)
                line = f"run {n + 1} (load {os.getloadavg()[0]:.1f}): this {_show(this)}"
                if tree is not None:
                    async with _deployment(args, work) as env:
                        ref = _child(tree, args, env, target)
                    figures[args.ref].append(ref)
                    line += f"; {args.ref} {_show(ref)}"
                print(line, flush=True)
    for name, runs in figures.items():
        if runs:
            cpu = statistics.median(r["cpu_ms_per_job"] for r in runs)
            net = statistics.median(r["net_cpu_ms_per_job"] for r in runs)
            idle = statistics.median(r["idle_ms_per_s"] for r in runs)
            collector = statistics.median(r["gc_ms_per_job"] for r in runs)
            rate = statistics.median(r["jobs_per_s"] for r in runs)
            print(
                f"median {name or 'this'}: {cpu:.3f} ms CPU per job (garbage collector "
                f"{collector:.3f}), {rate:.0f} jobs/s; net of the idle {idle:.1f} ms a second: "
                f"{net:.3f} ms per job"
            )


def _show(figures: dict[str, float]) -> str:
    return (
        f"{figures['cpu_ms_per_job']:.3f} ms CPU/job (garbage collector "
        f"{figures['gc_ms_per_job']:.3f}, {figures['gc_full_per_1000_jobs']:.1f} full "
        f"collections per 1,000 jobs), {figures['jobs_per_s']:.0f} jobs/s, idle "
        f"{figures['idle_ms_per_s']:.1f} ms a second, net "
        f"{figures['net_cpu_ms_per_job']:.3f} ms/job"
    )


def _configure_like_the_worker(env: dict[str, str]) -> None:
    """Logging as ``taskcrawler worker`` sets it up (the benchmark's level: WARNING)."""
    from taskcrawler.cli.logs import configure_logging

    configure_logging(env["TASKCRAWLER_LOG_FORMAT"], env["TASKCRAWLER_LOG_LEVEL"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mode", choices=("production", "embedded"), default="production")
    parser.add_argument("--formats", help="the jobs' formats, e.g. metadata (default: the API's)")
    parser.add_argument("--ref", help="also run this git ref's taskcrawler, alternated")
    parser.add_argument("--profile", help="write this tree's first run's cProfile stats here")
    parser.add_argument("--pg-url", help="an admin URL (default: found or started as tests do)")
    parser.add_argument("--redis-url")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--settings", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        env = json.loads(args.settings)
        # On uvloop, as `taskcrawler worker` runs (taskcrawler/cli/loop.py): asyncio's own loop
        # costs the worker more CPU a job than the one users run.
        result = uvloop.run(one_run(env, args.target, args.jobs, args.formats, None, args.timeout))
        import taskcrawler

        print(json.dumps(result | {"taskcrawler": taskcrawler.__file__}))
        return
    uvloop.run(main_async(args))


if __name__ == "__main__":
    main()
