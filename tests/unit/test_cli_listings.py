"""The command line's listings against a server whose pages never end: a cursor that leads
nowhere (an empty page, or the same page again) ends the listing instead of asking forever."""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import httpx
import pytest

from taskcrawler.cli.client import ApiClient, ApiError
from taskcrawler.cli.commands import jobs as jobs_command
from taskcrawler.cli.commands import monitors as monitors_command
from taskcrawler.cli.commands.submit import PER_JOB_POLL_LIMIT, poll
from taskcrawler.cli.main import build_parser
from taskcrawler.client import AsyncTaskCrawler

#: Requests a listing may make here before the test calls it endless.
PATIENCE = 50


def endless(key: str) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    """A server whose every page of ``key`` is empty and points at a next one."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) > PATIENCE:
            raise AssertionError("the listing never ends")
        return httpx.Response(200, json={key: [], "next_cursor": f"c{len(seen)}"})

    return httpx.MockTransport(answer), seen


def api_over(transport: httpx.MockTransport) -> ApiClient:
    api = ApiClient("http://api")
    api.client = AsyncTaskCrawler("http://api", transport=transport)
    return api


Listing = Callable[[ApiClient, argparse.Namespace], Awaitable[None]]


@pytest.mark.parametrize(
    ("argv", "key", "listing"),
    [
        (["jobs", "list", "--limit", "100", "--json"], "jobs", jobs_command.list_jobs),
        (
            ["monitor", "list", "--limit", "100", "--json"],
            "monitors",
            monitors_command.list_monitors,
        ),
    ],
)
async def test_a_listing_ends_at_an_empty_page(
    argv: list[str], key: str, listing: Listing, capsys: pytest.CaptureFixture[str]
) -> None:
    transport, seen = endless(key)
    async with api_over(transport) as api:
        await listing(api, build_parser().parse_args(argv))
    assert len(seen) == 1
    assert f'"{key}": []' in capsys.readouterr().out


async def test_waiting_for_many_jobs_ends_its_poll_at_an_empty_page() -> None:
    transport, seen = endless("jobs")
    created = datetime(2026, 12, 7, tzinfo=UTC).isoformat()
    waiting = {str(uuid.uuid4()): {"created_at": created} for _ in range(PER_JOB_POLL_LIMIT + 1)}
    async with api_over(transport) as api:
        assert await poll(api, waiting, set(waiting)) == []
    assert len(seen) == 1


def answering(body: object) -> httpx.MockTransport:
    return httpx.MockTransport(lambda request: httpx.Response(200, json=body))


@pytest.mark.parametrize("body", [{"unexpected": 1}, ["a"], {"monitors": "abc", "jobs": "abc"}])
@pytest.mark.parametrize("listing", ["list_jobs", "list_monitors", "list_crawls"])
async def test_an_answer_of_another_shape_is_an_api_error(body: object, listing: str) -> None:
    """JSON that is not the call's answer (another service, a proxy's own) is one line the
    command prints, not a traceback."""
    async with api_over(answering(body)) as api:
        with pytest.raises(ApiError, match="not this call's answer"):
            await getattr(api, listing)()


async def test_a_monitors_answers_of_another_shape_are_api_errors() -> None:
    async with api_over(answering({"unexpected": 1})) as api:
        with pytest.raises(ApiError, match="not this call's answer"):
            await api.create_monitor({"interval_seconds": 60, "url": "https://example.com/"})
        with pytest.raises(ApiError, match="not this call's answer"):
            await api.update_monitor(str(uuid.uuid4()), {"paused": True})
        with pytest.raises(ApiError, match="not this call's answer"):
            await api.changes(str(uuid.uuid4()))
