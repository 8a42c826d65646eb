"""What hostile load costs the API: ``python -m bench.hostile_load map|changes|mcp``.

* ``map``: a local site whose gzipped sitemap lists ``--urls`` pages, mapped with ``--limit`` as
  ``POST /api/v1/map`` does (``--threads``: without the API's parser processes). Prints how long
  the map took and the event loop lateness probe (tests/support/lateness.py): the most CPU its
  thread spent between two turns of a 5 ms timer, and how late the timer fired.
* ``changes``: a monitor with ``--changes`` changes of ``--diff-kb`` each (SQLite in a temporary
  folder, or ``--database-url``), then ``GET /api/v1/monitors/{id}/changes?limit=500`` through
  the in-process API: the page's bytes and changes, the pages a client walks for all of them, the
  Python memory the request allocated at its peak (tracemalloc) and the probe.
* ``mcp``: ``taskcrawler serve`` in a child process; ``--streams`` connections each send
  ``GET /mcp``, then as many POSTs that announce a body and send none. Prints the answers and
  the API process's file descriptors before, once answered, after ``--hold`` seconds of idle
  clients (uvicorn closes an idle kept-alive connection after 5 s), and after they closed.
  ``--source DIR`` serves the code of another checkout (``git archive <commit> taskcrawler |
  tar -x -C DIR``), to compare with an earlier version; ``map --threads`` runs on one too, with
  ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from aiohttp import web

from taskcrawler.fetch import Fetcher, MemoryHostLimiter
from taskcrawler.service.mapping import MapService
from taskcrawler.settings import Settings
from taskcrawler.storage import upgrade_database
from tests.e2e.harness import running
from tests.support import seeding
from tests.support.lateness import probing
from tests.support.processes import clean_env, free_port


async def sitemap_site(urls: int) -> tuple[web.AppRunner, str]:
    app = web.Application()
    body: dict[str, bytes] = {}

    async def sitemap(request: web.Request) -> web.Response:
        return web.Response(body=body["gz"], content_type="application/octet-stream")

    async def home(request: web.Request) -> web.Response:
        return web.Response(
            text="<html><body><a href='/a'>a</a></body></html>", content_type="text/html"
        )

    app.router.add_get("/sitemap.xml", sitemap)
    app.router.add_get("/", home)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    origin = f"http://127.0.0.1:{port}"
    locs = "".join(f"<url><loc>{origin}/page/{n}</loc></url>" for n in range(urls))
    body["gz"] = gzip.compress(f"<urlset>{locs}</urlset>".encode(), 6)
    print(f"sitemap       {urls:,} URLs, {len(body['gz']):,} bytes gzipped")
    return runner, f"{origin}/"


async def bench_map(args: argparse.Namespace) -> None:
    runner, start = await sitemap_site(args.urls)
    settings = Settings(
        _env_file=None,
        allow_private_networks=True,
        respect_robots=False,
        fetch_timeout_seconds=60,
        map_timeout_seconds=300,
        parse_timeout_seconds=120,
    )
    fetcher = Fetcher(settings, limiter=MemoryHostLimiter(8))
    pool = None
    if args.threads:  # also what a version before the parser processes runs
        mapper = MapService(fetcher, settings)
    else:
        from taskcrawler.bootstrap import api_parsers

        pool = api_parsers(settings)
        mapper = MapService(fetcher, settings, pool)
    try:
        for run in range(args.runs):
            started = time.perf_counter()
            async with probing() as probe:
                result = await mapper.map(mapper.request(start, limit=args.limit))
            took = time.perf_counter() - started
            print(f"map {run + 1}         {took:.2f} s, {len(result.links):,} links")
            print(f"  probe       {probe.summary()}")
    finally:
        await mapper.fetcher.close()
        if pool is not None:
            await pool.aclose()
        await runner.cleanup()


async def bench_changes(args: argparse.Namespace) -> None:
    folder = tempfile.mkdtemp(prefix="tc-bench-")
    url = args.database_url or f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
    await upgrade_database(url)
    settings = Settings(_env_file=None, database_url=url, monitor_min_interval_seconds=1)
    async with running("api", settings) as service:
        created = await service.client.post(
            "/api/v1/monitors", json={"url": "http://watched.test/", "interval_seconds": 3600}
        )
        monitor_id = created.json()["id"]
        diff = "+" + "x" * (args.diff_kb * 1024 - 1)
        await seeding.changes(
            service.storage,
            uuid.UUID(monitor_id),
            [diff] * args.changes,
            start=datetime(2030, 1, 1, tzinfo=UTC),
            owner="",
        )
        path = f"/api/v1/monitors/{monitor_id}/changes?limit=500"
        assert (await service.client.get("/openapi.json")).status_code == 200  # FastAPI warm
        tracemalloc.start()
        async with probing() as probe:
            response = await service.client.get(path, timeout=300)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        page = response.json()
        pages, cursor = 1, page["next_cursor"]
        while cursor:
            cursor = (await service.client.get(f"{path}&cursor={cursor}")).json()["next_cursor"]
            pages += 1
    print(f"changes       {args.changes:,} of {args.diff_kb:,} KB on {url.split(':')[0]}")
    print(f"first page    {len(response.content):,} bytes, {len(page['changes'])} changes")
    print(f"all of them   {pages} pages")
    print(f"allocated     {peak / 2**20:.1f} MiB at the request's peak (tracemalloc)")
    print(f"probe         {probe.summary()}")


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def open_request(port: int, head: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head)
    await writer.drain()
    return reader, writer


async def status_of(reader: asyncio.StreamReader) -> str:
    try:
        line = await asyncio.wait_for(reader.readline(), 30)
    except TimeoutError:
        return "no answer in 30 s"
    return line.split()[1].decode() if line else "closed"


async def bench_mcp(args: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp(prefix="tc-bench-"))
    port = free_port()
    env = clean_env(
        {
            "TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{folder / 'bench.db'}",
            "TASKCRAWLER_PORT": str(port),
            "TASKCRAWLER_MCP_IDLE_TIMEOUT_SECONDS": str(args.idle),
            "TASKCRAWLER_LOG_LEVEL": "WARNING",
            **({"PYTHONPATH": args.source} if args.source else {}),
        }
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "taskcrawler",
        "serve",
        env=env,
        cwd=args.source or None,  # python -m puts the working folder first on its path
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        head = b"Host: 127.0.0.1:%d\r\nAccept: application/json, text/event-stream\r\n" % port
        await _streams(process.pid, port, b"GET /mcp HTTP/1.1\r\n" + head + b"\r\n", args)
        post = b"POST /mcp HTTP/1.1\r\n" + head + b"Content-Type: application/json\r\n"
        await _streams(process.pid, port, post + b"Content-Length: 100\r\n\r\n", args)
    finally:
        process.terminate()
        await process.wait()


async def _streams(pid: int, port: int, head: bytes, args: argparse.Namespace) -> None:
    baseline = descriptors(pid)
    started = time.perf_counter()
    opened = [await open_request(port, head) for _ in range(args.streams)]
    answers = Counter(await asyncio.gather(*(status_of(reader) for reader, _ in opened)))
    answered = time.perf_counter() - started
    held = descriptors(pid)
    await asyncio.sleep(args.hold)  # the clients idle, their sockets open
    kept = descriptors(pid)
    for _, writer in opened:
        writer.close()
    await asyncio.sleep(1)
    after = descriptors(pid)
    what = head.split(b"\r\n", 1)[0].decode()
    print(f"{args.streams} x {what!r}: answers {dict(answers)} within {answered:.1f} s")
    print(
        f"  descriptors {baseline} before, {held} once answered, {kept} after {args.hold:g} s "
        f"more of idle clients, {after} 1 s after the clients closed their sockets"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile_load")
    sub = parser.add_subparsers(dest="what", required=True)
    mapping = sub.add_parser("map")
    mapping.add_argument("--urls", type=int, default=1_000_000)
    mapping.add_argument("--limit", type=int, default=100_000)
    mapping.add_argument("--runs", type=int, default=2)
    mapping.add_argument("--threads", action="store_true", help="no parser processes")
    changes = sub.add_parser("changes")
    changes.add_argument("--changes", type=int, default=500)
    changes.add_argument("--diff-kb", type=int, default=190)
    changes.add_argument("--database-url")
    mcp = sub.add_parser("mcp")
    mcp.add_argument("--streams", type=int, default=500)
    mcp.add_argument("--idle", type=float, default=5.0)
    mcp.add_argument("--hold", type=float, default=10.0, help="seconds the clients idle")
    mcp.add_argument("--source", help="serve the taskcrawler package found in this folder")
    args = parser.parse_args()
    run = {"map": bench_map, "changes": bench_changes, "mcp": bench_mcp}[args.what]
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
