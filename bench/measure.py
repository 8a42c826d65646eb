"""What the benchmarks read from the machine: CPU and memory of a process from /proc, how busy
the cores are, how fast one core is right now, and what the machine is."""

from __future__ import annotations

import contextlib
import os
import platform
import time
from pathlib import Path

import asyncpg
import redis.asyncio as aioredis

from tests.support.services import asyncpg_url

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def _stat_fields(path: str) -> list[str]:
    """The fields of a /proc ``stat`` file after the command name (which may hold spaces)."""
    return Path(path).read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """user + system CPU of a process (and its reaped children) from /proc."""
    utime, stime, cutime, cstime = (int(x) for x in _stat_fields(f"/proc/{pid}/stat")[11:15])
    return (utime + stime + cutime + cstime) / CLK_TCK


def descendants(pid: int) -> list[int]:
    """``pid``'s living children, their children, and so on (a worker's extraction processes)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        with contextlib.suppress(OSError):
            for child in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
                found.append(int(child))
                todo.append(int(child))
    return found


def tree_cpu_seconds(pid: int) -> float:
    """CPU of a process and of every living descendant (plus those reaped): what one command
    used, however many processes it runs."""
    total = 0.0
    for member in [pid, *descendants(pid)]:
        with contextlib.suppress(OSError):
            total += cpu_seconds(member)
    return total


def loop_cpu_seconds(pid: int) -> float:
    """CPU of a process's main thread alone: its event loop, without the helper threads."""
    utime, stime = (int(x) for x in _stat_fields(f"/proc/{pid}/task/{pid}/stat")[11:13])
    return (utime + stime) / CLK_TCK


def machine_ticks() -> tuple[int, int]:
    """(busy, all) clock ticks of every core since boot, from /proc/stat."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return sum(ticks) - idle, sum(ticks)


def rss_mb(pid: int) -> float:
    pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return pages * PAGE_SIZE / 2**20


#: Iterations of the speed loop; the figure is always given for this many.
SPEED_LOOP = 3_000_000
#: Fewer iterations (the figure scaled to SPEED_LOOP's), for runs that read no figure: the smoke
#: tests, where the loop's 0.4 s of CPU a reading was most of what a tool spent itself.
SPEED_LOOP_VARIABLE = "TASKCRAWLER_BENCH_SPEED_LOOP"


def cpu_speed_ms() -> float:
    """The best of three timings of one fixed CPU-bound loop on one core: runs on different
    days (or machines that call themselves the same) are comparable only alongside this."""
    loop = int(os.environ.get(SPEED_LOOP_VARIABLE) or SPEED_LOOP)
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for i in range(loop):
            total += i * i
        best = min(best, time.perf_counter() - started)
    return best * 1000 * SPEED_LOOP / loop


def machine() -> dict[str, str]:
    """What the report says about the machine: cores, CPU, memory, load, speed."""
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = "unknown"
    with contextlib.suppress(OSError):
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 2**20:.1f} GiB"
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "cpu_speed": f"{cpu_speed_ms():.0f} ms for a fixed pure-Python loop (lower is faster)",
    }


async def versions(pg_admin: str, redis_url: str) -> dict[str, str]:
    """The servers' versions, for the report."""
    conn = await asyncpg.connect(asyncpg_url(pg_admin), timeout=10)
    try:
        postgresql = str(await conn.fetchval("SHOW server_version"))
    finally:
        await conn.close()
    client = aioredis.Redis.from_url(redis_url)
    try:
        redis_version = str((await client.info("server"))["redis_version"])
    finally:
        await client.aclose()
    return {"postgresql": postgresql, "redis": redis_version}
