"""The sync client over httpx's MockTransport, and the client's models against the API's."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime

import httpx
import pytest

from taskcrawler.cli.commands.crawl import spec_of
from taskcrawler.cli.commands.submit import job_options
from taskcrawler.cli.main import build_parser
from taskcrawler.client import AsyncTaskCrawler, JobStatus, TaskCrawler, TaskCrawlerError

JOB = {
    "id": str(uuid.uuid4()),
    "url": "https://example.com/",
    "status": "COMPLETED",
    "retry_count": 0,
    "scraped_title": "Example",
    "error_log": None,
    "error_code": None,
    "http_status": 200,
    "final_url": "https://example.com/",
    "content_type": "text/html",
    "created_at": datetime(2026, 12, 5, tzinfo=UTC).isoformat(),
    "started_at": None,
    "finished_at": None,
    "next_attempt_at": None,
    "formats": ["metadata"],
    "run_count": 0,
    "unchanged": False,
    "result": {"title": "Example"},
    "a_field_of_a_newer_server": 1,
}


def test_sync_calls_send_the_key_and_read_typed_answers() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "POST":
            return httpx.Response(201, json=JOB)
        return httpx.Response(200, json={"jobs": [JOB], "next_cursor": None})

    with TaskCrawler("http://api", "tc_a_b", transport=httpx.MockTransport(answer)) as tc:
        submitted = tc.submit("https://example.com/", formats=["markdown"], max_age=60)
        page = tc.list_jobs(statuses=["FAILED", "COMPLETED"], limit=5)
    assert submitted.created and submitted.job.status is JobStatus.COMPLETED
    assert page.jobs[0].id == uuid.UUID(JOB["id"])  # type: ignore[arg-type]
    assert seen[0].headers["Authorization"] == "Bearer tc_a_b"
    assert json.loads(seen[0].content) == {
        "url": "https://example.com/",
        "formats": ["markdown"],
        "max_age": 60,
    }
    assert seen[1].url.params.get_list("status") == ["FAILED", "COMPLETED"]


async def test_options_are_sent_as_given_and_none_is_left_out() -> None:
    seen: list[dict[str, object]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        if request.url.path.endswith("/batch"):
            return httpx.Response(200, json={"jobs": [], "created": 0, "existing": 0})
        return httpx.Response(201, json=JOB)

    render_options = {"wait_for": "#app", "full_page": False}
    async with AsyncTaskCrawler("http://api", transport=httpx.MockTransport(answer)) as tc:
        await tc.submit("https://a.test/", render="always", render_options=render_options)
        await tc.submit_batch(("https://b.test/",), formats=("text",), render="auto", max_age=None)
    with TaskCrawler("http://api", transport=httpx.MockTransport(answer)) as sync:
        sync.submit("https://c.test/", callback_url=None)
    assert seen == [
        {"url": "https://a.test/", "render": "always", "render_options": render_options},
        {"urls": ["https://b.test/"], "formats": ["text"], "render": "auto"},
        {"url": "https://c.test/"},
    ]


@pytest.mark.parametrize(
    ("status", "body", "headers", "message"),
    [
        (404, {"detail": "no job with this id"}, {}, "404 Not Found: no job with this id"),
        (
            422,
            {"detail": [{"loc": ["body", "url"], "msg": "bad scheme"}]},
            {},
            "422 Unprocessable Entity: url: bad scheme",
        ),
        (
            429,
            {"detail": "slow down"},
            {"Retry-After": "3"},
            "429 Too Many Requests: slow down; try again in 3 s",
        ),
        (500, None, {}, "500 Internal Server Error: no details"),
    ],
)
def test_refusals_carry_status_detail_and_retry_after(
    status: int, body: object, headers: dict[str, str], message: str
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if body is None:
            return httpx.Response(status, text="oops", headers=headers)
        return httpx.Response(status, json=body, headers=headers)

    with (
        TaskCrawler("http://api", transport=httpx.MockTransport(answer)) as tc,
        pytest.raises(TaskCrawlerError) as refused,
    ):
        tc.get_job(uuid.uuid4())
    assert str(refused.value) == message
    assert refused.value.status == status
    assert refused.value.retry_after == (3.0 if status == 429 else None)


def test_an_answer_that_is_not_json_says_so() -> None:
    answer = httpx.MockTransport(lambda request: httpx.Response(200, text="<html>"))
    with (
        TaskCrawler("http://api", transport=answer) as tc,
        pytest.raises(TaskCrawlerError) as not_json,
    ):
        tc.get_job(uuid.uuid4())
    assert "not JSON" in str(not_json.value)


def test_sync_and_async_clients_have_the_same_methods() -> None:
    def public(cls: type) -> dict[str, list[str]]:
        return {
            name: list(inspect.signature(member).parameters)
            for name, member in vars(cls).items()
            if callable(member) and not name.startswith("_") and name not in ("close", "aclose")
        }

    sync, not_sync = public(TaskCrawler), public(AsyncTaskCrawler)
    # An async caller bounds a wait with asyncio.timeout; a blocking one has only the argument.
    assert sync.pop("wait") == [*not_sync.pop("wait"), "timeout"]
    assert sync == not_sync


def test_importing_the_client_imports_no_server() -> None:
    code = (
        "import sys, taskcrawler.client; "
        "print([m for m in ('fastapi', 'sqlalchemy', 'aiohttp') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_crawl_asks_for_its_webhook_events_and_max_age() -> None:
    seen: list[httpx.Request] = []
    crawl = {
        "id": str(uuid.uuid4()),
        "url": "https://example.com/",
        "status": "RUNNING",
        **dict.fromkeys(("discovered", "pending"), 1),
        **dict.fromkeys(("processing", "completed", "failed", "cancelled"), 0),
        "created_at": datetime(2026, 12, 5, tzinfo=UTC).isoformat(),
        "finished_at": None,
        "max_depth": None,
        "limit": 10_000,
        "sitemap": "include",
        "max_age": 600,
        "webhook_events": ["crawl.page"],
    }

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(201, json=crawl)

    with TaskCrawler("http://api", transport=httpx.MockTransport(answer)) as tc:
        started = tc.start_crawl(
            "https://example.com/",
            callback_url="https://hooks.example.net/",
            webhook_events=["crawl.page"],
            max_age=600,
        )
    sent = json.loads(seen[0].content)
    assert sent["webhook_events"] == ["crawl.page"] and sent["max_age"] == 600
    assert started.webhook_events == ["crawl.page"] and started.max_age == 600


def test_the_crawl_command_passes_max_age() -> None:
    parser = build_parser()
    args = parser.parse_args(["crawl", "https://example.com/", "--max-age", "0"])
    assert spec_of(args, "https://example.com/")["max_age"] == 0
    unset = parser.parse_args(["crawl", "https://example.com/"])
    assert "max_age" not in spec_of(unset, "https://example.com/")
    with pytest.raises(SystemExit):
        parser.parse_args(["crawl", "https://example.com/", "--max-age", "-1"])


def test_the_submit_command_asks_for_its_formats_and_max_age() -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["submit", "https://example.com/", "--format", "text", "--format", "text", "--format",
         "chunks", "--max-age", "0"]
    )  # fmt: skip
    assert job_options(args) == {"formats": ["text", "chunks"], "max_age": 0}
    assert job_options(parser.parse_args(["submit", "https://example.com/"])) == {}
    with pytest.raises(SystemExit):
        parser.parse_args(["submit", "https://example.com/", "--format", "pdf"])
