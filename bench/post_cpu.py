"""CPU per single submission, in process: ``python -m bench.post_cpu [--ref REF] [--profile F]``.

The app (``create_app``, as ``taskcrawler api`` builds it, on PostgreSQL + Redis) is called
straight through ASGI, no HTTP client and no server: ``--concurrency`` tasks POST one new URL
each to ``/api/v1/jobs``, ``--posts`` in all, and the process's CPU time per request is printed
(the app, the group commit, asyncpg and redis-py; not uvicorn's HTTP parsing). On a machine
others share, CPU per request moves much less than requests per second. ``--ref`` runs a git
ref's ``taskcrawler`` in a child process too, the two alternated ``--runs`` times. ``--profile``
writes cProfile's stats of the first run (this tree's, in this process) to a file. Every run
drops its database and deletes its Redis keys.

As ``taskcrawler api`` does, what start-up built is frozen out of the garbage collector's
reach before the load; each run also gives the collector's CPU time and runs per request. The
profile is timed in CPU time (``time.process_time``): its shares leave out the waits for a
core, which a wall-clock profile counts on a busy machine.

``--alternate NAME`` measures one shortcut alone: one process, one app, one database,
``--runs`` pairs of ``--posts`` each, the shortcut on and off in turns. ``lean``: the lean route
(:mod:`taskcrawler.api.lean`; off, FastAPI's own handler answers every request);
``url``: the plain-URL shortcut of :mod:`taskcrawler.domain.urls` (off, both parsers read every
URL). ``--alternate-lean`` is ``--alternate lean``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.databases import temporary_database
from tests.support.processes import REPO_ROOT
from tests.support.services import delete_prefix, resolve_postgres, resolve_redis

Message = dict[str, Any]


async def _post(app: Any, body: bytes, path: str = "/api/v1/jobs") -> int:
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": b"", "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 5000),
        "headers": [(b"host", b"bench"), (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode())],
    }  # fmt: skip
    status, _ = await asgi_call(app, scope, body)
    return status


async def asgi_call(app: Any, scope: Message, body: bytes) -> tuple[int, bytes]:
    """One request, ``body`` in one piece, through ``app`` in this process: its status and
    body."""
    sent = False
    status, answer = 0, bytearray()

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client never goes away
        raise AssertionError

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            answer.extend(message.get("body", b""))

    await app(scope, receive, send)
    return status, bytes(answer)


async def one_run(database_url: str, redis_url: str, posts: int, concurrency: int,
                  profile: str | None) -> dict[str, float]:  # fmt: skip
    from taskcrawler.api.app import create_app
    from taskcrawler.cli.main import freeze_startup_heap
    from taskcrawler.settings import Settings
    from taskcrawler.storage.migrate import upgrade_database

    await upgrade_database(database_url)
    prefix = "bench_post_cpu_" + secrets.token_hex(4)
    app = create_app(Settings(database_url=database_url, redis_url=redis_url, redis_prefix=prefix))
    freeze_startup_heap()
    run = secrets.token_hex(6)

    async def submit(name: str) -> None:
        body = json.dumps({"url": f"http://127.0.0.1:9/{run}/{name}"}).encode()
        status = await _post(app, body)
        if status != 201:
            raise RuntimeError(f"POST answered {status}")

    try:
        return await _timed(app, submit, posts, concurrency, profile)
    finally:
        await delete_prefix(redis_url, prefix)  # the Redis is shared: no key outlives the run


async def _timed(app: Any, submit: Any, posts: int, concurrency: int,
                 profile: str | None) -> dict[str, float]:  # fmt: skip
    async with app.router.lifespan_context(app):
        for i in range(100):  # warm up: connections, caches
            await submit(f"w{i}")
        return await _load(submit, posts, concurrency, profile)


async def _load(submit: Any, posts: int, concurrency: int,
                profile: str | None) -> dict[str, float]:  # fmt: skip
    todo = list(range(posts))

    async def client() -> None:
        while todo:
            await submit(str(todo.pop()))

    # CPU time, not wall time: on a machine others share, wall time counts the waits for a core.
    profiler = cProfile.Profile(time.process_time)
    collector = _CollectorTime()
    wall, cpu = time.perf_counter(), time.process_time()
    if profile:
        profiler.enable()
    with collector:
        await asyncio.gather(*(client() for _ in range(concurrency)))
    if profile:
        profiler.disable()
        profiler.dump_stats(profile)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "cpu_us_per_post": cpu / posts * 1e6,
        "post_per_s": posts / wall,
        "gc_us_per_post": collector.cpu / posts * 1e6,
        "gc_runs_per_post": collector.runs / posts,
    }


class _CollectorTime:
    """The CPU time the garbage collector took while in the block, and how often it ran."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.runs = 0
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.cpu += time.process_time() - self._started
            self.runs += 1

    def __enter__(self) -> None:
        gc.callbacks.append(self._callback)

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


