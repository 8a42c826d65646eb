"""CPU of route matching and of whole requests, in process: ``python -m bench.route_cpu``.

The app is ``create_app`` on SQLite and the embedded queue, its lifespan running, called straight
through ASGI (no HTTP client, no server). For each request of :data:`REQUESTS`:

- ``match``: CPU of one pass of Starlette's router over ``app.router.routes`` (each route's
  ``matches`` until one matches fully), as the router makes it before it hands the request on;
- ``request``: CPU of the whole ASGI call (middleware, routing, handler, the database);
- ``calls``: how many ``matches``/``_match`` functions one whole request calls (cProfile's count).

Figures are microseconds of ``time.process_time`` per call, the best of ``--runs`` runs of
``--repeat`` calls (the least disturbed by the other work of a shared machine). ``--ref`` runs
a git ref's ``taskcrawler`` in a child process too, the two alternated run by run; each side
always runs in a child of its own. ``--openapi FILE`` writes this tree's ``/openapi.json`` as
served (bytes) for a byte-for-byte comparison with another build's.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.routing import Match

from bench.post_cpu import _extract, asgi_call
from tests.support.processes import REPO_ROOT

Message = dict[str, Any]
Asgi = Callable[[Message, Any, Any], Awaitable[None]]

#: A job stored by the warm-up; its id replaces ``{job}``.
SUBMITTED = b'{"url": "http://127.0.0.1:9/route-cpu"}'
PING = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
#: (label, method, path, body): the hot paths first, then paths near the end of the routes.
REQUESTS: list[tuple[str, str, str, bytes]] = [
    ("POST /api/v1/jobs (known URL)", "POST", "/api/v1/jobs", SUBMITTED),
    ("GET /api/v1/jobs/{id}", "GET", "/api/v1/jobs/{job}", b""),
    ("GET /v1/crawl/{id} (unknown)", "GET", "/v1/crawl/abc", b""),
    ("GET /healthz", "GET", "/healthz", b""),
    ("GET / (dashboard)", "GET", "/", b""),
    ("POST /mcp (ping)", "POST", "/mcp", PING),
    ("GET /nope (404)", "GET", "/nope", b""),
]


def _scope(method: str, path: str, body: bytes) -> Message:
    headers = [(b"host", b"localhost:8000"), (b"accept", b"application/json, text/event-stream")]
    if body:
        headers += [(b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode())]  # fmt: skip
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": b"", "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 5000),
        "headers": headers,
    }  # fmt: skip


async def call(app: Asgi, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    """One request through the whole app: its status and body."""
    return await asgi_call(app, _scope(method, path, body), body)


def match_once(routes: list[Any], scope: Message) -> Any:
    """The route Starlette's router picks, by its first pass over the routes."""
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route
    return None


