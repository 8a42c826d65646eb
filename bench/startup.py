"""What a TaskCrawler process costs to start: ``python -m bench.startup [--runs N]``.

Starts ``taskcrawler api`` and ``taskcrawler serve`` (its API and its worker process) on a fresh
SQLite file each time, polls ``/healthz`` until it answers 200, and reads the CPU the process and
its children have used by then from ``/proc`` (Linux), and again once it has settled
(``SETTLE_SECONDS`` later: ``serve`` answers before its worker process has started). Every test
that starts a process, every restart and every CLI call pays this, so it is the figure to watch
when imports grow. Prints one JSON line per command: medians of seconds to ready, CPU seconds to
ready and CPU seconds once settled.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from subprocess import DEVNULL

import aiohttp

from bench.measure import tree_cpu_seconds
from tests.support.processes import free_port

COMMANDS = ("api", "serve")
READY_WITHIN_SECONDS = 60.0
SETTLE_SECONDS = 2.0


async def ready(url: str) -> None:
    deadline = time.monotonic() + READY_WITHIN_SECONDS
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        while time.monotonic() < deadline:
            try:
                async with session.get(url) as response:
                    if response.status == 200:
                        return
            except (TimeoutError, aiohttp.ClientError):
                pass
            await asyncio.sleep(0.02)
    raise TimeoutError(f"{url} not ready within {READY_WITHIN_SECONDS} s")


async def start_once(command: str, folder: Path) -> tuple[float, float, float]:
    """Seconds to ready, CPU seconds to ready and once settled, of one start of ``command``."""
    port = free_port()
    env = {
        **os.environ,
        "TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{folder / f'{port}.db'}",
        "TASKCRAWLER_LOG_LEVEL": "warning",
    }
    if command == "api":  # `serve` migrates its database itself; `api` expects it migrated
        migrate = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "taskcrawler", "migrate", env=env, stderr=DEVNULL, stdout=DEVNULL
        )
        assert await migrate.wait() == 0, "taskcrawler migrate failed"
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "taskcrawler", command, "--port", str(port)],
        env=env,
        stdout=DEVNULL,
        stderr=DEVNULL,
    )
    try:
        await ready(f"http://127.0.0.1:{port}/healthz")
        seconds = time.monotonic() - started
        at_ready = tree_cpu_seconds(process.pid)
        await asyncio.sleep(SETTLE_SECONDS)
        return seconds, at_ready, tree_cpu_seconds(process.pid)
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="starts of each command")
    parser.add_argument("--commands", default=",".join(COMMANDS), help="of api, serve")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tc_startup_") as folder:
        for command in args.commands.split(","):
            runs = [await start_once(command, Path(folder)) for _ in range(args.runs)]
            print(
                json.dumps(
                    {
                        "command": command,
                        "runs": args.runs,
                        "ready_s": round(statistics.median(r[0] for r in runs), 3),
                        "cpu_s": round(statistics.median(r[1] for r in runs), 3),
                        "cpu_settled_s": round(statistics.median(r[2] for r in runs), 3),
                        "load": round(os.getloadavg()[0], 2),
                    }
                )
            )


if __name__ == "__main__":
    asyncio.run(main())
