"""``taskcrawler submit`` and ``taskcrawler jobs`` as a user runs them, against a real
``taskcrawler serve`` (or a stub API for answers a real one rarely gives).

The commands run in the test's process (tests/support/cli.py): what they print and their exit
codes are the same in a child process, which costs a new interpreter a call. The module's tests
share one server, each with a key of its own; :func:`test_both_entry_points_run_as_processes`
runs real ones.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from tests.support.cli import Api, Result, run_cli
from tests.support.processes import clean_env
from tests.support.served import Served, served_by_module, sqlite_copy
from tests.support.services import free_port
from tests.support.target import TargetServer

__all__ = ["Result", "cli"]  # the other command-line tests use them


async def cli(*args: str, api: str | None = None, key: str | None = None, cwd: Path) -> Result:
    """``taskcrawler *args [--api api]`` with ``key`` in TASKCRAWLER_API_KEY."""
    env = {"TASKCRAWLER_API_KEY": key} if key else {}
    return await run_cli(*args, *(["--api", api] if api else []), cwd=cwd, env=env)


@pytest.fixture(scope="module")
async def keyed_cli_server(
    tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path
) -> AsyncIterator[Served]:
    workdir = tmp_path_factory.mktemp("served")
    database_url = sqlite_copy(_sqlite_template, workdir)
    # Keys required: every test here uses a key of its own (``api``), and the refusals without
    # one are read from this server too.
    env = {"TASKCRAWLER_MAX_RETRIES": "1", "TASKCRAWLER_AUTH_REQUIRED": "true"}
    async with served_by_module(workdir, database_url, **env) as served:
        yield served


@pytest.fixture
async def api(keyed_cli_server: Served, request: pytest.FixtureRequest) -> Api:
    """The module's server, as this test's own key sees it."""
    return Api(keyed_cli_server.base_url, await keyed_cli_server.new_key(request.node.name))


async def test_submit_and_wait_shows_progress_and_a_summary_and_fails_if_a_job_failed(
    api: Api, target: TargetServer, tmp_path: Path
) -> None:
    urls = [target.url("/page/1"), target.url("/page/2"), target.url("/status/404")]
    result = await api.cli("submit", *urls, "--wait", cwd=tmp_path)
    assert result.code == 1, result
    assert "Submitted 3 URLs: 3 new, 0 already known (3 jobs)." in result.err
    assert "progress: 3/3 done, 1 failed" in result.err  # no terminal: plain progress lines
    assert "Summary" in result.out
    for url in urls:
        assert url in result.out
    assert "http_404: HTTP 404" in result.out
    assert "3 jobs: 2 completed, 1 failed" in result.out


async def test_submit_a_file_and_wait_with_json_exits_0_when_all_completed(
    api: Api, target: TargetServer, tmp_path: Path
) -> None:
    urls = [target.url(f"/page/{n}") for n in range(10, 15)]
    listing = tmp_path / "urls.txt"
    listing.write_text("# pages\n\n" + "\n".join(urls) + "\n" + urls[0] + "\n")
    result = await api.cli("submit", "-f", str(listing), "--wait", "--json",
                       cwd=tmp_path)  # fmt: skip
    assert result.code == 0, result
    jobs = json.loads(result.out)
    assert [job["url"] for job in jobs] == urls  # one job per URL, in order, duplicates merged
    assert {job["status"] for job in jobs} == {"COMPLETED"}
    assert "Submitted 6 URLs: 5 new, 1 already known (5 jobs)." in result.err


async def test_submit_without_wait_then_jobs_list_show_retry_cancel(
    api: Api, target: TargetServer, tmp_path: Path
) -> None:
    url = target.url("/title/Shown")
    submitted = await api.cli("submit", url, cwd=tmp_path)
    assert submitted.code == 0, submitted
    job_id, status, echoed = submitted.out.strip().split("\t")
    uuid.UUID(job_id)
    assert status in ("PENDING", "PROCESSING", "COMPLETED") and echoed == url

    again = await api.cli("submit", url, "--wait", cwd=tmp_path)
    assert again.code == 0 and "0 new, 1 already known" in again.err

    listed = await api.cli("jobs", "list", "--json", cwd=tmp_path)
    assert listed.code == 0
    assert [job["id"] for job in json.loads(listed.out)["jobs"]] == [job_id]
    table = await api.cli("jobs", "list", "--status", "completed", cwd=tmp_path)
    assert job_id[:8] in table.out and "Shown" in table.out  # a short id
    none = await api.cli("jobs", "list", "--status", "FAILED", cwd=tmp_path)
    assert none.code == 0 and "No jobs." in none.err

    shown = await api.cli("jobs", "show", job_id, cwd=tmp_path)
    assert shown.code == 0
    for text in ("COMPLETED", url, "Shown", "text/html", "took"):
        assert text in shown.out

    retried = await api.cli("jobs", "retry", job_id, cwd=tmp_path)
    assert retried.code == 0, retried
    assert f"Job {job_id} is PENDING again, run 2: {url}" in retried.out
    shown = await api.cli("jobs", "show", job_id, "--json", cwd=tmp_path)
    assert json.loads(shown.out)["runs"][0]["status"] == "COMPLETED"

    # Cancelling a finished job is refused by the API: one line, exit 2.
    rerun = await api.cli("submit", url, "--wait", cwd=tmp_path)
    assert rerun.code == 0, rerun
    cancel = await api.cli("jobs", "cancel", job_id, cwd=tmp_path)
    assert cancel.code == 2
    assert cancel.err.startswith("error: 409 Conflict:") and cancel.err.count("\n") == 1


async def test_auth_errors_say_which_variable_to_set(
    keyed_cli_server: Served, tmp_path: Path, target: TargetServer
) -> None:
    served = keyed_cli_server
    refused = await cli("submit", target.url("/page/3"), api=served.base_url, cwd=tmp_path)
    assert refused.code == 2
    assert refused.err.startswith("error: 401 Unauthorized: an API key is required")
    assert "TASKCRAWLER_API_KEY" in refused.err and refused.err.count("\n") == 1
    wrong = await cli("jobs", "list", api=served.base_url, key="tc_nope_nope", cwd=tmp_path)
    assert wrong.code == 2 and "401 Unauthorized" in wrong.err

    key = await served.new_key("cli")
    ok = await cli("submit", target.url("/page/3"), "--wait", api=served.base_url, key=key,
                   cwd=tmp_path)  # fmt: skip
    assert ok.code == 0, ok


async def test_bad_input_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    listing = tmp_path / "urls.txt"
    listing.write_text("https://ok.example/\nnot a url\nftp://files.example/x\n")
    # Nothing listens on the API address: had anything been sent, the error would say so.
    api = f"http://127.0.0.1:{free_port()}"
    result = await cli("submit", "--file", str(listing), api=api, cwd=tmp_path)
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert lines[0].startswith(f"error: {listing}:2: not a url:")
    assert lines[1].startswith(f"error: {listing}:3: ftp://files.example/x:")
    nothing = await cli("submit", api=api, cwd=tmp_path)
    assert nothing.code == 2 and "no URLs to submit" in nothing.err
    missing = await cli("submit", "--file", str(tmp_path / "absent.txt"), api=api, cwd=tmp_path)
    assert missing.code == 2 and "cannot read" in missing.err


async def test_no_server_is_one_clear_line(tmp_path: Path) -> None:
    api = f"http://127.0.0.1:{free_port()}"
    for args in (("submit", "https://example.com/"), ("jobs", "list")):
        result = await cli(*args, api=api, cwd=tmp_path)
        assert result.code == 2, result
        assert result.err.startswith(f"error: cannot connect to the API at {api}")
        assert "taskcrawler serve" in result.err and result.err.count("\n") == 1
        assert "Traceback" not in result.err


async def test_a_malformed_id_is_one_clear_line(api: Api, tmp_path: Path) -> None:
    result = await api.cli("jobs", "show", "not-a-uuid", cwd=tmp_path)
    assert result.code == 2
    assert result.err == (
        "error: 'not-a-uuid': a short id is 4 to 32 hexadecimal digits (dashes allowed), "
        "the start of an id\n"
    )
    unknown = await api.cli("jobs", "show", str(uuid.uuid4()), cwd=tmp_path)
    assert unknown.code == 2 and "404 Not Found: no job with this id" in unknown.err


@pytest.fixture
async def stub() -> AsyncIterator[tuple[str, dict[str, web.Response]]]:
    """An API that answers whatever the test put in ``answers`` (by path)."""
    answers: dict[str, web.Response] = {}

    async def handler(request: web.Request) -> web.Response:
        return answers[request.path]

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}", answers
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(
    ("status", "detail", "expected"),
    [
        (429, "rate limit: 60 requests per minute", "error: 429 Too Many Requests: rate limit: "
         "60 requests per minute; try again in 7 s"),
        (503, "the database is unavailable, try again", "error: 503 Service Unavailable: the "
         "database is unavailable, try again; try again in 7 s"),
    ],
)  # fmt: skip
async def test_overload_answers_are_one_line_with_when_to_retry(
    stub: tuple[str, dict[str, web.Response]], tmp_path: Path, status: int, detail: str,
    expected: str,
) -> None:  # fmt: skip
    api, answers = stub
    answers["/api/v1/jobs"] = web.json_response(
        {"detail": detail}, status=status, headers={"Retry-After": "7"}
    )
    result = await cli("submit", "https://example.com/", api=api, cwd=tmp_path)
    assert result.code == 2
    assert result.err == expected + "\n"


async def test_an_address_that_is_not_the_api_says_so(
    stub: tuple[str, dict[str, web.Response]], tmp_path: Path
) -> None:
    api, answers = stub
    answers["/api/v1/jobs"] = web.Response(text="<html>hello</html>", content_type="text/html")
    result = await cli("jobs", "list", api=api, cwd=tmp_path)
    assert result.code == 2
    assert "not JSON: is --api the address of a TaskCrawler API?" in result.err


async def test_submit_with_render_sends_the_option_for_every_url(
    api: Api, target: TargetServer, tmp_path: Path
) -> None:
    one = await api.cli("submit", target.url("/page/40"), "--render", "auto", "--json",
                    cwd=tmp_path)  # fmt: skip
    many = await api.cli("submit", target.url("/page/41"), target.url("/page/42"), "--render",
                     "always", "--json", cwd=tmp_path)  # fmt: skip
    assert one.code == 0 and many.code == 0, (one, many)
    assert [job["render"] for job in json.loads(one.out)] == ["auto"]
    assert [job["render"] for job in json.loads(many.out)] == ["always", "always"]
    wrong = await api.cli("submit", target.url("/page/43"), "--render", "maybe", cwd=tmp_path)
    assert wrong.code == 2 and "invalid choice" in wrong.err


def _as_a_process(*command: str, cwd: Path, stdin: str = "") -> Result:
    done = subprocess.run(
        list(command), env=clean_env({}), cwd=cwd, input=stdin, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize(
    "entry_point",
    [(sys.executable, "-m", "taskcrawler"), (str(Path(sys.executable).with_name("taskcrawler")),)],
    ids=["python -m taskcrawler", "taskcrawler"],
)
async def test_both_entry_points_run_as_processes(
    entry_point: tuple[str, ...], tmp_path: Path
) -> None:
    """What only a process shows: its exit status, and its standard streams as pipes (the
    URLs read from standard input, the job on stdout, the one-line error on stderr)."""
    api = f"http://127.0.0.1:{free_port()}"
    version = await asyncio.to_thread(_as_a_process, *entry_point, "--version", cwd=tmp_path)
    assert version.code == 0 and version.out.startswith("taskcrawler "), version
    refused = await asyncio.to_thread(
        _as_a_process, *entry_point, "jobs", "list", "--api", api, cwd=tmp_path
    )
    assert refused.code == 2 and refused.out == "", refused
    assert refused.err.startswith(f"error: cannot connect to the API at {api}")
    assert refused.err.count("\n") == 1 and "Traceback" not in refused.err
    read = await asyncio.to_thread(
        _as_a_process, *entry_point, "submit", "-f", "-", "--api", api, cwd=tmp_path,
        stdin="# from a pipe\nhttps://ok.example/\nnot a url\n",
    )  # fmt: skip
    assert read.code == 2 and read.out == "", read
    assert read.err.startswith("error: <stdin>:3: not a url:"), read


def _search_answer(legs: list[str]) -> web.Response:
    hit = {
        "job_id": str(uuid.uuid4()),
        "chunk_index": 0,
        "url": "https://example.com/a",
        "title": "A page",
        "heading_path": ["Setup"],
        "text": "yeast and bread",
        "score": 0.5,
        "start": 0,
        "end": 15,
        "fetched_at": "2026-12-07T00:00:00Z",
    }
    return web.json_response({"results": [hit], "legs": legs})


@pytest.mark.parametrize(
    ("legs", "noted"), [(["semantic", "keyword"], False), (["keyword"], True)]
)  # fmt: skip
async def test_search_says_when_a_hybrid_search_was_ranked_by_keywords_alone(
    stub: tuple[str, dict[str, web.Response]], tmp_path: Path, legs: list[str], noted: bool
) -> None:
    api, answers = stub
    answers["/api/v1/search"] = _search_answer(legs)
    shown = await cli("search", "yeast", api=api, cwd=tmp_path)
    assert shown.code == 0, shown
    assert "A page" in shown.out and "Setup" in shown.out and "yeast and bread" in shown.out
    assert ("ranked by keywords only" in shown.err) is noted

    answers["/api/v1/search"] = _search_answer(legs)
    as_json = await cli("search", "yeast", "--json", api=api, cwd=tmp_path)
    assert as_json.code == 0, as_json
    printed = json.loads(as_json.out)
    assert printed["legs"] == legs and printed["results"][0]["text"] == "yeast and bread"