def _best_match_us(routes: list[Any], scope: Message, repeat: int, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        cpu = time.process_time()
        for _ in range(repeat):
            match_once(routes, dict(scope))  # a fresh scope each time, as each request brings
        best = min(best, (time.process_time() - cpu) / repeat * 1e6)
    return best


async def _best_request_us(app: Asgi, request: tuple[str, str, bytes], repeat: int,
                           runs: int) -> float:  # fmt: skip
    best = float("inf")
    for _ in range(runs):
        cpu = time.process_time()
        for _ in range(repeat):
            await call(app, *request)
        best = min(best, (time.process_time() - cpu) / repeat * 1e6)
    return best


async def _match_calls(app: Asgi, request: tuple[str, str, bytes]) -> int:
    profiler = cProfile.Profile()
    profiler.enable()
    await call(app, *request)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    return sum(row[1] for (_, _, name), row in stats.items() if name in ("matches", "_match"))


async def measure(repeat: int, runs: int) -> dict[str, dict[str, float]]:
    """Every request's figures, in this process (this tree's or ``PYTHONPATH``'s code)."""
    from taskcrawler.api.app import create_app
    from taskcrawler.settings import Settings
    from taskcrawler.storage.migrate import upgrade_database

    with tempfile.TemporaryDirectory() as workdir:
        url = f"sqlite+aiosqlite:///{workdir}/bench.db"
        await upgrade_database(url)
        app: Any = create_app(Settings(database_url=url))
        async with app.router.lifespan_context(app):
            status, body = await call(app, "POST", "/api/v1/jobs", SUBMITTED)
            if status not in (200, 201):
                raise RuntimeError(f"the submission answered {status}: {body!r}")
            job = json.loads(body)["id"]
            figures: dict[str, dict[str, float]] = {}
            for label, method, path, payload in REQUESTS:
                request = (method, path.replace("{job}", job), payload)
                status, _ = await call(app, *request)  # warm: caches, the MCP session manager
                figures[label] = {
                    "status": status,
                    "match": _best_match_us(app.router.routes, _scope(*request), repeat, runs),
                    "request": await _best_request_us(app, request, repeat, runs),
                    "calls": await _match_calls(app, request),
                }
    return figures


async def served_openapi() -> bytes:
    """``/openapi.json`` as the app serves it."""
    from taskcrawler.api.app import create_app
    from taskcrawler.settings import Settings

    with tempfile.TemporaryDirectory() as workdir:
        app: Any = create_app(Settings(database_url=f"sqlite+aiosqlite:///{workdir}/bench.db"))
        status, body = await call(app, "GET", "/openapi.json")
    if status != 200:
        raise RuntimeError(f"/openapi.json answered {status}")
    return body


def _child(tree: Path | None, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """One run of the code in ``tree`` (a ``git archive`` of the ref; None: this tree's)."""
    path = str(REPO_ROOT) if tree is None else f"{tree}{os.pathsep}{REPO_ROOT}"
    env = os.environ | {"PYTHONPATH": path}
    # -P: the working directory's taskcrawler (this tree's) must not come before the ref's.
    command = [sys.executable, "-P", "-m", "bench.route_cpu", "--child",
               "--repeat", str(args.repeat), "--runs", "1"]  # fmt: skip
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True, timeout=900)
    figures: dict[str, dict[str, float]] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def _best_of(runs: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {
        label: {key: min(run[label][key] for run in runs) for key in runs[0][label]}
        for label in runs[0]
    }


def _table(sides: dict[str, dict[str, dict[str, float]]]) -> str:
    names = list(sides)
    head = "| request | status | " + " | ".join(
        f"{name}: match us | {name}: request us | {name}: match calls" for name in names
    )
    lines = [head + " |", "|---" * (2 + 3 * len(names)) + "|"]
    for label in sides[names[0]]:
        cells = [label, f"{int(sides[names[0]][label]['status'])}"]
        for name in names:
            row = sides[name][label]
            cells += [f"{row['match']:.1f}", f"{row['request']:.0f}", f"{int(row['calls'])}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main_runs(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        tree = Path(workdir)
        if args.ref:
            _extract(args.ref, tree)
        results: dict[str, list[dict[str, dict[str, float]]]] = {"this": []}
        if args.ref:
            results[args.ref] = []
        for n in range(args.runs):
            order = list(results) if n % 2 == 0 else list(reversed(results))
            for name in order:
                results[name].append(_child(None if name == "this" else tree, args))
            print(f"run {n + 1} done (load {os.getloadavg()[0]:.1f})", flush=True)
    print(_table({name: _best_of(runs) for name, runs in results.items()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=400, help="requests per run and path")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ref", help="also run this git ref's taskcrawler, alternated")
    parser.add_argument("--openapi", help="write this tree's /openapi.json here and stop")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.openapi:
        Path(args.openapi).write_bytes(asyncio.run(served_openapi()))
    elif args.child:
        print(json.dumps(asyncio.run(measure(args.repeat, args.runs))))
    else:
        main_runs(args)


if __name__ == "__main__":
    main()
