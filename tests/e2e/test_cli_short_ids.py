"""The command line at 80 columns, with short ids, and its bulk cancel: real subprocesses against
a real ``taskcrawler serve`` in both modes (and a stub API for an ambiguous short id, which a
real one gives only by chance)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from aiohttp import web

from tests.e2e.test_cli_client import Result, stub  # noqa: F401 - the stub fixture
from tests.support.processes import ProcessManager, clean_env
from tests.support.served import Served, serve
from tests.support.target import TargetServer
from tests.unit.test_client import JOB

LONG_TITLE = "A page whose title is far longer than any column of an eighty column table"


async def run(*args: str, api: str, cwd: Path, columns: int = 80) -> Result:
    """``python -m taskcrawler *args`` as in a terminal ``columns`` wide."""
    command = [sys.executable, "-m", "taskcrawler", *args, "--api", api]
    done = await asyncio.to_thread(
        subprocess.run, command, env=clean_env({"COLUMNS": str(columns)}), cwd=cwd,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.fixture(params=["embedded", "production"])
def backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    """The database URL and the environment of each mode."""
    if request.param == "embedded":
        return request.getfixturevalue("sqlite_url"), {}
    return request.getfixturevalue("pg_url"), {
        "TASKCRAWLER_REDIS_URL": request.getfixturevalue("redis_url"),
        "TASKCRAWLER_REDIS_PREFIX": request.getfixturevalue("redis_prefix"),
    }


@pytest.fixture
async def served(
    backend: tuple[str, dict[str, str]], processes: ProcessManager, tmp_path: Path
) -> Served:
    database_url, env = backend
    return await serve(processes, tmp_path, database_url, **env)


def _fits(output: str, columns: int = 80) -> None:
    for line in output.splitlines():
        assert len(line) <= columns, f"{len(line)} columns: {line!r}"


async def test_tables_fit_80_columns_and_short_ids_are_taken_everywhere(
    served: Served, target: TargetServer, tmp_path: Path
) -> None:
    api = served.base_url
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
    served: Served, target: TargetServer, tmp_path: Path
) -> None:
    api = served.base_url
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
