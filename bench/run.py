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

PostgreSQL and Redis are found or started as the tests find them (tests/support/services.py)
unless ``--pg-url`` / ``--redis-url`` name them. Prints a table and writes it to a new dated
file in ``bench/results/`` (or ``--out``); the notes written about runs are
dated files there too, and bench/RESULTS.md holds the latest figures.

The modules: ``phases`` (what is measured), ``deployment`` (the processes measured),
``measure`` (/proc readings), ``report`` (the tables); ``loadgen``, ``limits``, ``target`` and
``scrapy_run`` run as processes of their own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.deployment import postgres, redis, target_site
from bench.measure import machine, versions
from bench.phases import ModeResult, run_limits, run_mode
from bench.report import report
from tests.support.processes import REPO_ROOT, ProcessManager

RESULTS = REPO_ROOT / "bench" / "results"


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
        help="an admin URL: the benchmark creates and drops its own database "
        "(default: found or started as the tests do)",
    )
    parser.add_argument("--redis-url", help="(default: found or started as the tests do)")
    parser.add_argument("--rate", type=float, default=500.0, help="offered POST/s (default 500)")
    parser.add_argument("--posts", type=int, help="single POSTs at 64 clients (10000; quick 2000)")
    parser.add_argument(
        "--open-seconds", type=float, help="length of the steady-load phase (10; quick 3)"
    )
    parser.add_argument(
        "--insert-seconds",
        type=float,
        help="length of each single-commit insert loop of the limits (3; quick 1)",
    )
    parser.add_argument(
        "--out", type=Path, help="write the report here (default: a new file in bench/results/)"
    )
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--timeout", type=float, default=600.0, help="bound of every phase")
    parser.add_argument("--keep-logs", action="store_true", help="keep the process logs")
    cfg = parser.parse_args(argv)
    cfg.posts = cfg.posts or (2000 if cfg.quick else 10000)
    cfg.post_seconds = 10.0 if cfg.quick else 30.0
    cfg.open_seconds = cfg.open_seconds or (3.0 if cfg.quick else 10.0)
    cfg.insert_seconds = cfg.insert_seconds or (1.0 if cfg.quick else 3.0)
    cfg.page_base = secrets.randbelow(1_000_000) * 100
    if cfg.size < 10:
        parser.error("--size must be at least 10")
    if cfg.repeat < 1:
        parser.error("--repeat must be at least 1")
    return cfg


def code_version() -> str:
    """The commit measured, and whether the working tree differed from it."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return f"{commit} with uncommitted changes" if git("status", "--porcelain") else commit


def report_path() -> Path:
    """A new file for this run's report: runs never overwrite each other, nor the notes."""
    stamp = time.strftime("%Y-%m-%d-%H%M", time.gmtime())
    path = RESULTS / f"{stamp}.md"
    n = 1
    while path.exists():
        n += 1
        path = RESULTS / f"{stamp}-{n}.md"
    return path


async def measure_all(
    cfg: argparse.Namespace, workdir: Path
) -> tuple[dict[str, str], dict[str, Any] | None, dict[str, ModeResult]]:
    modes: dict[str, ModeResult] = {}
    limits = None
    async with postgres(cfg.pg_url) as pg_admin, redis(cfg.redis_url) as redis_url:
        info = machine()
        with contextlib.suppress(Exception):
            info |= await versions(pg_admin, redis_url)
        print(f"machine: {info}", flush=True)
        async with (
            ProcessManager(workdir / "site") as processes,
            target_site(processes) as target,
        ):
            if not cfg.no_limits:
                print("limits:", flush=True)
                limits = await run_limits(cfg, target, workdir, pg_admin)
            for mode in [m.strip() for m in cfg.modes.split(",") if m.strip()]:
                print(f"{mode}:", flush=True)
                # What the previous mode wrote (the embedded run left 128-143 MB dirty in one
                # run) would otherwise be written back while this mode is measured, probably
                # with every commit's flush waiting behind it: flush it first.
                os.sync()
                modes[mode] = await run_mode(mode, cfg, target, workdir, pg_admin, redis_url)
    return info, limits, modes


def main(argv: Sequence[str] | None = None) -> int:
    cfg = parse_args(argv)
    command = "python -m bench.run " + " ".join(sys.argv[1:] if argv is None else argv)
    workdir = Path(tempfile.mkdtemp(prefix="tc_bench_"))
    try:
        info, limits, modes = asyncio.run(measure_all(cfg, workdir))
    except BaseException:
        print(f"logs kept in {workdir}", file=sys.stderr)
        raise
    info = {"code": code_version()} | info
    text = report(cfg, info, limits, modes, command)
    out = cfg.out or report_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    if cfg.json:
        raw = {
            "machine": info,
            "limits": limits,
            "modes": {name: vars(r) for name, r in modes.items()},
        }
        cfg.json.write_text(json.dumps(raw, indent=2, default=str))
    print()
    print(text)
    print(f"written to {out}")
    if not cfg.keep_logs:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"logs in {workdir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