#: What the switches replaced, put back when they are on.
_ORIGINALS: dict[str, Any] = {}


def _switch_lean(on: bool) -> None:
    """Off: FastAPI's own handler answers every request, as before the lean route."""
    import taskcrawler.api.lean as lean

    plain_json = _ORIGINALS.setdefault("lean", lean._is_json)
    lean._is_json = plain_json if on else (lambda request: False)


def _switch_url(on: bool) -> None:
    """Off: every URL goes through both parsers (urlsplit and yarl), as before the plain-URL
    shortcut; the key and the host are the same either way (tests/unit/test_url_fast_path.py)."""
    import taskcrawler.domain.urls as urls

    plain_url = _ORIGINALS.setdefault("url", urls._PLAIN_URL)
    urls._PLAIN_URL = plain_url if on else re.compile(r"(?!)")  # matches nothing


#: What each ``--alternate`` turns on and off, in this process.
SWITCHES = {"lean": _switch_lean, "url": _switch_url}


async def alternate(args: argparse.Namespace, name: str) -> None:
    from taskcrawler.api.app import create_app
    from taskcrawler.cli.main import freeze_startup_heap
    from taskcrawler.settings import Settings
    from taskcrawler.storage.migrate import upgrade_database

    switch = SWITCHES[name]
    admin = args.pg_url or (await resolve_postgres()).url
    redis_url = args.redis_url or (await resolve_redis()).url
    figures: dict[str, list[float]] = {"on": [], "off": []}
    async with temporary_database(admin, prefix="bench_post_cpu_") as url:
        await upgrade_database(url)
        prefix = "bench_post_cpu_" + secrets.token_hex(4)
        app = create_app(Settings(database_url=url, redis_url=redis_url, redis_prefix=prefix))
        freeze_startup_heap()
        run, sent = secrets.token_hex(6), 0

        async def submit(name: str) -> None:
            nonlocal sent
            sent += 1
            body = json.dumps({"url": f"http://127.0.0.1:9/{run}/{sent}"}).encode()
            if (status := await _post(app, body)) != 201:
                raise RuntimeError(f"POST answered {status}")

        try:
            async with app.router.lifespan_context(app):
                for n in range(args.runs):
                    for mode in ("on", "off") if n % 2 == 0 else ("off", "on"):
                        switch(mode == "on")
                        result = await _load(submit, args.posts, args.concurrency, None)
                        figures[mode].append(result["cpu_us_per_post"])
                        load = os.getloadavg()[0]
                        print(f"pair {n + 1} {name} {mode} (load {load:.1f}): {_show(result)}",
                              flush=True)  # fmt: skip
        finally:
            switch(True)
            await delete_prefix(redis_url, prefix)
    for mode, runs in figures.items():
        print(f"median {name} {mode}: {statistics.median(runs):.0f} us CPU per POST")
    ratios = [on / off for on, off in zip(figures["on"], figures["off"], strict=True)]
    lower = sum(ratio < 1 for ratio in ratios)
    print(f"on / off per pair: {', '.join(f'{r:.2f}' for r in ratios)}; lower in {lower} of "
          f"{len(ratios)}")  # fmt: skip


