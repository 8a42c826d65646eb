"""The API process's CPU per single POST in production mode, and where it goes:
``python -m bench.api_cpu``.

Each round runs, one right after the other, every version (this checkout, and ``--ref``) as
``bench.ratios`` runs it (``taskcrawler api`` + ``taskcrawler worker`` on PostgreSQL + Redis,
single POSTs from 64 connections by ``bench.loadgen closed`` while the worker drains what they
create), then the bare FastAPI endpoint (``bench.limits bareapi``) the same way. For each it
reads the server process's CPU (``/proc``) around the timed POSTs: CPU per POST does not move
with the machine's load as much as POST/s does, and on two shared cores it is what bounds
POST/s. With ``--profile DIR`` the API process runs under ``bench/api_sampler`` (a sampler
of the process's CPU, one Python stack a millisecond) and each run's stacks are written to
DIR; ``--top`` prints the functions that take the most of them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.ab import alternated_rounds, production_versions
from bench.deployment import deployment, loadgen, target_site
from bench.ratios import bare_endpoint
from tests.support.processes import ProcessManager

SAMPLER = Path(__file__).parent / "api_sampler"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` so far (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def run_queue_seconds(pid: int) -> float:
    """How long ``pid``'s threads have waited for a core while runnable (``schedstat``)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        total += int((task / "schedstat").read_text().split()[1])
    return total / 1e9


async def timed_posts(
    helpers: ProcessManager, api: str, target: str, pid: int, start: int, posts: int
) -> dict[str, float]:
    """``posts`` single POSTs from 64 connections: POST/s and ``pid``'s CPU per POST."""
    before, waited_before = cpu_seconds(pid), run_queue_seconds(pid)
    result = await loadgen(
        helpers, "closed", api, target, start=start, count=posts, concurrency=64, max_seconds=120
    )
    used, waited = cpu_seconds(pid) - before, run_queue_seconds(pid) - waited_before
    requests = max(result["requests"], 1)
    return {
        "post_per_s": result["per_second"],
        "errors": result["errors"],
        "cpu_us_per_post": used / requests * 1e6,
        "run_queue_us_per_post": waited / requests * 1e6,
    }


async def service_run(
    args: argparse.Namespace, label: str, repo: Path, target: str, workdir: Path
) -> dict[str, Any]:
    start = secrets.randbelow(1_000_000) * 100 + 100_000_000
    samples = workdir / f"samples-{label}-{secrets.token_hex(3)}.txt"
    settings = {}
    if args.profile:
        settings = {"PYTHONPATH": f"{SAMPLER}:{repo}", "TASKCRAWLER_BENCH_SAMPLES": str(samples)}
    async with deployment(
        "production", workdir, pg_admin=args.pg_url, redis_url=args.redis_url, repo=repo,
        settings=settings,
    ) as dep:  # fmt: skip
        api_pid = dep.pids["api"]
        # Warm: connections, prepared statements, first-request caches.
        await loadgen(
            dep.helpers, "closed", dep.api, target, start=start, count=args.warm_up,
            concurrency=64, max_seconds=60,
        )  # fmt: skip
        if args.profile:
            os.kill(api_pid, signal.SIGUSR1)
        result = await timed_posts(dep.helpers, dep.api, target, api_pid, start + 10**6, args.posts)
        if args.profile:
            os.kill(api_pid, signal.SIGUSR2)
            await asyncio.sleep(1.0)
            kept = args.profile / f"{label}-{secrets.token_hex(3)}.txt"
            shutil.copy(samples, kept)
            result["samples"] = str(kept)
    return result


async def one_round(
    args: argparse.Namespace, trees: dict[str, Path], target: str, workdir: Path,
    helpers: ProcessManager,
) -> dict[str, Any]:  # fmt: skip
    load = os.getloadavg()[0]
    out: dict[str, Any] = {"load_average": load}
    for label, repo in trees.items():
        out[label] = await service_run(args, label, repo, target, workdir)
    async with bare_endpoint(helpers) as bare:
        bare_pid = helpers.started[-1].pid
        start = secrets.randbelow(1_000_000) * 100 + 300_000_000
        await loadgen(
            helpers, "closed", bare, target, start=start, count=args.warm_up, concurrency=64,
            max_seconds=60,
        )  # fmt: skip
        out["bare"] = await timed_posts(helpers, bare, target, bare_pid, start + 10**6, args.posts)
    return out


def line(label: str, r: dict[str, Any]) -> str:
    bare = r["bare"]
    parts = [f"{label} (load {r['load_average']:.1f})"]
    for name, run in r.items():
        if isinstance(run, dict) and name != "bare":
            parts.append(
                f"{name}: {run['post_per_s']:.0f} POST/s "
                f"({run['post_per_s'] / bare['post_per_s']:.2f} of bare), "
                f"API CPU {run['cpu_us_per_post']:.0f} µs/POST "
                f"({run['cpu_us_per_post'] / bare['cpu_us_per_post']:.2f}x bare), waited for a "
                f"core {run['run_queue_us_per_post']:.0f} µs/POST, errors {run['errors']}"
            )
    parts.append(
        f"bare FastAPI: {bare['post_per_s']:.0f} POST/s, {bare['cpu_us_per_post']:.0f} µs/POST, "
        f"waited for a core {bare['run_queue_us_per_post']:.0f} µs/POST"
    )
    return "; ".join(parts)


def top(path: Path, count: int) -> str:
    """The functions with the most samples: self, and anywhere on the stack (inclusive)."""
    own: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    total = 0
    for row in path.read_text().splitlines():
        stack, _, n = row.rpartition(" ")
        frames = stack.split(";")
        total += int(n)
        own[frames[-1]] += int(n)
        for frame in set(frames):
            anywhere[frame] += int(n)
    lines = [f"{path.name}: {total} samples (1 ms of CPU each)", "self:"]
    lines += [f"  {n / total:6.1%} {name}" for name, n in own.most_common(count)]
    lines.append("inclusive:")
    lines += [f"  {n / total:6.1%} {name}" for name, n in anywhere.most_common(count)]
    return "\n".join(lines)


async def main_async(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    async with contextlib.AsyncExitStack() as stack:
        trees = await production_versions(stack, args, workdir)
        helpers = await stack.enter_async_context(ProcessManager(workdir / "helpers"))
        target = await stack.enter_async_context(target_site(helpers))
        # Each round runs every version then the bare endpoint; "versions" here is one round.
        return await alternated_rounds(
            args.rounds, {"round": trees},
            lambda t: one_round(args, t, target, workdir, helpers), line,
        )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.api_cpu",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--posts", type=int, default=3000, help="timed single POSTs")
    parser.add_argument("--warm-up", type=int, default=500, help="POSTs before the timed ones")
    parser.add_argument("--ref", help="also run this version (a git ref) in each round")
    parser.add_argument("--profile", type=Path, help="sample the API process; stacks go here")
    parser.add_argument("--top", type=int, default=0, help="print the N costliest functions")
    parser.add_argument("--pg-url", help="an admin URL (default: found or started as the tests do)")
    parser.add_argument("--redis-url", help="(default: found or started as the tests do)")
    args = parser.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="tc_api_cpu_"))
    try:
        results = asyncio.run(main_async(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.top:
        for result in results:
            for run in result.values():
                if isinstance(run, dict) and "samples" in run:
                    print(top(Path(run["samples"]), args.top))


if __name__ == "__main__":
    main()
