"""What the client commands print comes from the web (a page's title and text, an error): its
control characters are shown as symbols, never sent to the terminal as escape sequences."""

from __future__ import annotations

import argparse
import uuid
from datetime import UTC, datetime

import httpx
import pytest

from taskcrawler.cli.client import ApiClient
from taskcrawler.cli.commands import monitors as monitors_command
from taskcrawler.cli.commands.render import jobs_table, out
from taskcrawler.client import AsyncTaskCrawler

#: A page title that clears the screen, sets the clipboard (OSC 52) and moves the cursor (a C1
#: CSI), with a carriage return that would overwrite its line.
HOSTILE = "Hi \x1b[2J\x1b]52;c;cHduZWQ=\x07\x9b1A\rthere"
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\r")


def printed(capsys: pytest.CaptureFixture[str]) -> str:
    text = capsys.readouterr().out
    assert not [char for char in FORBIDDEN if char in text], repr(text)
    return text


def test_a_hostile_title_is_printed_as_symbols(capsys: pytest.CaptureFixture[str]) -> None:
    job = {"id": str(uuid.uuid4()), "status": "COMPLETED", "url": "https://a.test/",
           "scraped_title": HOSTILE, "created_at": None, "finished_at": None}  # fmt: skip
    out().print(jobs_table([job]))
    assert "Hi ␛[2J␛]52;c;cHduZWQ=" in printed(capsys)


async def test_a_hostile_diff_is_printed_as_symbols(capsys: pytest.CaptureFixture[str]) -> None:
    monitor_id = str(uuid.uuid4())
    change = {"id": str(uuid.uuid4()), "monitor_id": monitor_id, "kind": "changed",
              "url": "https://a.test/", "job_id": str(uuid.uuid4()),
              "detected_at": datetime(2026, 12, 7, tzinfo=UTC).isoformat(), "run": 1,
              "previous_run": 0, "previous_job_id": None, "diff": f"-old\n+{HOSTILE}\n",
              "diff_complete": True,
              "metadata": {"title": {"old": "a", "new": HOSTILE}}}  # fmt: skip
    answer = httpx.MockTransport(
        lambda request: httpx.Response(200, json={"changes": [change], "next_cursor": None})
    )
    api = ApiClient("http://api")
    api.client = AsyncTaskCrawler("http://api", transport=answer)
    args = argparse.Namespace(monitor_id=monitor_id, limit=10, cursor=None, json=False)
    async with api:
        await monitors_command.changes(api, args)
    assert "+Hi ␛[2J" in printed(capsys)
