"""Alternated pairs of one benchmark phase, two variants: ``python -m bench.ab A B``.

A variant is a git ref (checked out into a temporary worktree) or ``.`` for this checkout as it
is, uncommitted changes included; ``--a-set`` / ``--b-set KEY=VALUE`` add ``TASKCRAWLER_*``
settings to one side. Each pair runs A then B, each on a fresh deployment (its own database and
Redis prefix). ``--phase e2e`` (the default): ``--size`` new pages through the batch endpoint,
timed until every job is final, as ``bench.run`` does; prints jobs/s, CPU ms per job by process,
how busy the worker's event loop was. ``--phase open``: single POSTs at ``--rate`` (500) for
``--seconds`` (8, after ``--warm-up`` 2) while the worker drains them; ``open-paused``: the same
with the worker stopped (the API alone); prints p50/p99 and CPU ms per request by process.
Every run prints ``cpu_speed``; at the end, the means (the medians of p50 and p99) and how many
pairs each side won.

This machine's speed drifts within minutes: one run of each tells nothing, a few alternated
pairs do. Examples::

    python -m bench.ab HEAD~1 HEAD --pairs 4
    python -m bench.ab HEAD~1 HEAD --phase open
    python -m bench.ab . . --b-set TASKCRAWLER_ARCHIVE_PAGES=false --mode embedded
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from statistics import mean, median
from typing import Any, TypeVar

from bench.deployment import (
    Deployment,
    Sampler,
    deployment,
    loadgen,
    postgres,
    redis,
    target_site,
    wait_final,
)
from bench.measure import cpu_speed_ms, tree_cpu_seconds
from bench.phases import backlog, end_to_end, pause_worker, signal_tree
from tests.support.processes import REPO_ROOT, ProcessManager


@contextlib.contextmanager
def checkout(ref: str, workdir: Path) -> Iterator[Path]:
    """``ref`` in a temporary git worktree; ``.`` is this checkout itself."""
    if ref == ".":
        yield REPO_ROOT
        return
    path = workdir / f"tree_{secrets.token_hex(4)}"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "--quiet", str(path), ref], cwd=REPO_ROOT, check=True
    )
    try:
        yield path
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(path)], cwd=REPO_ROOT, check=False
        )


V = TypeVar("V")


async def production_versions(
    stack: contextlib.AsyncExitStack, args: argparse.Namespace, workdir: Path
) -> dict[str, Path]:
    """PostgreSQL and Redis found or started for the run (their URLs written back to
    ``args.pg_url`` and ``args.redis_url``), and the trees to run: ``args.ref``'s checkout first
    when given, then this one. Both last as long as ``stack``."""
    args.pg_url = await stack.enter_async_context(postgres(args.pg_url))
    args.redis_url = await stack.enter_async_context(redis(args.redis_url))
    trees = {"this": REPO_ROOT}
    if args.ref:
        trees = {args.ref: stack.enter_context(checkout(args.ref, workdir)), **trees}
    return trees


async def alternated_rounds(
    rounds: int,
    versions: Mapping[str, V],
    run: Callable[[V], Awaitable[dict[str, Any]]],
    describe: Callable[[str, dict[str, Any]], str],
) -> list[dict[str, Any]]:
    """``rounds`` rounds, each running every version once in turn, so that versions compare
    within a round; each run is labelled with its version, round and time, and printed as it
    ends."""
    results = []
    for n in range(1, rounds + 1):
        for label, version in versions.items():
            result = await run(version) | {"version": label, "round": n, "at": time.time()}
            results.append(result)
            print(describe(f"round {n} {label}", result), flush=True)
    return results


def settings(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.startswith("TASKCRAWLER_"):
            raise SystemExit(f"expected TASKCRAWLER_KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


async def one_run(
    args: argparse.Namespace, repo: Path, env: dict[str, str], target: str, workdir: Path
) -> dict[str, Any]:
    async with deployment(  # stops its processes and drops its database on the way out
        args.mode,
        workdir,
        pg_admin=args.pg_url,
        redis_url=args.redis_url,
        repo=repo,
        settings=env,
    ) as dep:
        start = secrets.randbelow(1_000_000) * 100 + 50_000_000  # pages no run has used
        if args.phase == "backlog":
            profile = None
            if args.profile is not None:
                args.profile.mkdir(parents=True, exist_ok=True)
                profile = args.profile / f"{secrets.token_hex(3)}-{repo.name}.txt"
            return await backlog(
                dep, target, start=start, size=args.size, within=args.timeout, profile=profile,
                formats=args.formats,
            )  # fmt: skip
        if args.phase != "e2e":
            return await steady_load(args, dep, target, start, paused=args.phase == "open-paused")
        return await end_to_end(
            dep,
            target,
            start=start,
            size=args.size,
            final_after=args.size,
            measured=dep.pids,
            sampler=Sampler(dep.worker_pid),
            within=args.timeout,
        )


async def steady_load(
    args: argparse.Namespace, dep: Deployment, target: str, start: int, *, paused: bool
) -> dict[str, Any]:
    """``args.warm_up`` seconds of warm-up (none if 0), then ``args.seconds`` at ``args.rate``
    POST/s; the jobs are drained after each (the worker is resumed first if ``paused``)."""
    final = used = 0
    run: dict[str, Any] = {}
    for seconds in [s for s in (args.warm_up, args.seconds) if s > 0]:
        if paused:
            await pause_worker(dep)
        try:
            speed = cpu_speed_ms()
            cpu0 = {name: tree_cpu_seconds(pid) for name, pid in dep.pids.items()}
            load = await loadgen(
                dep.helpers,
                "open",
                dep.api,
                target,
                start=start + used,
                rate=args.rate,
                duration=seconds,
                max_seconds=seconds + 30,
            )
            cpu1 = {name: tree_cpu_seconds(pid) for name, pid in dep.pids.items()}
        finally:
            if paused:
                signal_tree(dep.worker_pid, signal.SIGCONT)
        used += load["requests"]
        final += load["requests"] - load["errors"]
        await wait_final(dep.counter, final, Sampler(dep.worker_pid), within=args.timeout)
        run = load | {
            "cpu_ms_per_request": {
                name: (cpu1[name] - cpu0[name]) / max(1, load["requests"]) * 1000 for name in cpu0
            },
            "cpu_speed_ms": speed,
        }
    return run


def line(label: str, run: dict[str, Any]) -> str:
    if "p99_ms" in run:
        cpu = ", ".join(f"{name} {ms:.2f}" for name, ms in run["cpu_ms_per_request"].items())
        return (
            f"{label}: p50 {run['p50_ms']:6.1f} ms, p99 {run['p99_ms']:6.1f} ms, errors "
            f"{run['errors'] + run['dropped']}, CPU ms per request {cpu}, "
            f"cpu_speed {run['cpu_speed_ms']:.0f} ms"
        )
    cpu = ", ".join(f"{name} {s / run['size'] * 1000:.2f}" for name, s in run["cpu_s"].items())
    busy = f"event loop {run['loop_busy']:.0%} busy" if "loop_busy" in run else ""
    busy = busy or f"machine {run['machine_busy']:.0%} busy, load {run['load_average']:.1f}"
    return (
        f"{label}: {run['jobs_per_s']:6.0f} jobs/s, CPU ms per job {cpu}, {busy}, "
        f"cpu_speed {run['cpu_speed_ms']:.0f} ms"
    )


def summary(args: argparse.Namespace, results: dict[str, list[dict[str, Any]]]) -> None:
    if args.phase in ("e2e", "backlog"):
        for side, ref, sets in (("A", args.a, args.a_set), ("B", args.b, args.b_set)):
            runs = results[side]
            print(
                f"{side} ({ref} {' '.join(sets)}): "
                f"{mean(r['jobs_per_s'] for r in runs):.0f} jobs/s on average, CPU ms per job "
                f"{mean(r['cpu_ms_per_job'] for r in runs):.2f}"
            )
        a, b = ([r["jobs_per_s"] for r in results[side]] for side in ("A", "B"))
        print(f"B faster in {sum(y > x for x, y in zip(a, b, strict=True))} of {len(a)} pairs")
        return
    for side, ref, sets in (("A", args.a, args.a_set), ("B", args.b, args.b_set)):
        runs = results[side]
        print(
            f"{side} ({ref} {' '.join(sets)}): p99 median {median(r['p99_ms'] for r in runs):.1f}"
            f" ms, p50 median {median(r['p50_ms'] for r in runs):.1f} ms"
        )
    a, b = ([r["p99_ms"] for r in results[side]] for side in ("A", "B"))
    print(f"B's p99 lower in {sum(y < x for x, y in zip(a, b, strict=True))} of {len(a)} pairs")


async def pairs(
    args: argparse.Namespace, envs: dict[str, dict[str, str]], workdir: Path
) -> dict[str, list[dict[str, Any]]]:
    """``args.pairs`` runs of each side, alternated, on one target site."""
    results: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    async with contextlib.AsyncExitStack() as stack:
        args.pg_url = await stack.enter_async_context(postgres(args.pg_url))
        args.redis_url = await stack.enter_async_context(redis(args.redis_url))
        trees = {
            "A": stack.enter_context(checkout(args.a, workdir)),
            "B": stack.enter_context(checkout(args.b, workdir)),
        }
        processes = await stack.enter_async_context(ProcessManager(workdir / "site"))
        target = await stack.enter_async_context(target_site(processes))
        for pair in range(1, args.pairs + 1):
            for side in ("A", "B"):
                run = await one_run(args, trees[side], envs[side], target, workdir)
                results[side].append(run)
                print(line(f"pair {pair} {side}", run), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.ab",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("a", help="a git ref, or . for this checkout as it is")
    parser.add_argument("b", help="a git ref, or . for this checkout as it is")
    parser.add_argument("--a-set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--b-set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--mode", choices=("production", "embedded"), default="production")
    parser.add_argument("--phase", choices=("e2e", "backlog", "open", "open-paused"), default="e2e")
    parser.add_argument(
        "--profile", type=Path, help="backlog: a py-spy recording of each run's worker, here"
    )
    parser.add_argument(
        "--formats", help="backlog: the jobs' formats, e.g. metadata (default: each version's)"
    )
    parser.add_argument("--size", type=int, default=5000, help="pages per run (default 5000)")
    parser.add_argument("--rate", type=float, default=500.0, help="open: POST/s (default 500)")
    parser.add_argument("--seconds", type=float, default=8.0, help="open: seconds (default 8)")
    parser.add_argument(
        "--warm-up", type=float, default=2.0, help="open: seconds of load not timed (default 2)"
    )
    parser.add_argument("--pg-url", help="an admin URL (default: found or started as the tests do)")
    parser.add_argument("--redis-url", help="(default: found or started as the tests do)")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    if args.phase == "open-paused" and args.mode == "embedded":
        parser.error("open-paused stops the worker's process: in embedded mode that is the API")
    envs = {"A": settings(args.a_set), "B": settings(args.b_set)}

    workdir = Path(tempfile.mkdtemp(prefix="tc_ab_"))
    try:
        results = asyncio.run(pairs(args, envs, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    summary(args, results)


if __name__ == "__main__":
    main()
