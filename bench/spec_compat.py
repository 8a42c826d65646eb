"""Do two revisions answer crawl and monitor requests alike, and store and read the same specs?

    python -m bench.spec_compat c4f6950             # that commit against this checkout
    python -m bench.spec_compat c4f6950 HEAD --cases 8000

Each revision's ``taskcrawler`` and ``tests`` are run in a child process of their own (the
checkout's, or ``git archive`` of a commit). The child answers a fixed corpus of crawl bodies
(valid and not: odd types, nulls, unknown fields, screenshots, ``max_age``, ``callback_url``
with ``crawl.page``) and seeded random ones four ways: ``CrawlSpec.create``, a monitor's crawl
in the domain, ``MonitorCreate`` then the domain, and ``CrawlIn`` then the domain; the fixed
ones also through the API (``POST /api/v1/crawls`` and ``/api/v1/monitors``, their ``GET`` and a
``PATCH``, ``POST /v1|v2/crawl``) on an embedded SQLite, with the specs and page rows stored.
Answers are compared as JSON, keys in order, ids and times left out. Then each revision reads
the other's stored specs. Prints each difference and a summary; exits 1 if any.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
START = "https://example.com/"
HOOK = "https://hooks.example.net/x"
CENTURY = 100 * 365 * 24 * 3600
VOLATILE = {"id", "job_id", "created_at", "updated_at", "started_at", "finished_at", "next_run_at"}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

#: Crawl bodies beside ``url`` (``url`` here replaces it; None leaves it out).
FIXED: list[dict[str, Any]] = [
    {},
    *({"formats": f} for f in (["screenshot"], ["markdown", "markdown"], [], "text", [1])),
    *({"formats": f} for f in (["bogus"], None, ["json"])),
    *({"formats": ["screenshot"], "render": r} for r in ("never", "auto", None)),
    {"formats": ["screenshot", "markdown"], "max_age": 60},
    {"formats": ["json"], "options": {"json": {"prompt": "x"}}},
    *({"render": r} for r in ("always", "auto", "never", "sometimes", 5, None, True)),
    *({"render_options": o} for o in ({"wait_seconds": 2}, {"wait_seconds": -1}, {"x": 1})),
    *({"render_options": o} for o in ("x", None, {}, {"viewport": {"width": 1}})),
    {"render_options": {"wait_for": "div[["}},
    {"render_options": {"block": ["image", "image"]}, "render": "always"},
    *({"max_age": a} for a in (0, 60, 60.5, -1, "60", True, 1e20, None, CENTURY, CENTURY + 1)),
    *({"callback_url": c} for c in (HOOK, "ftp://x.example/", "not a url", 5, None, "")),
    *({"webhook_events": e} for e in (["crawl.page"], [], ["x"], "crawl.page", None)),
    {"webhook_events": ["crawl.page", "crawl.completed", "crawl.page"], "callback_url": HOOK},
    *({"options": o} for o in ({"headers": {"Authorization": "Bearer s"}}, None, "x", {})),
    *({"options": o} for o in ({"x": 1}, {"delay_seconds": 1}, {"only_main_content": False})),
    {"options": {"actions": [{"type": "wait", "milliseconds": 10}]}, "render": "never"},
    *({"limit": n} for n in (0, 5, 10**9, "5", None)),
    *({"max_depth": d} for d in (-1, 3, None)),
    {"include_paths": ["("]},
    {"include_paths": ["^/a"], "exclude_paths": ["/b$"]},
    {"allow_subdomains": "yes"},
    *({"sitemap": s} for s in ("only", "bogus", None)),
    {"pages": {"formats": ["text"]}},
    {"foo": 1},
    *({"url": u} for u in (5, None, "ftp://x/")),
    {
        "formats": ["screenshot"],
        "max_age": 60,
        "render": "auto",
        "render_options": {"full_page": False},
        "webhook_events": ["crawl.page"],
        "callback_url": HOOK,
        "options": {"headers": {"X-A": "b"}},
    },
    # Two bad fields: the same one named first.
    {"formats": ["bogus"], "render": "sometimes", "max_age": -1, "callback_url": "x"},
    {"max_age": -1, "callback_url": "x"},
    {"webhook_events": ["x"], "max_age": -1},
    {"max_depth": -1, "formats": []},
    {"sitemap": "bogus", "max_age": -1},
    {"allow_external": "x", "callback_url": "x"},
]

#: The values the random bodies pick from, by field.
VALUES: dict[str, list[Any]] = {
    "formats": [["markdown"], ["screenshot"], ["screenshot", "links"], [], "text", [1], None],
    "render": ["always", "auto", "never", "x", None, 3, False],
    "render_options": [{"wait_seconds": 1}, {"wait_seconds": -1}, {"x": 1}, "x", None, {}],
    "max_age": [0, 1, 60.5, -1, "1", True, None, 1e12, []],
    "callback_url": [HOOK, "x", None, 5, "ftp://a/"],
    "webhook_events": [["crawl.page"], ["crawl.completed"], [], ["x"], "crawl.page", None],
    "options": [{"headers": {"A": "b"}}, {"only_main_content": False}, None, "x", {"x": 1}],
    "limit": [0, 1, 5, 10**7, "5", None, True, 2.5],
    "max_depth": [-1, 0, 3, None, "x", 1001],
    "include_paths": [["^/a"], ["("], "x", None, [1], []],
    "exclude_paths": [["/b"], ["(?=x)"], None],
    "allow_subdomains": [True, "x", None],
    "allow_external": [False, 1, None],
    "sitemap": ["skip", "only", "x", None, 1],
    "pages": [{"formats": ["text"]}, None],
    "foo": [1],
    "url": [START, "x", None, 5, "http://127.0.0.1/"],
}

FIRECRAWL: list[dict[str, Any]] = [
    {},
    {"scrapeOptions": {"formats": ["markdown", "screenshot"]}},
    {"scrapeOptions": {"formats": ["screenshot@fullPage"]}},
    {"maxAge": 60000},
    {"maxAge": -1},
    {"limit": 0},
    {"includePaths": ["("]},
    {"scrapeOptions": {"formats": ["bogus"]}},
    {"scrapeOptions": {"headers": {"A": "b"}, "onlyMainContent": False, "waitFor": 500}},
    {"webhook": {"url": HOOK, "events": ["page"]}},
    {"scrapeOptions": {"actions": [{"type": "wait", "milliseconds": 5}]}},
    {"sitemap": "only"},
    {"delay": 1},
]


def random_bodies(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    names = sorted(VALUES)
    return [
        {name: rng.choice(VALUES[name]) for name in rng.sample(names, rng.randint(0, 5))}
        for _ in range(count)
    ]


def shown(value: Any) -> Any:
    """``value`` with its keys' order kept (as pairs) and its ids and times left out."""
    if isinstance(value, dict):
        return [[k, "*" if k in VOLATILE else shown(v)] for k, v in value.items()]
    if isinstance(value, list):
        return [shown(v) for v in value]
    if isinstance(value, str):
        return UUID.sub("<uuid>", value)
    return value


