"""The limits TaskCrawler is up against, each run as its own process; prints one JSON line.

- ``fetch``   a bare aiohttp fetch loop over the same pages (``--extract`` also runs our extractor)
- ``bareapi`` a bare FastAPI endpoint (no database): ``POST /api/v1/jobs`` validating the same
  kind of body, served by uvicorn with uvloop and httptools; run until SIGTERM
- ``inserts`` bare inserts: asyncpg executemany and single-row commits, sqlite3 the same
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import orjson
from pydantic import BaseModel, Field

CREATE = (
    "CREATE TABLE bench_rows (id uuid PRIMARY KEY, url text NOT NULL, status text NOT NULL, "
    "created_at timestamptz NOT NULL)"
)


def _run(coro: Any) -> Any:
    try:
        import uvloop

        return uvloop.run(coro)
    except ImportError:
        return asyncio.run(coro)


# --- fetch ----------------------------------------------------------------------------------


async def fetch_loop(args: argparse.Namespace) -> dict[str, Any]:
    import aiohttp

    extractor = None
    if args.extract:
        from taskcrawler.extract import extract

        extractor = extract
    ok = 0
    next_index = args.start
    end = args.start + args.count
    connector = aiohttp.TCPConnector(limit=args.concurrency, limit_per_host=args.concurrency)
    started = time.perf_counter()
    deadline = started + args.max_seconds
    async with aiohttp.ClientSession(connector=connector) as session:

        async def client() -> None:
            nonlocal next_index, ok
            while next_index < end and time.perf_counter() < deadline:
                url = f"{args.target}/p/{next_index}"
                next_index += 1
                async with session.get(url) as response:
                    body = await response.read()
                if extractor is not None:
                    extractor(body, url=url, charset="utf-8")
                ok += response.status == 200

        await asyncio.gather(*(client() for _ in range(args.concurrency)))
    elapsed = time.perf_counter() - started
    return {"pages": ok, "seconds": elapsed, "per_second": ok / elapsed}


# --- bare API -------------------------------------------------------------------------------


class BareBody(BaseModel):
    """At module level: with postponed annotations FastAPI resolves the endpoint's parameter by
    name in the module, and a class local to ``bare_api`` made it a (missing) query parameter,
    answered 422 without reading the body."""

    url: str = Field(max_length=2048)


def bare_api(port: int) -> None:
    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import Response

    app = FastAPI()

    @app.post("/api/v1/jobs", status_code=201)
    async def create(body: BareBody) -> Response:
        job = {"id": str(uuid.uuid4()), "url": body.url, "status": "PENDING", "retry_count": 0}
        return Response(orjson.dumps(job), status_code=201, media_type="application/json")

    @app.get("/healthz")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
    )


# --- inserts --------------------------------------------------------------------------------


def _rows(n: int) -> list[tuple[uuid.UUID, str, str, datetime]]:
    now = datetime.now(UTC)
    return [(uuid.uuid4(), f"http://127.0.0.1/p/{i}", "PENDING", now) for i in range(n)]


async def pg_inserts(url: str, rows: int, seconds: float) -> dict[str, float]:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute("DROP TABLE IF EXISTS bench_rows")
        await conn.execute(CREATE)
        data = _rows(rows)
        started = time.perf_counter()
        await conn.executemany(
            "INSERT INTO bench_rows (id, url, status, created_at) VALUES ($1, $2, $3, $4)", data
        )
        bulk = rows / (time.perf_counter() - started)
        await conn.execute("TRUNCATE bench_rows")
        single = _rows(100_000)
        done = 0
        started = time.perf_counter()
        deadline = started + seconds
        while time.perf_counter() < deadline and done < len(single):
            async with conn.transaction():
                await conn.execute(
                    "INSERT INTO bench_rows (id, url, status, created_at) VALUES ($1, $2, $3, $4)",
                    *single[done],
                )
            done += 1
        commits = done / (time.perf_counter() - started)
        await conn.execute("DROP TABLE bench_rows")
    finally:
        await conn.close()
    return {"pg_executemany_rows_per_s": bulk, "pg_single_commits_per_s": commits}


def sqlite_inserts(path: str, rows: int, seconds: float) -> dict[str, float]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(CREATE.replace("uuid", "blob").replace("timestamptz", "text"))
        data = [(r[0].bytes, r[1], r[2], r[3].isoformat()) for r in _rows(rows)]
        started = time.perf_counter()
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO bench_rows VALUES (?, ?, ?, ?)", data)
        conn.execute("COMMIT")
        bulk = rows / (time.perf_counter() - started)
        conn.execute("DELETE FROM bench_rows")
        single = [(r[0].bytes, r[1], r[2], r[3].isoformat()) for r in _rows(100_000)]
        done = 0
        started = time.perf_counter()
        deadline = started + seconds
        while time.perf_counter() < deadline and done < len(single):
            conn.execute("BEGIN")
            conn.execute("INSERT INTO bench_rows VALUES (?, ?, ?, ?)", single[done])
            conn.execute("COMMIT")
            done += 1
        commits = done / (time.perf_counter() - started)
    finally:
        conn.close()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)
    return {"sqlite_executemany_rows_per_s": bulk, "sqlite_single_commits_per_s": commits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="mode", required=True)
    fetch = sub.add_parser("fetch")
    fetch.add_argument("--target", required=True)
    fetch.add_argument("--start", type=int, default=0)
    fetch.add_argument("--count", type=int, default=5000)
    fetch.add_argument("--concurrency", type=int, default=100)
    fetch.add_argument("--extract", action="store_true")
    fetch.add_argument("--max-seconds", type=float, default=120.0)
    api = sub.add_parser("bareapi")
    api.add_argument("--port", type=int, required=True)
    inserts = sub.add_parser("inserts")
    inserts.add_argument("--pg-url", required=True, help="postgresql:// URL of a scratch database")
    inserts.add_argument("--sqlite-path", required=True)
    inserts.add_argument("--rows", type=int, default=5000)
    inserts.add_argument("--seconds", type=float, default=2.0, help="single-commit loop length")
    args = parser.parse_args()

    if args.mode == "bareapi":
        bare_api(args.port)
        return
    result: dict[str, Any]
    if args.mode == "fetch":
        result = _run(fetch_loop(args))
    else:
        result = _run(pg_inserts(args.pg_url, args.rows, args.seconds))
        result |= sqlite_inserts(args.sqlite_path, args.rows, args.seconds)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
