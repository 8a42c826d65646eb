"""How long each write holds SQLite's writer lock in ``taskcrawler serve``, and what the API's
POSTs see meanwhile: ``python -m bench.writer_hold``.

Embedded mode only. Each round, for each version (``--ref`` and this checkout, alternated):

1. ``--size`` jobs queued with the worker stopped, then drained: jobs/s and CPU ms per job;
2. ``--backlog`` more queued through the batch endpoint, then single POSTs offered open-loop at
   ``--rate`` for ``--seconds`` while the worker drains them (as ``bench.ratios`` measures the
   p99 a user of a busy ``serve`` sees): p50/p99/max;
   ``--a-set`` / ``--b-set KEY=VALUE`` add ``TASKCRAWLER_*`` settings to the ref's runs / this
   checkout's (``--ref .`` runs this checkout on both sides);
3. every hold of the writer lock (``taskcrawler/storage/sqlite/locking.py``) by either process,
   timed in the process that held it: the wait for it, the hold's wall time, and the CPU time the
   holding thread spent in the hold. On a loaded machine a hold's wall time includes the holder
   waiting for a core; its CPU time does not, so it compares across loads.
4. where the slowest 1% of those POSTs spent their time (``attribution``): the share of each
   one's latency the load generator was late sending it (its process waited for a core), and
   the share of its time on the wire during which the API waited for the lock, held it, ran its
   event loop late (a thread in the API asks the loop every 2 ms to run a callback and logs
   when it ran more than 2 ms late), or the worker held the lock.

``TASKCRAWLER_BENCH_*`` settings (``--a-set``/``--b-set``, read by the hook alone, never by the
product): ``WAL_AUTOCHECKPOINT=N`` sets SQLite's automatic checkpoint on every connection a
process opens (overridden by the product's own pragma where it sets one), ``SWITCH_INTERVAL=S``
the GIL's switch interval, ``NAME_THREADS=1`` gives each Python thread's name to the OS, so
that ``strace -f -e trace=fsync,fdatasync,prctl`` tells whose syncs are whose.

The holds are timed without touching the product: a ``sitecustomize`` put on the services'
``PYTHONPATH`` wraps ``fcntl.flock`` on the lock's file and appends one line per hold to a file
per process.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import json
import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.ab import alternated_rounds, checkout, settings
from bench.deployment import deployment, loadgen, target_site
from bench.loadgen import percentile
from bench.phases import backlog
from tests.support.processes import REPO_ROOT, ProcessManager

#: Imported by every Python process of the deployment (it is on their PYTHONPATH).
HOOK = """
import fcntl, os, threading, time