def answer(response: Any) -> Any:
    try:
        return [response.status_code, shown(response.json())]
    except ValueError:
        return [response.status_code, response.text]


# --- the child: one revision ----------------------------------------------------------------


def outcome(make: Callable[[], Any]) -> Any:
    from pydantic import ValidationError

    from taskcrawler.domain.crawls import InvalidCrawlSpec

    try:
        return ["ok", shown(make())]
    except InvalidCrawlSpec as exc:
        return ["refused", type(exc).__name__, exc.field, exc.message]
    except ValidationError as exc:
        return ["invalid", [[list(map(str, e["loc"])), e["msg"], e["type"]] for e in exc.errors()]]
    except Exception as exc:  # an unexpected error is an answer to compare too
        return ["error", type(exc).__name__, str(exc)]


def four_ways(body: dict[str, Any]) -> list[Any]:
    from taskcrawler.contract.crawls import CrawlIn
    from taskcrawler.contract.monitors import MonitorCreate
    from taskcrawler.domain.crawls import CrawlSpec
    from taskcrawler.domain.monitors.spec import MonitorSpec

    given = dict(body)
    url = given.pop("url", START)

    def requested() -> Any:
        fields = CrawlIn.model_validate({"url": url, **given}).spec_fields()
        return CrawlSpec.create(**{k: v for k, v in fields.items() if v is not None}).to_dict()

    def monitor_requested() -> Any:
        request = MonitorCreate.model_validate({"crawl": body, "interval_seconds": 60})
        return MonitorSpec.create(interval_seconds=60, crawl=request.crawl).to_dict()

    def round_trip() -> Any:
        spec = CrawlSpec.create(url, **given)
        stored = json.loads(json.dumps(spec.to_dict()))
        return [spec.to_dict(), spec.public_dict(), CrawlSpec.from_dict(stored) == spec]

    return [
        outcome(round_trip),
        outcome(lambda: MonitorSpec.create(interval_seconds=60, crawl=body).to_dict()),
        outcome(monitor_requested),
        outcome(requested),
    ]


