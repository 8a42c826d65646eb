"""The command line at 80 columns, with short ids, and its bulk cancel, run in the test's process
(tests/support/cli.py) against a real ``taskcrawler serve`` in both modes, one for the module in
each, a key for each test (and a stub API for an ambiguous short id, which a real one gives only
by chance)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import web

from tests.e2e.test_cli_client import Result, stub  # noqa: F401 - the stub fixture
from tests.support.cli import Api
from tests.support.served import Served, served_by_module, sqlite_copy
from tests.support.services import DatabasePool, delete_prefix, unique_name
from tests.support.target import TargetServer
from tests.unit.test_client import JOB

LONG_TITLE = "A page whose title is far longer than any column of an eighty column table"
#: As in a terminal 80 columns wide.
EIGHTY = {"COLUMNS": "80"}


async def run(*args: str, api: Api | str, cwd: Path) -> Result:
    """``taskcrawler *args --api ...`` as in a terminal 80 columns wide."""
    return await (api if isinstance(api, Api) else Api(api)).cli(*args, cwd=cwd, env=EIGHTY)


@dataclass(frozen=True)
class Mode:
    """What a mode's server runs on: a copy of the SQLite template, or PostgreSQL and Redis."""

    sqlite_template: Path | None = None
    pg_pool: DatabasePool | None = None
    redis_url: str | None = None


@pytest.fixture(scope="module", params=["embedded", "production"])
def _mode(request: pytest.FixtureRequest) -> Mode:
    # Looked up here, outside the event loop (an async fixture cannot set up another), so that
    # PostgreSQL and Redis start only for the production mode.
    if request.param == "embedded":
        return Mode(sqlite_template=request.getfixturevalue("_sqlite_template"))
    return Mode(
        pg_pool=request.getfixturevalue("pg_pool"),
        redis_url=request.getfixturevalue("redis_service").url,
    )