_DIR = os.environ.get("TC_HOLD_LOG_DIR")
if _DIR:
    _flock = fcntl.flock
    _held = threading.local()
    _out = {}

    def _is_writer_lock(fd):
        try:
            return os.readlink(f"/proc/self/fd/{fd}").endswith("-writer")
        except (OSError, TypeError):
            return False

    def _log(line):
        pid = os.getpid()
        if pid not in _out:
            path = os.path.join(_DIR, f"holds-{pid}.txt")
            _out[pid] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.write(_out[pid], line.encode())

    def flock(fd, operation):
        if not _is_writer_lock(fd):
            return _flock(fd, operation)
        if operation & fcntl.LOCK_UN:
            released, cpu = time.monotonic(), time.thread_time()
            _flock(fd, operation)
            taken = getattr(_held, "taken", None)
            _held.taken = None
            if taken is not None:
                asked, got, cpu0 = taken
                _log(f"{asked:.6f} {got:.6f} {released:.6f} {cpu - cpu0:.6f}\\n")
            return None
        asked = time.monotonic()
        result = _flock(fd, operation)
        _held.taken = (asked, time.monotonic(), time.thread_time())
        return result

    fcntl.flock = flock

    # The lateness of the API's event loop (uvicorn makes it with uvloop.new_event_loop): a
    # thread asks it every 2 ms to run a callback and logs when it ran late.
    try:
        import uvloop
    except ImportError:
        uvloop = None
    if uvloop is not None:
        _new_loop = uvloop.new_event_loop

        def _probe(loop):
            lag_log = os.path.join(_DIR, f"lag-{os.getpid()}.txt")
            out = os.open(lag_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

            def ran(asked):
                now = time.monotonic()
                if now - asked > 0.002:
                    os.write(out, f"{asked:.6f} {now:.6f}\\n".encode())

            while not loop.is_closed():
                try:
                    loop.call_soon_threadsafe(ran, time.monotonic())
                except RuntimeError:
                    return
                time.sleep(0.002)

        def new_event_loop():
            loop = _new_loop()
            threading.Thread(target=_probe, args=(loop,), daemon=True).start()
            return loop

        uvloop.new_event_loop = new_event_loop

# Diagnostics only: each Python thread's name given to the OS too (prctl), so that a trace of
# the processes (strace -f) can tell the writer threads from the checkpoint threads.
if os.environ.get("TASKCRAWLER_BENCH_NAME_THREADS"):
    import ctypes
    import threading

    _libc = ctypes.CDLL(None)
    _bootstrap = threading.Thread._bootstrap_inner

    def _named(self):
        _libc.prctl(15, self.name[:15].encode(), 0, 0, 0)
        _bootstrap(self)

    threading.Thread._bootstrap_inner = _named

# Diagnostics only (never a product setting): SQLite's automatic checkpoints, and the GIL's
# switch interval, changed in every process of the deployment.
_AUTOCHECKPOINT = os.environ.get("TASKCRAWLER_BENCH_WAL_AUTOCHECKPOINT")
if _AUTOCHECKPOINT:
    import sqlite3

    _connect = sqlite3.connect

    def connect(*args, **kwargs):
        conn = _connect(*args, **kwargs)
        conn.execute(f"PRAGMA wal_autocheckpoint={int(_AUTOCHECKPOINT)}")
        return conn

    sqlite3.connect = connect

_SWITCH = os.environ.get("TASKCRAWLER_BENCH_SWITCH_INTERVAL")
if _SWITCH:
    import sys

    sys.setswitchinterval(float(_SWITCH))
"""


def read_holds(directory: Path) -> dict[int, list[tuple[float, float, float, float]]]:
    """Each process's holds: (asked, got, released, CPU seconds of the hold)."""
    holds: dict[int, list[tuple[float, float, float, float]]] = {}
    for path in directory.glob("holds-*.txt"):
        pid = int(path.stem.removeprefix("holds-"))
        rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
        holds[pid] = [(float(a), float(g), float(r), float(c)) for a, g, r, c in rows]
    return holds


def merged(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def covered(intervals: list[tuple[float, float]], start: float, end: float) -> float:
    """How much of [start, end] the merged ``intervals`` cover, seconds."""
    i = bisect.bisect_left(intervals, (start,)) - 1
    total = 0.0
    for a, b in intervals[max(i, 0) :]:
        if a >= end:
            break
        total += max(0.0, min(b, end) - max(a, start))
    return total


def attribution(
    requests: list[tuple[float, ...]],
    holds: dict[int, list[tuple[float, float, float, float]]],
    lags: list[tuple[float, float]],
    pids: dict[str, int],
) -> dict[str, Any]:
    """Where the slowest 1% of the requests spent their time: the share of their latency the
    client was late sending them, and the share of each one's life on the wire (sent to
    answered) during which the API waited for the writer lock, held it, its event loop
    ran late (> 2 ms), and the worker held the lock; the median of those shares, and of the
    requests' latencies."""
    if not requests:
        return {}
    cut = percentile([latency for _, latency, _ in requests], 99)
    slowest = [(sent, latency, late) for sent, latency, late in requests if latency >= cut]
    slow = [(sent + late, sent + latency) for sent, latency, late in slowest]
    api = holds.get(pids.get("serve", -1), [])
    worker = holds.get(pids.get("worker", -1), [])
    kinds = {
        "api_waits_for_lock": merged([(asked, got) for asked, got, _, _ in api]),
        "api_holds_lock": merged([(got, released) for _, got, released, _ in api]),
        "api_loop_late": merged(lags),
        "worker_holds_lock": merged([(got, released) for _, got, released, _ in worker]),
    }
    figures: dict[str, Any] = {
        "slow_requests": len(slow),
        "cut_ms": round(cut * 1000, 1),
        # The load generator's own lateness in sending (its process waited for a core):
        "client_late_share_mean": round(
            sum(late / latency for _, latency, late in slowest) / len(slowest), 2
        ),
    }
    for name, intervals in kinds.items():
        shares = [covered(intervals, s, e) / (e - s) for s, e in slow if e > s]
        figures[f"{name}_share_p50"] = round(percentile(shares, 50), 2)
        figures[f"{name}_share_mean"] = round(sum(shares) / max(len(shares), 1), 2)
    either = merged(kinds["api_waits_for_lock"] + kinds["api_loop_late"])
    shares = [covered(either, s, e) / (e - s) for s, e in slow if e > s]
    figures["wait_or_late_share_mean"] = round(sum(shares) / max(len(shares), 1), 2)
    return figures


def read_lags(directory: Path, pid: int) -> list[tuple[float, float]]:
    path = directory / f"lag-{pid}.txt"
    if not path.exists():
        return []
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return [(float(a), float(b)) for a, b in rows]


def summary(holds: list[tuple[float, float, float, float]]) -> dict[str, Any]:
    """Milliseconds: the wait for the lock, the hold (wall), the hold's CPU."""
    if not holds:
        return {"holds": 0}
    waits = [(got - asked) * 1000 for asked, got, _, _ in holds]
    walls = [(released - got) * 1000 for _, got, released, _ in holds]
    cpus = [cpu * 1000 for *_, cpu in holds]
    figures: dict[str, Any] = {"holds": len(holds)}
    for name, values in (("wait", waits), ("hold", walls), ("hold_cpu", cpus)):
        for q in (50, 90, 99):
            figures[f"{name}_p{q}_ms"] = round(percentile(values, q), 2)
        figures[f"{name}_max_ms"] = round(max(values), 2)
    figures["holds_over_25ms"] = sum(wall > 25 for wall in walls)
    return figures


def by_role(
    holds: dict[int, list[tuple[float, float, float, float]]],
    pids: dict[str, int],
    window: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The summary of each process's holds (``serve`` is the API), those that began in
    ``window`` if given."""
    roles = {pid: name for name, pid in pids.items()}
    grouped: dict[str, list[tuple[float, float, float, float]]] = {}
    for pid, rows in holds.items():
        if window is not None:
            rows = [row for row in rows if window[0] <= row[1] <= window[1]]
        grouped.setdefault(roles.get(pid, f"pid {pid}"), []).extend(rows)
    return {role: summary(rows) for role, rows in sorted(grouped.items())}


async def one_run(
    args: argparse.Namespace,
    repo: Path,
    hook: Path,
    target: str,
    workdir: Path,
    extra: dict[str, str],
) -> dict[str, Any]:
    logs = Path(tempfile.mkdtemp(prefix="holds_", dir=workdir))
    settings = extra | {"PYTHONPATH": f"{repo}{os.pathsep}{hook}", "TC_HOLD_LOG_DIR": str(logs)}
    start = secrets.randbelow(1_000_000) * 100 + 100_000_000
    # Embedded mode uses neither PostgreSQL nor Redis.
    async with deployment(
        "embedded", workdir, pg_admin="", redis_url="", repo=repo, settings=settings
    ) as dep:
        load = os.getloadavg()[0]
        drained = await backlog(dep, target, start=start, size=args.size, within=args.timeout)
        drain_window = (time.monotonic() - drained["seconds"], time.monotonic())
        await loadgen(
            dep.helpers, "batch", dep.api, target, start=start + 2_000_000, count=args.backlog,
            max_seconds=args.timeout,
        )  # fmt: skip
        began = time.monotonic()
        requests = logs / "requests.json"
        latency = await loadgen(
            dep.helpers, "open", dep.api, target, start=start + 3_000_000, rate=args.rate,
            duration=args.seconds, max_seconds=args.seconds + 30, requests=requests,
        )  # fmt: skip
        open_window = (began, time.monotonic())
        pending = (await dep.counter.counts()).get("PENDING", 0)
        pids = dict(dep.pids)
    holds = read_holds(logs)
    sent = [tuple(map(float, row)) for row in json.loads(requests.read_text())]
    lags = read_lags(logs, pids.get("serve", -1))
    return {
        "attribution": attribution(sent, holds, lags, pids),
        "load_average": load,
        "load_average_after": os.getloadavg()[0],
        "jobs_per_s": drained["jobs_per_s"],
        "cpu_ms_per_job": drained["cpu_ms_per_job"],
        "open": {k: v for k, v in latency.items() if not k.endswith("by_second")},
        "backlog_left": pending,
        "holds_draining": by_role(holds, pids, drain_window),
        "holds_open_loop": by_role(holds, pids, open_window),
    }


def line(label: str, r: dict[str, Any]) -> str:
    o = r["open"]
    worker = r["holds_open_loop"].get("worker", {})
    api = r["holds_open_loop"].get("serve", {})
    drain = r["holds_draining"].get("worker", {})
    return (
        f"{label} (load {r['load_average']:.1f}-{r['load_average_after']:.1f}): "
        f"drain {r['jobs_per_s']:.0f} jobs/s, {r['cpu_ms_per_job']:.2f} CPU ms/job; "
        f"worker holds while draining: {drain.get('holds', 0)}, wall p50/p99/max "
        f"{drain.get('hold_p50_ms')}/{drain.get('hold_p99_ms')}/{drain.get('hold_max_ms')} ms, "
        f"CPU p50/p99/max {drain.get('hold_cpu_p50_ms')}/{drain.get('hold_cpu_p99_ms')}/"
        f"{drain.get('hold_cpu_max_ms')} ms | open loop {o['offered_per_second']:.0f}/s: "
        f"p50 {o['p50_ms']:.1f} p99 {o['p99_ms']:.1f} max {o['max_ms']:.0f} ms, errors+dropped "
        f"{o['errors'] + o['dropped']}; worker holds {worker.get('holds', 0)}, wall p50/p99/max "
        f"{worker.get('hold_p50_ms')}/{worker.get('hold_p99_ms')}/{worker.get('hold_max_ms')} "
        f"ms, CPU p99/max {worker.get('hold_cpu_p99_ms')}/{worker.get('hold_cpu_max_ms')} ms; "
        f"API waits for the lock p50/p99/max {api.get('wait_p50_ms')}/{api.get('wait_p99_ms')}/"
        f"{api.get('wait_max_ms')} ms; backlog left {r['backlog_left']}\n"
        f"  the slowest 1% of the POSTs: {r['attribution']}"
    )


async def main_async(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    hook = workdir / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    async with contextlib.AsyncExitStack() as stack:
        trees = {"this": (REPO_ROOT, settings(args.b_set))}
        if args.ref:
            ref_tree = stack.enter_context(checkout(args.ref, workdir))
            trees = {args.ref: (ref_tree, settings(args.a_set)), **trees}
        helpers = await stack.enter_async_context(ProcessManager(workdir / "helpers"))
        target = await stack.enter_async_context(target_site(helpers))
        return await alternated_rounds(
            args.rounds,
            trees,
            lambda version: one_run(args, version[0], hook, target, workdir, version[1]),
            line,
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.writer_hold",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=3000, help="jobs drained, the API idle")
    parser.add_argument("--backlog", type=int, default=3000, help="queued before the open load")
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--ref", help="also run this version (a git ref) in each round")
    parser.add_argument("--a-set", action="append", default=[], metavar="TASKCRAWLER_KEY=VALUE")
    parser.add_argument("--b-set", action="append", default=[], metavar="TASKCRAWLER_KEY=VALUE")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tc_holds_"))
    try:
        results = asyncio.run(main_async(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
