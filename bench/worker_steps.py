"""CPU per step of the worker's loop, in place: ``python -m bench.worker_steps``.

``bench.worker_cpu`` gives the CPU of a whole job; on this shared machine it moves by 10-25%
from one run to the next, more than most single changes save. Here the same run (the same
target, the same worker, ``bench.worker_cpu``'s ``one_run``) wraps the loop's synchronous steps,
each named in :data:`STEPS`, in a probe that reads the thread's CPU clock around every call:
what a step costs inside the running worker, its caches cold from the extraction before it, and
not what a loop of ``timeit`` makes of it, warm (3-14 times less for the small ones). A step's
figure moves by a few per cent between runs however loaded the machine is; each includes about
one clock read (a system call here: 0.4-1.3 us) and the steps it calls.

Coroutines are left out (a CPU clock read across an ``await`` counts whatever ran meanwhile):
the fetch, the extraction's hand-off and the writes' round trips are ``bench.worker_cpu``'s.
A step missing from the code measured (an older ``--ref``) is skipped.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvloop

from bench.post_cpu import _extract
from bench.worker_cpu import _deployment, one_run
from tests.support.processes import REPO_ROOT, ProcessManager
from tests.support.services import free_port, resolve_postgres, resolve_redis

#: The synchronous steps of a job (and of a batch), as ``module:attribute path``: the name is
#: replaced where it is looked up when the step runs.
STEPS = (
    "taskcrawler.worker.worker:storable_outcome",
    "taskcrawler.worker.worker:decide",
    "taskcrawler.worker.worker:page_content",
    "taskcrawler.worker.worker:_held_bytes",
    "taskcrawler.worker.worker:Worker._count",
    "taskcrawler.worker.worker:Worker._release_slot",
    "taskcrawler.worker.worker:Worker._start",
    "taskcrawler.worker.frontier:HostFrontier.done",
    "taskcrawler.worker.frontier:host_of",
    "taskcrawler.worker.parsing:PageParser.lane",
    "taskcrawler.fetch.fetcher:_parse_url",
    "taskcrawler.storage.work:_claimed_job",
    "taskcrawler.storage.work:_row_values",
    "taskcrawler.storage.content:content_rows",
    "taskcrawler.storage.postgres.sql:column_arrays",
)


class Probes:
    """Thread CPU time and calls per step."""

    def __init__(self) -> None:
        self.nanoseconds: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()

    def wrap(self, step: str, function: Callable[..., Any]) -> Callable[..., Any]:
        clock = time.thread_time_ns
        nanoseconds, calls = self.nanoseconds, self.calls

        @functools.wraps(function)
        def probed(*args: Any, **kwargs: Any) -> Any:
            began = clock()
            try:
                return function(*args, **kwargs)
            finally:
                nanoseconds[step] += clock() - began
                calls[step] += 1

        return probed

    def install(self) -> None:
        for step in STEPS:
            module_name, path = step.split(":")
            owner: Any = importlib.import_module(module_name)
            *parents, name = path.split(".")
            with contextlib.suppress(AttributeError):
                for parent in parents:
                    owner = getattr(owner, parent)
                setattr(owner, name, self.wrap(path, getattr(owner, name)))

    def per_job(self, jobs: int) -> dict[str, tuple[float, float]]:
        """Each step's calls and microseconds of CPU a job."""
        return {
            step: (self.calls[step] / jobs, self.nanoseconds[step] / jobs / 1000)
            for step in self.nanoseconds
        }


async def child_run(env: dict[str, str], target: str, jobs: int) -> dict[str, Any]:
    probes = Probes()
    probes.install()
    figures = await one_run(env, target, jobs, None, None, 600.0)
    return {"job": figures, "steps": probes.per_job(jobs)}


def _child(tree: Path | None, args: argparse.Namespace, env: dict[str, str], target: str) -> Any:
    """One run of the code in ``tree`` (None: this tree's), in a process of its own."""
    path = str(REPO_ROOT) if tree is None else f"{tree}{os.pathsep}{REPO_ROOT}"
    command = [sys.executable, "-m", "bench.worker_steps", "--child", "--target", target,
               "--jobs", str(args.jobs), "--settings", json.dumps(env)]  # fmt: skip
    # ``python -m`` puts the working directory first on sys.path: the ref's tree, if any.
    out = subprocess.run(command, env=os.environ | {"PYTHONPATH": path}, cwd=tree or REPO_ROOT,
                         check=True, capture_output=True, text=True, timeout=900)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


async def main_async(args: argparse.Namespace) -> None:
    args.mode = "production"
    args.pg_url = args.pg_url or (await resolve_postgres()).url
    args.redis_url = args.redis_url or (await resolve_redis()).url
    runs: dict[str, list[dict[str, Any]]] = {"this": [], args.ref or "": []}
    with tempfile.TemporaryDirectory() as workdir:
        work = Path(workdir)
        async with ProcessManager(work / "site") as processes:
            port = free_port()
            site = processes.start_command(
                [sys.executable, "-m", "bench.target", "--port", str(port)], name="target"
            )
            await site.wait_for_port(port, within=30)
            target = f"http://127.0.0.1:{port}"
            trees: dict[str, Path | None] = {"this": None}
            if args.ref:
                ref_tree = work / "ref"
                ref_tree.mkdir()
                _extract(args.ref, ref_tree)
                trees[args.ref] = ref_tree
            for n in range(args.runs):
                for name, tree in trees.items():
                    async with _deployment(args, work) as env:
                        runs[name].append(_child(tree, args, env, target))
                    job = runs[name][-1]["job"]
                    print(f"run {n + 1} {name} (load {os.getloadavg()[0]:.1f}): "
                          f"{job['cpu_ms_per_job']:.3f} ms CPU/job", flush=True)  # fmt: skip
    _show(runs)


def _show(runs: dict[str, list[dict[str, Any]]]) -> None:
    """Medians per step: calls a job, then us of CPU a job for each version."""
    names = [name for name, found in runs.items() if found]
    steps = sorted({step for found in runs.values() for run in found for step in run["steps"]})

    def median(name: str, step: str, index: int) -> float:
        values = [run["steps"][step][index] for run in runs[name] if step in run["steps"]]
        return statistics.median(values) if values else float("nan")

    print("step | calls a job | " + " | ".join(f"{name or 'this'} us a job" for name in names))
    ordered = sorted(steps, key=lambda step: -median(names[0], step, 1))
    for step in ordered:
        figures = " | ".join(f"{median(name, step, 1):.2f}" for name in names)
        print(f"{step} | {median(names[0], step, 0):.2f} | {figures}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--ref", help="also run this git ref's taskcrawler, alternated")
    parser.add_argument("--pg-url", help="an admin URL (default: found or started as tests do)")
    parser.add_argument("--redis-url")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--settings", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        # As `taskcrawler worker` runs (taskcrawler/cli/loop.py): on uvloop.
        result = uvloop.run(child_run(json.loads(args.settings), args.target, args.jobs))
        print(json.dumps(result))
        return
    uvloop.run(main_async(args))


if __name__ == "__main__":
    main()