@pytest.fixture(scope="module")
async def _server(_mode: Mode, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    """``taskcrawler serve`` in each mode, on a database (and Redis prefix) of its own."""
    workdir = tmp_path_factory.mktemp("served")
    if _mode.sqlite_template is not None:
        async with served_by_module(workdir, sqlite_copy(_mode.sqlite_template, workdir)) as served:
            yield served
        return
    assert _mode.pg_pool is not None and _mode.redis_url is not None
    pool, redis_url = _mode.pg_pool, _mode.redis_url
    name, prefix = await pool.acquire(), unique_name("tctest:")
    try:
        async with served_by_module(
            workdir,
            pool.url(name),
            TASKCRAWLER_REDIS_URL=redis_url,
            TASKCRAWLER_REDIS_PREFIX=prefix,
        ) as served:
            yield served
    finally:
        await delete_prefix(redis_url, prefix)
        await pool.release(name)


@pytest.fixture
async def served(_server: Served, request: pytest.FixtureRequest) -> Api:
    """The module's server of this mode, as this test's own key sees it."""
    return Api(_server.base_url, await _server.new_key(request.node.name))


def _fits(output: str, columns: int = 80) -> None:
    for line in output.splitlines():
        assert len(line) <= columns, f"{len(line)} columns: {line!r}"


async def test_tables_fit_80_columns_and_short_ids_are_taken_everywhere(
    served: Api, target: TargetServer, tmp_path: Path
) -> None:
    api = served
    urls = [
        target.url(f"/title/{LONG_TITLE.replace(' ', '%20')}?padding={'x' * 60}&n={n}")
        for n in range(3)
    ]
    submitted = await run("submit", *urls, "--wait", "--json", api=api, cwd=tmp_path)
    assert submitted.code == 0, submitted
    ids = [job["id"] for job in json.loads(submitted.out)]

    listed = await run("jobs", "list", api=api, cwd=tmp_path)
    assert listed.code == 0, listed
    _fits(listed.out)
    rows = [line for line in listed.out.splitlines() if "COMPLETED" in line]
    assert len(rows) == 3  # one line a job: nothing wrapped
    for job_id in ids:
        assert job_id[:8] in listed.out and job_id not in listed.out
    assert "A page whose" in listed.out and "…" in listed.out
    for n in range(3):  # URLs cut in the middle: where they differ stays readable
        assert f"&n={n}" in listed.out

    short = ids[0][:8]
    shown = await run("jobs", "show", short, api=api, cwd=tmp_path)
    assert shown.code == 0, shown
    assert f"Job {ids[0]}" in shown.out
    retried = await run("jobs", "retry", short.upper(), api=api, cwd=tmp_path)
    assert retried.code == 0 and f"Job {ids[0]} is PENDING again" in retried.out, retried
    unknown = "0000" if not any(i.startswith("0000") for i in ids) else "ffff"
    missing = await run("jobs", "show", unknown, api=api, cwd=tmp_path)
    assert missing.code == 2
    assert missing.err.startswith(f"error: no job's id starts with '{unknown}'")

    # A crawl and a monitor, by their short ids too.
    crawl = await run("crawl", target.url("/page/1"), "--limit", "2", "--wait", "--json",
                      api=api, cwd=tmp_path)  # fmt: skip
    crawl_id = json.loads(crawl.out)["id"]
    status = await run("crawl", "status", crawl_id[:8], "--json", api=api, cwd=tmp_path)
    assert status.code == 0 and json.loads(status.out)["id"] == crawl_id, status
    made = await run("monitor", "create", *urls[:2], "-i", "3600", "--json", api=api, cwd=tmp_path)
    monitor_id = json.loads(made.out)["id"]
    monitors = await run("monitor", "list", api=api, cwd=tmp_path)
    _fits(monitors.out)
    assert monitor_id[:8] in monitors.out and monitor_id not in monitors.out
    paused = await run("monitor", "pause", monitor_id[:8], "--json", api=api, cwd=tmp_path)
    assert json.loads(paused.out)["status"] == "PAUSED", paused


async def test_jobs_cancel_takes_a_filter(
    served: Api, target: TargetServer, tmp_path: Path
) -> None:
    api = served
    finished = await run("submit", target.url("/page/3"), "--wait", "--json", api=api, cwd=tmp_path)
    [done] = json.loads(finished.out)
    urls = [target.url(f"/slow?delay=15&n={n}") for n in range(3)]
    submitted = await run("submit", *urls, "--json", api=api, cwd=tmp_path)
    slow = [job["id"] for job in json.loads(submitted.out)]

    refused = await run("jobs", "cancel", api=api, cwd=tmp_path)
    assert refused.code == 2 and "give job ids, or a filter" in refused.err

    cancelled = await run("jobs", "cancel", "--host", "127.0.0.1", api=api, cwd=tmp_path)
    assert cancelled.code == 0, cancelled
    assert cancelled.out.startswith("Cancelled 3 jobs: ")
    for job_id in slow:
        assert job_id[:8] in cancelled.out
    assert done["id"][:8] not in cancelled.out  # finished: left alone
    again = await run("jobs", "cancel", *[i[:8] for i in slow], "--json", api=api, cwd=tmp_path)
    assert json.loads(again.out) == {"cancelled": 0, "ids": [], "more": False}
    shown = await run("jobs", "list", "--status", "CANCELLED", "--json", api=api, cwd=tmp_path)
    assert sorted(job["id"] for job in json.loads(shown.out)["jobs"]) == sorted(slow)


async def test_an_ambiguous_short_id_names_the_candidates(
    stub: tuple[str, dict[str, web.Response]],  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    api, answers = stub
    first, second = (f"abcd{uuid.uuid4().hex[4:]}" for _ in range(2))
    jobs = [
        JOB | {"id": str(uuid.UUID(digits)), "url": f"https://example.com/{n}"}
        for n, digits in enumerate((first, second))
    ]
    answers["/api/v1/jobs"] = web.json_response({"jobs": jobs, "next_cursor": None})
    result = await run("jobs", "show", "abcd", api=api, cwd=tmp_path)
    assert result.code == 2
    assert result.err.startswith("error: the short id 'abcd' is ambiguous: it starts the ids of ")
    for job in jobs:
        assert f"{job['id']} ({job['url']})" in result.err
    assert result.err.rstrip().endswith("give more of it")