async def through_the_api(database: Path) -> dict[str, Any]:
    from taskcrawler.storage import upgrade_database
    from tests.e2e.harness import fast_settings, running

    url = f"sqlite+aiosqlite:///{database}"
    await upgrade_database(url)
    answers: dict[str, Any] = {}
    async with running("api", fast_settings(database_url=url)) as service:
        client = service.client
        for index, given in enumerate(FIXED):
            body = {k: v for k, v in {"url": START, **given}.items() if v is not None or k != "url"}
            created = await client.post("/api/v1/crawls", json=body)
            seen = [answer(created)]
            if created.status_code == 201:
                crawl = f"/api/v1/crawls/{created.json()['id']}"
                seen += [answer(await client.get(crawl)), answer(await client.get(f"{crawl}/jobs"))]
                await client.delete(crawl)
            answers[f"crawl {index} {json.dumps(given)}"] = seen
            monitor = {"crawl": {"url": START, **given}, "interval_seconds": 3600}
            created = await client.post("/api/v1/monitors", json=monitor)
            seen = [answer(created)]
            if created.status_code == 201:
                path = f"/api/v1/monitors/{created.json()['id']}"
                patch = {"formats": ["links"], "paused": True}
                seen += [
                    answer(await client.get(path)),
                    answer(await client.patch(path, json=patch)),
                ]
            answers[f"monitor {index} {json.dumps(given)}"] = seen
        for version in ("v1", "v2"):
            for index, given in enumerate(FIRECRAWL):
                started = await client.post(f"/{version}/crawl", json={"url": START, **given})
                answers[f"firecrawl {version} {index} {json.dumps(given)}"] = answer(started)
    return answers


def stored(database: Path) -> dict[str, list[Any]]:
    with sqlite3.connect(database) as db:
        crawls = [json.loads(s) for (s,) in db.execute("SELECT spec FROM crawls ORDER BY rowid")]
        monitors = [
            json.loads(s) for (s,) in db.execute("SELECT spec FROM monitors ORDER BY rowid")
        ]
        pages = [
            list(row)
            for row in db.execute(
                "SELECT url, formats, render, render_options, options, callback_url FROM jobs"
                " WHERE crawl_id IS NOT NULL ORDER BY rowid"
            )
        ]
    return {"crawls": crawls, "monitors": monitors, "page rows": pages}


def read_back(specs: dict[str, list[Any]]) -> dict[str, Any]:
    """Specs another revision stored, as this one reads and would store them again."""
    from taskcrawler.domain.crawls import CrawlSpec
    from taskcrawler.domain.monitors.spec import MonitorSpec

    read: dict[str, Any] = {}
    for index, spec in enumerate(specs["crawls"]):
        read[f"stored crawl {index}"] = outcome(lambda s=spec: CrawlSpec.from_dict(s).to_dict())
    for index, spec in enumerate(specs["monitors"]):
        read[f"stored monitor {index}"] = outcome(lambda s=spec: MonitorSpec.from_dict(s).to_dict())
    return read


def child(command: str, path: Path, cases: int, seed: int) -> None:
    if command == "read":
        print(json.dumps(read_back(json.loads(path.read_text()))))
        return
    answers: dict[str, Any] = {}
    for index, body in enumerate(FIXED + random_bodies(cases, seed)):
        answers[f"body {index} {json.dumps(body)}"] = four_ways(body)
    answers.update(asyncio.run(through_the_api(path)))
    kept = stored(path)
    answers["stored"] = shown(kept)
    path.with_suffix(".json").write_text(json.dumps(kept))
    print(json.dumps(answers))


# --- the parent -----------------------------------------------------------------------------


def checkout(revision: str, into: Path) -> Path:
    """``revision``'s package and tests under ``into``; the working tree for ``.``."""
    if revision == ".":
        return ROOT
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "taskcrawler", "tests"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run_child(root: Path, *args: str) -> dict[str, Any]:
    # Run as a file, not with -m: the revision's package must come first on the path.
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, __file__, *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def differences(name: str, old: dict[str, Any], new: dict[str, Any]) -> int:
    differing = [key for key in old.keys() | new.keys() if old.get(key) != new.get(key)]
    for key in sorted(differing)[:20]:
        print(f"{name} differs: {key}\n  old: {old.get(key)}\n  new: {new.get(key)}")
    print(f"{name}: {len(old)} answers, {len(differing)} differ")
    return len(differing)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", nargs="?", help="a revision, as git names it")
    parser.add_argument("new", nargs="?", default=".", help="a revision; . is the working tree")
    parser.add_argument("--cases", type=int, default=4000, help="random bodies beside the fixed")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--child", nargs=2, metavar=("COMMAND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), args.cases, args.seed)
        return
    if args.old is None:
        parser.error("the old revision is required")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        roots = {}
        for side, revision in (("old", args.old), ("new", args.new)):
            (work / side).mkdir()
            roots[side] = checkout(revision, work / side)
        counts = ["--cases", str(args.cases), "--seed", str(args.seed)]
        answers = {
            side: run_child(root, *counts, "--child", "answer", str(work / f"{side}.db"))
            for side, root in roots.items()
        }
        differ = differences("answers", answers["old"], answers["new"])
        for reader, writer in (("new", "old"), ("old", "new")):
            specs = str(work / f"{writer}.json")
            read = run_child(roots[reader], "--child", "read", specs)
            own = run_child(roots[writer], "--child", "read", specs)
            differ += differences(f"{writer}'s specs read by {reader}", own, read)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
