"""What an idle TaskCrawler costs a second: ``python -m bench.idle_cpu --mode worker|serve``.

``worker``: ``taskcrawler worker`` on a fresh PostgreSQL database (created, migrated, dropped
after) and Redis under a prefix of its own. ``serve``: ``taskcrawler serve`` (embedded: its API
and its worker process) on a fresh SQLite file. No job is ever submitted: every CPU second is
the background loops'. The process is left ``--settle`` seconds after it is up (``serve``'s
worker process starts after its API answers), then its CPU and its descendants' (utime + stime
from /proc) is read over ``--seconds``. ``--checkout`` runs another checkout's code (put first
on ``PYTHONPATH``; the process runs in a temporary folder, so that neither the current folder
nor a ``.env`` there is imported) with this interpreter, to alternate two versions in the same
hour. Prints one JSON line per run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from subprocess import DEVNULL

from bench.measure import tree_cpu_seconds
from tests.support.processes import free_port

POSTGRES = "postgresql://postgres@127.0.0.1:5432"
REDIS = "redis://127.0.0.1:6379/0"
READY_WITHIN_SECONDS = 60.0


def _env(checkout: Path | None, **settings: str) -> dict[str, str]:
    env = {**os.environ, "TASKCRAWLER_LOG_LEVEL": "WARNING", **settings}
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    return env


def _taskcrawler(*args: str) -> list[str]:
    return [sys.executable, "-m", "taskcrawler", *args]


def _healthy(url: str) -> None:
    deadline = time.monotonic() + READY_WITHIN_SECONDS
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} not ready within {READY_WITHIN_SECONDS} s")


def _measure(process: subprocess.Popen[bytes], settle: float, seconds: float) -> float:
    """CPU milliseconds a second of ``process`` and its descendants, once settled."""
    time.sleep(settle)
    if process.poll() is not None:
        raise RuntimeError(f"the process exited with {process.returncode}")
    before, started = tree_cpu_seconds(process.pid), time.monotonic()
    time.sleep(seconds)
    after, ended = tree_cpu_seconds(process.pid), time.monotonic()
    if process.poll() is not None:
        raise RuntimeError(f"the process exited with {process.returncode}")
    return (after - before) * 1000 / (ended - started)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def idle_worker(checkout: Path | None, settle: float, seconds: float) -> float:
    database = f"idle_cpu_{uuid.uuid4().hex[:12]}"
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", database], check=True)
    env = _env(
        checkout,
        TASKCRAWLER_DATABASE_URL=f"{POSTGRES}/{database}",
        TASKCRAWLER_REDIS_URL=REDIS,
        TASKCRAWLER_REDIS_PREFIX=database,
        TASKCRAWLER_WORKER_METRICS_PORT=str(free_port()),
    )
    try:
        subprocess.run(
            _taskcrawler("migrate"), env=env, check=True, stdout=DEVNULL, cwd=tempfile.gettempdir()
        )
        process = subprocess.Popen(
            _taskcrawler("worker"), env=env, stdout=DEVNULL, cwd=tempfile.gettempdir()
        )
        try:
            return _measure(process, settle, seconds)
        finally:
            _stop(process)
    finally:
        subprocess.run(
            ["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--force", database], check=False
        )


def idle_serve(checkout: Path | None, settle: float, seconds: float) -> float:
    with tempfile.TemporaryDirectory(prefix="idle-cpu-") as folder:
        port = free_port()
        env = _env(checkout, TASKCRAWLER_DATABASE_URL=f"sqlite+aiosqlite:///{folder}/idle.db")
        process = subprocess.Popen(
            _taskcrawler("serve", "--port", str(port)), env=env, stdout=DEVNULL, cwd=folder
        )
        try:
            _healthy(f"http://127.0.0.1:{port}/healthz")
            return _measure(process, settle, seconds)
        finally:
            _stop(process)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.idle_cpu", description=__doc__)
    parser.add_argument("--mode", choices=("worker", "serve"), required=True)
    parser.add_argument("--checkout", type=Path, help="run this checkout's code")
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    run = idle_worker if args.mode == "worker" else idle_serve
    cpu_ms = run(args.checkout, args.settle, args.seconds)
    load = os.getloadavg()[0]
    checkout = str(args.checkout or Path.cwd())
    result = {"mode": args.mode, "checkout": checkout, "cpu_ms_per_s": round(cpu_ms, 1)}
    print(json.dumps({**result, "load1": round(load, 2)}))


if __name__ == "__main__":
    main()
