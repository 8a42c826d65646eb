"""Claims per page under default politeness: ``python -m bench.claims [--ref REF]``.

A claim that fetches nothing (its host had no free slot, so the job was deferred and claimed
again later) costs the database a claim and a write. Production mode (PostgreSQL + Redis, the
default ``taskcrawler worker``), the per-host limit left at its default (8 at once), on a
target whose ``/s/`` pages answer after ``--slow`` seconds. Three scenarios, each on a fresh
deployment, the jobs queued before the worker is let go:

- ``one-host``: ``--pages`` slow pages of one host;
- ``many-hosts``: as many slow pages over ``--hosts`` hosts (loopback addresses);
- ``mixed``: the slow pages of one host, then as many fast pages of the other hosts queued
  behind them: the fast pages must not wait for the slow host (their finish is reported).

Claims are counted from the workers' own counts of what each claim ended in (completed,
failed, retried, deferred: one each), so the same figure comes from a version without a claim
counter. ``--ref`` runs another version (a git ref, checked out in a temporary worktree) with
the same scenarios, one after the other, for a before/after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import secrets
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench.ab import production_versions, settings
from bench.deployment import Deployment, deployment, loadgen, target_site
from bench.measure import descendants
from bench.phases import pause_worker, signal_tree
from tests.support.processes import ProcessManager

#: What a politeness-bound deployment runs with: the defaults, not the throughput benchmark's.
POLITE = {"TASKCRAWLER_HOST_CONCURRENCY": "8", "TASKCRAWLER_HOST_WAIT_SECONDS": "1"}
TRANSITIONS = re.compile(
    r"^taskcrawler_jobs_(completed|failed|retried|deferred)_total(?:\{[^}]*\})? (\S+)$", re.M
)


async def transitions(dep: Deployment) -> dict[str, float]:
    """Every worker process's counts of what its claims ended in, summed."""
    base = int(dep.env["TASKCRAWLER_WORKER_METRICS_PORT"])
    loops = [pid for pid in descendants(dep.worker_pid) if _is_worker(pid)] or [dep.worker_pid]
    totals: dict[str, float] = {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        for index in range(len(loops)):
            async with http.get(f"http://127.0.0.1:{base + index}/metrics") as response:
                text = await response.text()
            for kind, value in TRANSITIONS.findall(text):
                totals[kind] = totals.get(kind, 0.0) + float(value)
    return totals


def _is_worker(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return "embedded_worker" in Path(f"/proc/{pid}/cmdline").read_text()
    return False


async def queue_then_drain(
    dep: Deployment, target: str, batches: list[dict[str, Any]], *, within: float
) -> dict[str, Any]:
    """Queue ``batches`` (loadgen batch options) with the worker stopped, let it go, and time
    each batch's last job from then."""
    await pause_worker(dep)
    try:
        for batch in batches:
            await loadgen(dep.helpers, "batch", dep.api, target, max_seconds=within, **batch)
    finally:
        signal_tree(dep.worker_pid, signal.SIGCONT)
    began = time.monotonic()
    total = sum(batch["count"] for batch in batches)
    finished: dict[str, float] = {}
    while len(finished) < len(batches):
        if time.monotonic() - began > within:
            raise RuntimeError(f"not done within {within} s: {await dep.counter.counts()}")
        for batch in batches:
            label = f"{batch['path']}:{batch['start']}"
            if label in finished:
                continue
            low, high = batch["start"], batch["start"] + batch["count"]
            done = await dep.counter.counts(
                "SELECT 'n', count(*) FROM jobs WHERE status IN ('COMPLETED','FAILED')"
                f" AND url ~ '/{batch['path']}/[0-9]+$'"
                f" AND substring(url from '([0-9]+)$')::bigint BETWEEN {low} AND {high - 1}"
            )
            if done.get("n", 0) >= batch["count"]:
                finished[label] = time.monotonic() - began
        await asyncio.sleep(0.1)
    counts = await transitions(dep)
    claims = sum(counts.values())
    return {
        "pages": total,
        "seconds": max(finished.values()),
        "finished_s": list(finished.values()),
        "claims": claims,
        "claims_per_page": claims / total,
        "deferred": counts.get("deferred", 0.0),
        "failed_by_code": await dep.counter.failures(),
    }


async def scenario(
    name: str, args: argparse.Namespace, repo: Path, workdir: Path, target: str
) -> dict[str, Any]:
    start = secrets.randbelow(1_000_000) * 100 + 70_000_000
    slow = {"path": "s", "start": start, "count": args.pages, "hosts": 1}
    batches = {
        "one-host": [slow],
        "many-hosts": [slow | {"hosts": args.hosts}],
        "mixed": [slow, {"path": "p", "start": start + args.pages, "count": args.pages}],
    }[name]
    if name == "mixed":  # the fast pages on the other hosts only
        batches[1] |= {"hosts": args.hosts - 1, "first_host": 2}
    async with deployment(
        "production", workdir, pg_admin=args.pg_url, redis_url=args.redis_url, repo=repo,
        settings=POLITE | args.settings,
    ) as dep:  # fmt: skip
        return await queue_then_drain(dep, target, batches, within=args.timeout)


async def main_async(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    results = []
    async with contextlib.AsyncExitStack() as stack:
        trees = await production_versions(stack, args, workdir)
        processes = await stack.enter_async_context(ProcessManager(workdir / "site"))
        options = ("--hosts", str(args.hosts), "--slow", str(args.slow))
        target = await stack.enter_async_context(target_site(processes, *options))
        for name in args.scenarios.split(","):
            for label, tree in trees.items():
                run = await scenario(name, args, tree, workdir, target)
                run |= {"scenario": name, "version": label}
                results.append(run)
                print(
                    f"{name:10s} {label:10s} {run['pages']:5d} pages in {run['seconds']:6.1f} s "
                    f"(each batch: {', '.join(f'{s:.1f}' for s in run['finished_s'])} s), "
                    f"{run['claims']:6.0f} claims, {run['claims_per_page']:.2f} per page, "
                    f"{run['deferred']:.0f} deferred",
                    flush=True,
                )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.claims",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--hosts", type=int, default=50, help="hosts of many-hosts and mixed")
    parser.add_argument("--slow", type=float, default=0.2, help="seconds a slow page takes")
    parser.add_argument("--scenarios", default="one-host,many-hosts,mixed")
    parser.add_argument("--ref", help="also run this version (a git ref) first, for a before")
    parser.add_argument("--pg-url", help="an admin URL (default: found or started as the tests do)")
    parser.add_argument("--redis-url", help="(default: found or started as the tests do)")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--set", action="append", default=[], metavar="TASKCRAWLER_KEY=VALUE")
    args = parser.parse_args()
    args.settings = settings(args.set)
    workdir = Path(tempfile.mkdtemp(prefix="tc_claims_"))
    try:
        results = asyncio.run(main_async(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