def _extract(ref: str, tree: Path) -> None:
    """``ref``'s ``taskcrawler`` package into ``tree`` (nothing else runs meanwhile)."""
    command = ["git", "-C", str(REPO_ROOT), "archive", ref, "taskcrawler"]
    archive = subprocess.run(command, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)


def _child(tree: Path | None, args: argparse.Namespace, database_url: str, redis_url: str) -> Any:
    """One run of the code in ``tree`` (a ``git archive`` of the ref; None: this tree's), in a
    process of its own, as every run is: the same start for both."""
    path = str(REPO_ROOT) if tree is None else f"{tree}{os.pathsep}{REPO_ROOT}"
    env = os.environ | {"PYTHONPATH": path}
    command = [sys.executable, "-m", "bench.post_cpu", "--child", "--database-url", database_url,
               "--redis-url", redis_url, "--posts", str(args.posts),
               "--concurrency", str(args.concurrency)]  # fmt: skip
    # ``python -m`` puts the working directory first on sys.path: run from the ref's tree, or
    # this checkout's taskcrawler would be imported in its place.
    out = subprocess.run(command, env=env, cwd=tree or REPO_ROOT, check=True,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    imported = Path(result.pop("taskcrawler"))
    if not imported.is_relative_to(tree or REPO_ROOT):
        raise RuntimeError(f"the run imported {imported}, not the code of {tree or REPO_ROOT}")
    return result


async def main_async(args: argparse.Namespace) -> None:
    admin = args.pg_url or (await resolve_postgres()).url
    redis_url = args.redis_url or (await resolve_redis()).url
    with tempfile.TemporaryDirectory() as workdir:
        tree = Path(workdir)
        if args.ref:
            _extract(args.ref, tree)
        figures: dict[str, list[dict[str, float]]] = {"this": [], args.ref or "": []}
        for n in range(args.runs):
            async with temporary_database(admin, prefix="bench_post_cpu_") as url:
                if args.profile and n == 0:
                    this = await one_run(url, redis_url, args.posts, args.concurrency, args.profile)
                else:
                    this = _child(None, args, url, redis_url)
            figures["this"].append(this)
            line = f"run {n + 1} (load {os.getloadavg()[0]:.1f}): this {_show(this)}"
            if args.ref:
                async with temporary_database(admin, prefix="bench_post_cpu_") as url:
                    ref = _child(tree, args, url, redis_url)
                figures[args.ref].append(ref)
                line += f"; {args.ref} {_show(ref)}"
            print(line, flush=True)
    for name, runs in figures.items():
        if runs:
            cpu = statistics.median(r["cpu_us_per_post"] for r in runs)
            rate = statistics.median(r["post_per_s"] for r in runs)
            print(f"median {name or 'this'}: {cpu:.0f} us CPU per POST, {rate:.0f} POST/s")


def _show(figures: dict[str, float]) -> str:
    return (
        f"{figures['cpu_us_per_post']:.0f} us CPU/POST ({figures['gc_us_per_post']:.0f} in "
        f"{figures['gc_runs_per_post']:.2f} collections), {figures['post_per_s']:.0f} POST/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ref", help="also run this git ref's taskcrawler, alternated")
    parser.add_argument("--profile", help="write one run's cProfile stats here")
    parser.add_argument("--alternate", choices=sorted(SWITCHES),
                        help="one shortcut on and off in turns, in one process")  # fmt: skip
    parser.add_argument("--alternate-lean", action="store_const", const="lean",
                        dest="alternate", help="--alternate lean")  # fmt: skip
    parser.add_argument("--pg-url", help="an admin URL (default: found or started as tests do)")
    parser.add_argument("--redis-url")
    parser.add_argument("--database-url", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = asyncio.run(
            one_run(args.database_url, args.redis_url, args.posts, args.concurrency, None)
        )
        import taskcrawler

        print(json.dumps(result | {"taskcrawler": taskcrawler.__file__}))
        return
    asyncio.run(alternate(args, args.alternate) if args.alternate else main_async(args))


if __name__ == "__main__":
    main()
