"""What one outcome write costs SQLite's writer lock, by the worker's bound on a write's
transitions: ``python -m bench.outcome_hold``.

A real worker, in this process, on a migrated SQLite file, fetches ``--jobs`` pages of
``bench.target``'s kind from a local server. Its first write is held back until every job waits
for its write (as tests/integration/test_outcome_batches.py does), so the next writes take as
many as the bound lets them: the largest hold a backlog makes. Each hold of the writer lock is
timed in the thread that holds it (``fcntl.flock`` wrapped, the product untouched): wall time and
that thread's CPU time. CPU does not depend on how loaded the machine is; wall time does. The
bounds are alternated ``--runs`` times. Prints per bound: the transitions per write, hold CPU
p50/max, the sum of the holds' CPU per job (what smaller writes cost in all), wall p50/max.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import shutil
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from statistics import median
from typing import Any

from aiohttp import web

from bench.loadgen import percentile
from bench.target import page
from taskcrawler.queue import MemoryQueue
from taskcrawler.storage import NewJob, Storage, open_storage, upgrade_database
from tests.support.held_writes import HeldFirstWrite, held_worker
from tests.support.workers import running_worker

HOST = "hold.test"


class Holds:
    """Every hold of a ``-writer`` flock in this process: (wall s, CPU s of the holding thread)."""

    def __init__(self) -> None:
        self.holds: list[tuple[float, float]] = []
        self._taken = threading.local()
        self._flock = fcntl.flock

    def install(self) -> None:
        fcntl.flock = self._wrapped

    def uninstall(self) -> None:
        fcntl.flock = self._flock

    def _wrapped(self, fd: Any, operation: int) -> None:
        if not os.readlink(f"/proc/self/fd/{fd}").endswith("-writer"):
            return self._flock(fd, operation)
        if operation & fcntl.LOCK_UN:
            wall, cpu = time.monotonic(), time.thread_time()
            self._flock(fd, operation)
            taken = getattr(self._taken, "at", None)
            if taken is not None:
                self.holds.append((wall - taken[0], cpu - taken[1]))
            self._taken.at = None
            return None
        self._flock(fd, operation)
        self._taken.at = (time.monotonic(), time.thread_time())
        return None


@contextlib.asynccontextmanager
async def site() -> AsyncIterator[int]:
    async def serve(request: web.Request) -> web.Response:
        return web.Response(body=page(int(request.match_info["n"])), content_type="text/html")

    app = web.Application()
    app.router.add_get("/p/{n}", serve)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def one_run(template: Path, workdir: Path, port: int, jobs: int, bound: int) -> Any:
    path = workdir / f"run-{bound}-{time.monotonic_ns()}.db"
    shutil.copy(template, path)
    storage: Storage = open_storage(f"sqlite+aiosqlite:///{path}")
    holds = Holds()
    try:
        created = await storage.jobs.create_jobs(
            [NewJob(f"http://{HOST}:{port}/p/{n}") for n in range(jobs)], redispatch_after=600
        )
        queue = MemoryQueue()
        await queue.publish([c.job.id for c in created])
        store = HeldFirstWrite(storage.work, jobs, bound)
        worker, fetcher = held_worker(store, queue, HOST)
        try:
            async with running_worker(worker), asyncio.timeout(600):
                await worker.all_asked.wait()
                holds.install()  # the backlog's writes only
                store.release.set()
                await store.final.wait()
                holds.uninstall()
        finally:
            holds.uninstall()
            await fetcher.close()
            await worker.parser.aclose()
    finally:
        await storage.close()
    return [len(write) for write in store.writes], holds.holds


def summary(bound: int, runs: list[Any], jobs: int) -> str:
    writes = [w for ws, _ in runs for w in ws]
    holds = [h for _, hs in runs for h in hs]
    cpu = [c * 1000 for _, c in holds]
    wall = [w * 1000 for w, _ in holds]
    per_job = [sum(c for _, c in hs) * 1000 / jobs for _, hs in runs]
    return (
        f"bound {bound}: {len(writes)} writes, transitions each max {max(writes)}; "
        f"{len(holds)} holds (claims and sweeps too): CPU p50 {percentile(cpu, 50):.2f} "
        f"p99 {percentile(cpu, 99):.2f} max {max(cpu):.2f} ms; "
        f"wall p50 {percentile(wall, 50):.2f} max {max(wall):.2f} ms; "
        f"holds' CPU per job, median of runs {median(per_job):.4f} ms "
        f"({', '.join(f'{x:.4f}' for x in per_job)})"
    )


async def main_async(args: argparse.Namespace, workdir: Path) -> None:
    template = workdir / "template.db"
    await upgrade_database(f"sqlite+aiosqlite:///{template}")
    results: dict[int, list[Any]] = {bound: [] for bound in args.bounds}
    async with site() as port:
        for n in range(args.runs):
            for bound in args.bounds:
                load = os.getloadavg()[0]
                run = await one_run(template, workdir, port, args.jobs, bound)
                results[bound].append(run)
                cpu = [c * 1000 for _, c in run[1]]
                print(
                    f"run {n + 1} bound {bound} (load {load:.1f}): {len(run[0])} writes, "
                    f"hold CPU max {max(cpu):.2f} ms, sum {sum(cpu):.1f} ms",
                    flush=True,
                )
    for bound, runs in results.items():
        print(summary(bound, runs, args.jobs), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.outcome_hold",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--bounds", type=int, nargs="+", default=[500, 32])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tc_outcome_hold_"))
    try:
        asyncio.run(main_async(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
