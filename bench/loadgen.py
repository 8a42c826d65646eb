"""Load generator, its own process: ``python -m bench.loadgen MODE ...``; prints one JSON line.

Modes (every loop is bounded both in count and in time; only 127.0.0.1 is contacted):

- ``batch``  submit pages ``start .. start+count`` through ``POST /api/v1/jobs/batch``, 1,000 a call
- ``closed`` ``--concurrency`` clients POST one URL each, back to back, ``count`` in all
- ``open``   a steady offered load: ``--rate`` POST/s for ``--duration`` s, each request sent at its
  scheduled time whatever the others do; latency is measured from that time (no coordinated
  omission)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any
from urllib.parse import urlsplit

import aiohttp

BATCH_LIMIT = 1000


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def _check_local(url: str) -> None:
    if urlsplit(url).hostname != "127.0.0.1":
        raise SystemExit(f"refusing a non-loopback address: {url}")


def _page_url(target: str, n: int) -> str:
    return f"{target}/p/{n}"


async def run_batch(args: argparse.Namespace, session: aiohttp.ClientSession) -> dict[str, Any]:
    created = existing = 0
    # CLOCK_MONOTONIC is one clock for every process on the machine: the driver times the run
    # from here, not from starting this process (an interpreter and aiohttp to import first).
    started = time.monotonic()
    deadline = started + args.max_seconds
    end = args.start + args.count
    for first in range(args.start, end, BATCH_LIMIT):
        if time.monotonic() > deadline:
            break
        urls = [_page_url(args.target, n) for n in range(first, min(first + BATCH_LIMIT, end))]
        async with session.post(f"{args.api}/api/v1/jobs/batch", json={"urls": urls}) as response:
            body = await response.json()
            if response.status != 200:
                raise SystemExit(f"batch answered {response.status}: {body}")
        created += body["created"]
        existing += body["existing"]
    elapsed = time.monotonic() - started
    return {"created": created, "existing": existing, "seconds": elapsed, "started_at": started}


async def _post_one(session: aiohttp.ClientSession, api: str, url: str) -> int:
    async with session.post(f"{api}/api/v1/jobs", json={"url": url}) as response:
        await response.read()
        return response.status


async def run_closed(args: argparse.Namespace, session: aiohttp.ClientSession) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    next_index = args.start
    end = args.start + args.count
    started = time.perf_counter()
    deadline = started + args.max_seconds

    async def client() -> None:
        nonlocal next_index, errors
        while next_index < end and time.perf_counter() < deadline:
            n = next_index
            next_index += 1
            t0 = time.perf_counter()
            try:
                status = await _post_one(session, args.api, _page_url(args.target, n))
            except aiohttp.ClientError:
                status = 0
            latencies.append(time.perf_counter() - t0)
            if status not in (200, 201):
                errors += 1

    await asyncio.gather(*(client() for _ in range(args.concurrency)))
    elapsed = time.perf_counter() - started
    return {
        "requests": len(latencies),
        "errors": errors,
        "seconds": elapsed,
        "per_second": len(latencies) / elapsed if elapsed else 0.0,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
    }


async def run_open(args: argparse.Namespace, session: aiohttp.ClientSession) -> dict[str, Any]:
    total = int(args.rate * args.duration)
    latencies: list[float] = []
    errors = dropped = 0
    in_flight: set[asyncio.Task[None]] = set()
    max_in_flight = max(64, int(args.rate * 2))

    async def one(n: int, scheduled: float) -> None:
        nonlocal errors
        try:
            status = await _post_one(session, args.api, _page_url(args.target, n))
        except aiohttp.ClientError:
            status = 0
        latencies.append(time.perf_counter() - scheduled)
        if status not in (200, 201):
            errors += 1

    started = time.perf_counter()
    for i in range(total):
        scheduled = started + i / args.rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if len(in_flight) >= max_in_flight:
            dropped += 1  # the server is this far behind: count it, do not pile up more
            continue
        task = asyncio.create_task(one(args.start + i, scheduled))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
    if in_flight:
        await asyncio.wait(in_flight, timeout=args.max_seconds)
    elapsed = time.perf_counter() - started
    return {
        "offered_per_second": args.rate,
        "requests": len(latencies),
        "errors": errors,
        "dropped": dropped,
        "seconds": elapsed,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "max_ms": max(latencies, default=float("nan")) * 1000,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    _check_local(args.api)
    _check_local(args.target)
    limit = args.concurrency if args.mode == "closed" else 1000
    connector = aiohttp.TCPConnector(limit=limit, limit_per_host=limit)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        if args.mode == "batch":
            return await run_batch(args, session)
        if args.mode == "closed":
            return await run_closed(args, session)
        return await run_open(args, session)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["batch", "closed", "open"])
    parser.add_argument("--api", required=True, help="http://127.0.0.1:PORT")
    parser.add_argument("--target", required=True, help="http://127.0.0.1:PORT of bench.target")
    parser.add_argument("--start", type=int, default=0, help="first page number")
    parser.add_argument("--count", type=int, default=1000, help="pages (batch, closed)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--max-seconds", type=float, default=120.0, help="hard time bound")
    args = parser.parse_args()
    try:
        import uvloop

        result = uvloop.run(main_async(args))
    except ImportError:
        result = asyncio.run(main_async(args))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
