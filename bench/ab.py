"""Alternated pairs of the end-to-end phase, two variants: ``python -m bench.ab A B``.

A variant is a git ref (checked out into a temporary worktree) or ``.`` for this checkout as it
is, uncommitted changes included; ``--a-set`` / ``--b-set KEY=VALUE`` add ``TASKCRAWLER_*``
settings to one side. Each pair runs A then B, each on a fresh deployment (its own database and
Redis prefix), ``--size`` new pages through the batch endpoint, timed until every job is final,
as ``bench.run`` does. Prints every run (jobs/s, CPU ms per job by process, how busy the worker's
event loop was, ``cpu_speed``) and, at the end, the means and how many pairs each side won.

This machine's speed drifts within minutes: one run of each tells nothing, a few alternated
pairs do. Examples::

    python -m bench.ab HEAD~1 HEAD --pairs 4
    python -m bench.ab . . --b-set TASKCRAWLER_ARCHIVE_PAGES=false --mode embedded
"""

from __future__ import annotations

import argparse
import contextlib
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from statistics import mean
from typing import Any

from bench.run import REPO, Procs, Sampler, deployment, end_to_end, target_server


@contextlib.contextmanager
def checkout(ref: str, workdir: Path) -> Iterator[Path]:
    """``ref`` in a temporary git worktree; ``.`` is this checkout itself."""
    if ref == ".":
        yield REPO
        return
    path = workdir / f"tree_{secrets.token_hex(4)}"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "--quiet", str(path), ref], cwd=REPO, check=True
    )
    try:
        yield path
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO, check=False)


def settings(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.startswith("TASKCRAWLER_"):
            raise SystemExit(f"expected TASKCRAWLER_KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


def one_run(
    args: argparse.Namespace, repo: Path, env: dict[str, str], target: str, workdir: Path
) -> dict[str, Any]:
    with deployment(  # stops its processes and drops its database on the way out
        args.mode,
        Procs(workdir),
        workdir,
        pg_admin=args.pg_url,
        redis_url=args.redis_url,
        repo=repo,
        settings=env,
    ) as dep:
        start = secrets.randbelow(1_000_000) * 100 + 50_000_000  # pages no run has used
        return end_to_end(
            dep,
            target,
            start=start,
            size=args.size,
            final_after=args.size,
            measured=dep.pids,
            sampler=Sampler(dep.worker_pid),
            timeout=args.timeout,
        )


def line(label: str, run: dict[str, Any]) -> str:
    cpu = ", ".join(f"{name} {s / run['size'] * 1000:.2f}" for name, s in run["cpu_s"].items())
    return (
        f"{label}: {run['jobs_per_s']:6.0f} jobs/s, CPU ms per job {cpu}, event loop "
        f"{run['loop_busy']:.0%} busy, cpu_speed {run['cpu_speed_ms']:.0f} ms"
    )


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
    parser.add_argument("--size", type=int, default=5000, help="pages per run (default 5000)")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    envs = {"A": settings(args.a_set), "B": settings(args.b_set)}

    workdir = Path(tempfile.mkdtemp(prefix="tc_ab_"))
    results: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    try:
        with (
            checkout(args.a, workdir) as tree_a,
            checkout(args.b, workdir) as tree_b,
            target_server(Procs(workdir)) as target,
        ):
            trees = {"A": tree_a, "B": tree_b}
            for pair in range(1, args.pairs + 1):
                for side in ("A", "B"):
                    run = one_run(args, trees[side], envs[side], target, workdir)
                    results[side].append(run)
                    print(line(f"pair {pair} {side}", run), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for side, ref, sets in (("A", args.a, args.a_set), ("B", args.b, args.b_set)):
        runs = results[side]
        print(
            f"{side} ({ref} {' '.join(sets)}): {mean(r['jobs_per_s'] for r in runs):.0f} jobs/s "
            f"on average, loop {mean(r['loop_busy'] for r in runs):.0%} busy"
        )
    a, b = ([r["jobs_per_s"] for r in results[side]] for side in ("A", "B"))
    print(f"B faster in {sum(y > x for x, y in zip(a, b, strict=True))} of {len(a)} pairs")


if __name__ == "__main__":
    main()
