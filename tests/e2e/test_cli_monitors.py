"""``taskcrawler monitor …`` as a user runs it: real subprocesses against a real
``taskcrawler serve`` whose scheduler runs monitors on a short interval."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_cli_client import cli
from tests.support.changing_site import NOISE_SELECTORS, ChangingSiteServer, start_changing_site
from tests.support.processes import ProcessManager
from tests.support.served import Served, serve


@pytest.fixture
def site() -> Iterator[ChangingSiteServer]:
    server = start_changing_site(seed=3, per_kind=1)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
async def served(processes: ProcessManager, tmp_path: Path, sqlite_url: str) -> Served:
    return await serve(
        processes,
        tmp_path,
        sqlite_url,
        TASKCRAWLER_MONITOR_MIN_INTERVAL_SECONDS="0.1",
        TASKCRAWLER_MONITOR_POLL_SECONDS="0.05",
    )


async def test_create_list_changes_pause_resume_delete(
    served: Served, site: ChangingSiteServer, tmp_path: Path
) -> None:
    api = served.base_url
    url = site.url("/etag/0")
    created = await cli("monitor", "create", url, "-i", "0.3", "--json", api=api, cwd=tmp_path)
    assert created.code == 0, created
    monitor = json.loads(created.out)
    assert monitor["urls"] == [url] and monitor["status"] == "ACTIVE"

    listed = await cli("monitor", "list", api=api, cwd=tmp_path)
    assert listed.code == 0 and monitor["id"][:8] in listed.out  # a short id

    # Wait for the baseline run to be fetched, then change the page.
    for _ in range(400):
        if site.served_for("/etag/0"):
            break
        await asyncio.sleep(0.05)
    edit = site.site.change("/etag/0")
    for _ in range(100):
        shown = await cli("monitor", "changes", monitor["id"], "--json", api=api, cwd=tmp_path)
        assert shown.code == 0, shown
        changes = json.loads(shown.out)["changes"]
        if changes:
            break
        await asyncio.sleep(0.1)
    [change] = changes
    assert f"+{edit.new}" in change["diff"]
    text = await cli("monitor", "changes", monitor["id"], api=api, cwd=tmp_path)
    assert f"-{edit.old}" in text.out and url in text.out

    paused = await cli("monitor", "pause", monitor["id"], "--json", api=api, cwd=tmp_path)
    assert json.loads(paused.out)["status"] == "PAUSED"
    resumed = await cli("monitor", "resume", monitor["id"], "--json", api=api, cwd=tmp_path)
    assert json.loads(resumed.out)["status"] == "ACTIVE"
    deleted = await cli("monitor", "delete", monitor["id"], api=api, cwd=tmp_path)
    assert deleted.code == 0
    missing = await cli("monitor", "pause", monitor["id"], api=api, cwd=tmp_path)
    assert missing.code == 2 and "404" in missing.err
    empty = await cli("monitor", "list", api=api, cwd=tmp_path)
    assert "No monitors." in empty.err


async def test_an_interval_below_the_minimum_is_refused(served: Served, tmp_path: Path) -> None:
    result = await cli(
        "monitor", "create", "http://a.test/", "-i", "0.01", api=served.base_url, cwd=tmp_path
    )
    assert result.code == 2
    assert "interval_seconds" in result.err


async def test_a_site_monitor_reports_pages_added_and_removed(
    served: Served, site: ChangingSiteServer, tmp_path: Path
) -> None:
    api = served.base_url
    refused = await cli("monitor", "create", "-i", "1", api=api, cwd=tmp_path)
    assert refused.code == 2 and "--crawl" in refused.err
    created = await cli(
        "monitor",
        "create",
        "--crawl",
        site.url("/"),
        "--limit",
        "50",
        "-i",
        "0.5",
        *(arg for selector in NOISE_SELECTORS for arg in ("--ignore", selector)),
        "--json",
        api=api,
        cwd=tmp_path,
    )
    assert created.code == 0, created
    monitor = json.loads(created.out)
    assert monitor["crawl"]["url"] == site.url("/") and monitor["urls"] == []
    gone = sorted(site.site.pages)[0]
    # Once the baseline crawl fetched the page, the site changes: one page gone, one new.
    for _ in range(400):
        if site.served_for(gone):
            break
        await asyncio.sleep(0.05)
    site.site.remove_page(gone)
    site.site.add_page("/new/arrival")
    found: list[tuple[str, str]] = []
    for _ in range(400):
        shown = await cli("monitor", "changes", monitor["id"], "--json", api=api, cwd=tmp_path)
        assert shown.code == 0, shown
        changes = json.loads(shown.out)["changes"]
        found = sorted((c["kind"], c["url"]) for c in changes if c["kind"] != "changed")
        if len(found) >= 2:
            break
        await asyncio.sleep(0.1)
    assert found == [("added", site.url("/new/arrival")), ("removed", site.url(gone))]
    # Only the start page, whose list of pages changed, changed in content: noise is ignored.
    assert {c["url"] for c in changes if c["kind"] == "changed"} <= {site.url("/")}
    assert (await cli("monitor", "delete", monitor["id"], api=api, cwd=tmp_path)).code == 0
