"""The service against its yardsticks, as ratios taken in one run: ``python -m bench.ratios``.

Each round measures, one right after the other on the same pages and the same target:

1. a bare aiohttp fetch loop (``bench.limits fetch``): pages/s;
2. the default deployment (``--mode``; production is ``taskcrawler api`` + one ``taskcrawler
   worker`` with its default processes, on PostgreSQL + Redis) draining ``--size`` queued jobs:
   jobs/s, and its ratio to (1);
3. a bare FastAPI endpoint (``bench.limits bareapi``), single POSTs from 64 connections: POST/s;
4. the deployment's API the same way while its worker drains what they create: POST/s, and its
   ratio to (3);
5. single POSTs offered open-loop at ``--rate`` for ``--seconds`` (first as ``bench.run`` does,
   the worker idle but for the jobs the load creates; then as a user of a busy service sees
   it), by a client in its own
   process, each sent on schedule and timed from then, starting right after ``--backlog`` jobs
   were queued, so the worker is busy draining them the whole time: p50/p99/max, against the
   same load on the bare endpoint. This is what a user of a busy ``serve`` sees. Timed from
   the first request (``--warm-up 0``), the figure includes a cold start too.

Rounds alternate with whatever else the machine does: the ratios of one round are the figures,
taken within seconds of each other. The load average is printed with each round.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.ab import alternated_rounds, production_versions, settings
from bench.deployment import (
    Sampler,
    bench_command,
    deployment,
    loadgen,
    run_json,
    target_site,
    wait_final,
)
from bench.phases import backlog
from tests.support.processes import ProcessManager
from tests.support.services import free_port


async def bare_fetch(processes: ProcessManager, target: str, start: int, size: int) -> float:
    args = ["fetch", "--target", target, "--count", str(size), "--start", str(start)]
    result = await run_json(processes, "limits", args, within=300)
    return float(result["per_second"])


@contextlib.asynccontextmanager
async def bare_endpoint(processes: ProcessManager) -> Any:
    port = free_port()
    server = processes.start_command(
        bench_command("limits", "bareapi", "--port", str(port)), name="bare-api"
    )
    await server.wait_for_port(port, within=30)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()


async def closed(processes: ProcessManager, api: str, target: str, start: int, posts: int) -> Any:
    return await loadgen(
        processes, "closed", api, target, start=start, count=posts, concurrency=64, max_seconds=60
    )


async def open_loop(
    processes: ProcessManager, api: str, target: str, start: int, args: argparse.Namespace
) -> Any:
    if args.warm_up > 0:
        await loadgen(
            processes, "open", api, target, start=start + 9_000_000, rate=args.rate,
            duration=args.warm_up, max_seconds=args.warm_up + 30,
        )  # fmt: skip
    return await loadgen(
        processes, "open", api, target, start=start, rate=args.rate, duration=args.seconds,
        max_seconds=args.seconds + 30,
    )  # fmt: skip


async def service_round(
    args: argparse.Namespace, repo: Path, target: str, workdir: Path, start: int
) -> dict[str, Any]:
    async with deployment(
        args.mode, workdir, pg_admin=args.pg_url, redis_url=args.redis_url, repo=repo,
        settings=args.settings,
    ) as dep:  # fmt: skip
        drained = await backlog(dep, target, start=start, size=args.size, within=args.timeout)
        final = args.size
        posts = await closed(dep.helpers, dep.api, target, start + args.size, args.posts)
        final += posts["requests"] - posts["errors"]
        await wait_final(dep.counter, final, Sampler(dep.worker_pid), within=args.timeout)
        # As bench.run and bench.ab measure it: warmed up, the worker idle but for what the
        # load itself creates.
        quiet = await loadgen(
            dep.helpers, "open", dep.api, target, start=start + 4_000_000, rate=args.rate,
            duration=args.seconds, max_seconds=args.seconds + 30,
        )  # fmt: skip
        final += quiet["requests"] - quiet["errors"]
        await wait_final(dep.counter, final, Sampler(dep.worker_pid), within=args.timeout)
        # A backlog for the worker to drain while the open-loop load runs.
        await loadgen(
            dep.helpers, "batch", dep.api, target, start=start + 2_000_000, count=args.backlog,
            max_seconds=args.timeout,
        )  # fmt: skip
        latency = await open_loop(dep.helpers, dep.api, target, start + 3_000_000, args)
        pending = (await dep.counter.counts()).get("PENDING", 0)
        return {
            "jobs_per_s": drained["jobs_per_s"],
            "cpu_ms_per_job": drained["cpu_ms_per_job"],
            "post_per_s": posts["per_second"],
            "post_errors": posts["errors"],
            "open": latency,
            "open_quiet": quiet,
            "backlog_left": pending,
        }


async def one_round(
    args: argparse.Namespace, repo: Path, target: str, workdir: Path, helpers: ProcessManager
) -> dict[str, Any]:
    start = secrets.randbelow(1_000_000) * 100 + 100_000_000
    load = os.getloadavg()[0]
    fetch = await bare_fetch(helpers, target, start + 5_000_000, args.size)
    service = await service_round(args, repo, target, workdir, start)
    async with bare_endpoint(helpers) as bare:
        bare_posts = await closed(helpers, bare, target, start + 6_000_000, args.posts)
        bare_open = await open_loop(helpers, bare, target, start + 7_000_000, args)
    return service | {
        "load_average": load,
        "fetch_pages_per_s": fetch,
        "bare_post_per_s": bare_posts["per_second"],
        "bare_open": bare_open,
        "jobs_vs_fetch": service["jobs_per_s"] / fetch,
        "posts_vs_bare": service["post_per_s"] / bare_posts["per_second"],
    }


def line(label: str, r: dict[str, Any]) -> str:
    o, b = r["open"], r["bare_open"]
    return (
        f"{label} (load {r['load_average']:.1f}): {r['jobs_per_s']:.0f} jobs/s / bare fetch "
        f"{r['fetch_pages_per_s']:.0f} pages/s = {r['jobs_vs_fetch']:.3f}; "
        f"{r['post_per_s']:.0f} POST/s / bare FastAPI {r['bare_post_per_s']:.0f} = "
        f"{r['posts_vs_bare']:.2f}; at {o['offered_per_second']:.0f} POST/s offered while "
        f"draining: p50 {o['p50_ms']:.1f} p99 {o['p99_ms']:.1f} max {o['max_ms']:.0f} ms, "
        f"errors+dropped {o['errors'] + o['dropped']} (bare: p99 {b['p99_ms']:.1f} ms; the worker "
        f"idle but for the load's jobs: p99 {r['open_quiet']['p99_ms']:.1f} ms); "
        f"draining, p99 after the first second {o.get('p99_after_first_second_ms', 0):.1f} ms, "
        f"by second {o.get('p99_ms_by_second')}; "
        f"backlog left {r['backlog_left']}"
    )


async def main_async(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    async with contextlib.AsyncExitStack() as stack:
        trees = await production_versions(stack, args, workdir)
        helpers = await stack.enter_async_context(ProcessManager(workdir / "helpers"))
        target = await stack.enter_async_context(target_site(helpers))
        return await alternated_rounds(
            args.rounds, trees, lambda tree: one_round(args, tree, target, workdir, helpers), line
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.ratios",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mode", choices=("production", "embedded"), default="production")
    parser.add_argument("--size", type=int, default=5000, help="jobs drained (and pages fetched)")
    parser.add_argument("--posts", type=int, default=5000, help="single POSTs at 64 connections")
    parser.add_argument("--backlog", type=int, default=5000, help="queued before the open load")
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--warm-up", type=float, default=0.0, help="seconds of load not timed")
    parser.add_argument("--ref", help="also run this version (a git ref) in each round")
    parser.add_argument("--set", action="append", default=[], metavar="TASKCRAWLER_KEY=VALUE")
    parser.add_argument("--pg-url", help="an admin URL (default: found or started as the tests do)")
    parser.add_argument("--redis-url", help="(default: found or started as the tests do)")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    args.settings = settings(args.set)
    workdir = Path(tempfile.mkdtemp(prefix="tc_ratios_"))
    try:
        results = asyncio.run(main_async(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
