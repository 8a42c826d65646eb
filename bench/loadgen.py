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
from collections import Counter
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

BATCH_LIMIT = 1000


class HttpError(Exception):
    """The connection failed or the answer was not HTTP/1.1 as the API sends it."""


class Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection, one request at a time.

    Not aiohttp: at 500 POST/s its client took about two thirds of a millisecond of CPU per
    request, on the same two cores as the service it measures. Here a request is one write, and
    its answer is cut from the bytes received by the Content-Length the API always sends.
    """

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.received = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.received += data
        self._answer()

    def _answer(self) -> None:
        """Hand the waiting request its answer, once all of it has arrived."""
        header_end = self.received.find(b"\r\n\r\n")
        if header_end < 0 or self.waiter is None or self.waiter.done():
            return
        header = bytes(self.received[:header_end]).lower()
        at = header.find(b"\r\ncontent-length:")
        if at < 0:
            self._fail(HttpError(f"an answer without Content-Length: {header!r}"))
            return
        value_end = header.find(b"\r\n", at + 2)
        length = int(
            header[at + len(b"\r\ncontent-length:") : value_end if value_end > 0 else None]
        )
        end = header_end + 4 + length
        if len(self.received) < end:
            return
        body = bytes(self.received[header_end + 4 : end])
        del self.received[:end]
        self.waiter.set_result((int(header[9:12]), body))

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(HttpError(f"connection lost: {exc!r}"))

    def _fail(self, exc: HttpError) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)

    async def post(self, request: bytes) -> tuple[int, bytes]:
        if self.transport is None or self.transport.is_closing():
            raise HttpError("connection closed")
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        if self.received:  # bytes that came before this request was sent
            self._answer()
        return await self.waiter

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class Client:
    """Keep-alive connections to one API, opened as needed and reused."""

    def __init__(self, api: str) -> None:
        parts = urlsplit(api)
        if parts.hostname != "127.0.0.1" or parts.port is None:
            raise SystemExit(f"refusing anything but 127.0.0.1:PORT: {api}")
        self.host, self.port = parts.hostname, parts.port
        self.idle: list[Connection] = []
        self.opened: list[Connection] = []
        self.failures: list[str] = []  # why requests failed, for the report

    def head(self, path: str) -> bytes:
        return (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Content-Type: application/json\r\n"
        ).encode()

    async def post(self, head: bytes, body: bytes) -> tuple[int, bytes]:
        """The status and body; raises :class:`HttpError` (the connection is then dropped).

        A kept-alive connection the server closed while it sat idle (uvicorn closes them after
        5 s) is not used; one it closes just as the request goes out is retried once on a new
        connection, as aiohttp does: submitting a URL twice is idempotent.
        """
        request = head + b"Content-Length: %d\r\n\r\n" % len(body) + body
        connection = self._idle_connection()
        if connection is not None:
            try:
                return await self._send(connection, request)
            except HttpError:
                if connection.received:  # part of an answer came: not a stale connection
                    raise
        return await self._send(await self._connect(), request)

    def _idle_connection(self) -> Connection | None:
        while self.idle:
            connection = self.idle.pop()
            if connection.transport is not None and not connection.transport.is_closing():
                return connection
        return None

    async def _connect(self) -> Connection:
        loop = asyncio.get_running_loop()
        try:
            _, connection = await loop.create_connection(Connection, self.host, self.port)
        except OSError as exc:
            raise HttpError(f"cannot connect: {exc!r}") from exc
        self.opened.append(connection)
        return connection

    async def _send(self, connection: Connection, request: bytes) -> tuple[int, bytes]:
        try:
            answer = await connection.post(request)
        except HttpError:
            connection.close()
            raise
        self.idle.append(connection)
        return answer

    def close(self) -> None:
        for connection in self.opened:
            connection.close()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def _page_url(target: str, n: int, path: str = "p", hosts: int = 1, first: int = 1) -> str:
    """Page ``n``; spread over ``hosts`` loopback addresses from 127.0.0.``first`` (each a host
    of its own to politeness), as the target serves them (``bench.target --hosts``)."""
    if hosts > 1 or first > 1:
        target = target.replace("127.0.0.1", f"127.0.0.{first + n % hosts}", 1)
    return f"{target}/{path}/{n}"


def _job_body(target: str, n: int) -> bytes:
    return b'{"url":"%s"}' % _page_url(target, n).encode()


async def run_batch(args: argparse.Namespace, client: Client) -> dict[str, Any]:
    created = existing = 0
    head = client.head("/api/v1/jobs/batch")
    # CLOCK_MONOTONIC is one clock for every process on the machine: the driver times the run
    # from here, not from starting this process (an interpreter to start first).
    started = time.monotonic()
    deadline = started + args.max_seconds
    end = args.start + args.count
    for first in range(args.start, end, BATCH_LIMIT):
        if time.monotonic() > deadline:
            break
        last = min(first + BATCH_LIMIT, end)
        urls = [
            _page_url(args.target, n, args.path, args.hosts, args.first_host)
            for n in range(first, last)
        ]
        batch: dict[str, Any] = {"urls": urls}
        if args.formats:
            batch["formats"] = args.formats.split(",")
        status, answer = await client.post(head, json.dumps(batch).encode())
        body = json.loads(answer)
        if status != 200:
            raise SystemExit(f"batch answered {status}: {body}")
        created += body["created"]
        existing += body["existing"]
    elapsed = time.monotonic() - started
    return {"created": created, "existing": existing, "seconds": elapsed, "started_at": started}


async def _post_one(client: Client, head: bytes, body: bytes) -> int:
    try:
        status, _ = await client.post(head, body)
    except HttpError as exc:
        client.failures.append(str(exc))
        return 0
    return status


async def run_closed(args: argparse.Namespace, client: Client) -> dict[str, Any]:
    head = client.head("/api/v1/jobs")
    latencies: list[float] = []
    errors: Counter[int] = Counter()  # by status; 0 is a failed connection
    next_index = args.start
    end = args.start + args.count
    started = time.perf_counter()
    deadline = started + args.max_seconds

    async def one_client() -> None:
        nonlocal next_index
        while next_index < end and time.perf_counter() < deadline:
            n = next_index
            next_index += 1
            body = _job_body(args.target, n)
            t0 = time.perf_counter()
            status = await _post_one(client, head, body)
            latencies.append(time.perf_counter() - t0)
            if status not in (200, 201):
                errors[status] += 1

    await asyncio.gather(*(one_client() for _ in range(args.concurrency)))
    elapsed = time.perf_counter() - started
    return {
        "requests": len(latencies),
        "errors": errors.total(),
        "errors_by_status": dict(errors),
        "failures": client.failures[:5],
        "seconds": elapsed,
        "per_second": len(latencies) / elapsed if elapsed else 0.0,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
    }


async def run_open(args: argparse.Namespace, client: Client) -> dict[str, Any]:
    head = client.head("/api/v1/jobs")
    total = int(args.rate * args.duration)
    latencies: list[float] = []
    errors: Counter[int] = Counter()
    dropped = 0
    in_flight: set[asyncio.Task[None]] = set()
    max_in_flight = max(64, int(args.rate * 2))

    sent_at: list[float] = []  # each latency's schedule, seconds from the start
    late: list[float] = []  # how long after its schedule each request began to be sent

    async def one(n: int, scheduled: float) -> None:
        began = time.perf_counter()
        status = await _post_one(client, head, _job_body(args.target, n))
        latencies.append(time.perf_counter() - scheduled)
        sent_at.append(scheduled - started)
        late.append(began - scheduled)
        if status not in (200, 201):
            errors[status] += 1

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
    if args.requests:
        # perf_counter is CLOCK_MONOTONIC on Linux, the clock other processes' logs use.
        sends = [started + at for at in sent_at]
        args.requests.write_text(json.dumps(list(zip(sends, latencies, late, strict=True))))
    return {
        "offered_per_second": args.rate,
        "requests": len(latencies),
        "errors": errors.total(),
        "errors_by_status": dict(errors),
        "failures": client.failures[:5],
        "dropped": dropped,
        "seconds": elapsed,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "max_ms": max(latencies, default=float("nan")) * 1000,
    } | tail_in_time(sent_at, latencies)


def tail_in_time(sent_at: list[float], latencies: list[float]) -> dict[str, Any]:
    """When the slowest requests were sent: at 500/s for 8 s the p99 is the 40th slowest of
    4,000, so one stall of 80 ms anywhere sets it. The p99 without the first second (a cold
    start: new connections, first statements prepared) and each second's p99 tell a cold
    start from stalls spread over the run."""
    seconds: dict[int, list[float]] = {}
    for at, latency in zip(sent_at, latencies, strict=True):
        seconds.setdefault(int(at), []).append(latency)
    later = [latency for at, latency in zip(sent_at, latencies, strict=True) if at >= 1.0]
    return {
        "p99_after_first_second_ms": percentile(later, 99) * 1000,
        "p99_ms_by_second": [round(percentile(seconds[s], 99) * 1000, 1) for s in sorted(seconds)],
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    if urlsplit(args.target).hostname != "127.0.0.1":
        raise SystemExit(f"refusing a non-loopback target: {args.target}")
    client = Client(args.api)
    try:
        # No timeout per request (a timer each costs CPU here); one bound on the whole run.
        async with asyncio.timeout(args.max_seconds + 60):
            if args.mode == "batch":
                return await run_batch(args, client)
            if args.mode == "closed":
                return await run_closed(args, client)
            return await run_open(args, client)
    except TimeoutError:
        raise SystemExit(f"{args.mode}: no end within {args.max_seconds + 60:.0f} s") from None
    finally:
        client.close()


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
    parser.add_argument(
        "--requests", type=Path, help="open: write each request's send time and latency here"
    )
    parser.add_argument("--path", default="p", choices=["p", "s"], help="batch: p, or s (slow)")
    parser.add_argument("--hosts", type=int, default=1, help="batch: loopback hosts, 1-250")
    parser.add_argument("--first-host", type=int, default=1, help="batch: from 127.0.0.N")
    parser.add_argument(
        "--formats", help="batch: the jobs' formats, comma-separated (default: the API's)"
    )
    args = parser.parse_args()
    try:
        import uvloop

        result = uvloop.run(main_async(args))
    except ImportError:
        result = asyncio.run(main_async(args))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
