"""``taskcrawler monitor …`` as a user runs it (in the test's process: tests/support/cli.py)
against a real ``taskcrawler serve`` whose scheduler runs monitors on a short interval, one for
the module, a key for each test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.changing_site import NOISE_SELECTORS, ChangingSiteServer, start_changing_site
from tests.support.cli import Api
from tests.support.served import Served, served_by_module, sqlite_copy


@pytest.fixture
def site() -> Iterator[ChangingSiteServer]:
    server = start_changing_site(seed=3, per_kind=1)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
async def _server(
    tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path
) -> AsyncIterator[Served]:
    workdir = tmp_path_factory.mktemp("served")
    async with served_by_module(
        workdir,
        sqlite_copy(_sqlite_template, workdir),
        TASKCRAWLER_MONITOR_MIN_INTERVAL_SECONDS="0.1",
        TASKCRAWLER_MONITOR_POLL_SECONDS="0.05",
    ) as served:
        yield served


@pytest.fixture
async def api(_server: Served, request: pytest.FixtureRequest) -> Api:
    """The module's server, as this test's own key sees it."""
    return Api(_server.base_url, await _server.new_key(request.node.name))


async def test_create_list_changes_pause_resume_delete(
    api: Api, site: ChangingSiteServer, tmp_path: Path
) -> None:
    url = site.url("/etag/0")
    created = await api.cli("monitor", "create", url, "-i", "0.3", "--json", cwd=tmp_path)
    assert created.code == 0, created
    monitor = json.loads(created.out)
    assert monitor["urls"] == [url] and monitor["status"] == "ACTIVE"

    listed = await api.cli("monitor", "list", cwd=tmp_path)
    assert listed.code == 0 and monitor["id"][:8] in listed.out  # a short id

    # Wait for the baseline run to be fetched, then change the page.
    for _ in range(400):
        if site.served_for("/etag/0"):
            break
        await asyncio.sleep(0.05)
    edit = site.site.change("/etag/0")
    for _ in range(100):
        shown = await api.cli("monitor", "changes", monitor["id"], "--json", cwd=tmp_path)
        assert shown.code == 0, shown
        changes = json.loads(shown.out)["changes"]
        if changes:
            break
        await asyncio.sleep(0.1)
    [change] = changes
    assert f"+{edit.new}" in change["diff"]
    text = await api.cli("monitor", "changes", monitor["id"], cwd=tmp_path)
    assert f"-{edit.old}" in text.out and url in text.out

    paused = await api.cli("monitor", "pause", monitor["id"], "--json", cwd=tmp_path)
    assert json.loads(paused.out)["status"] == "PAUSED"
    resumed = await api.cli("monitor", "resume", monitor["id"], "--json", cwd=tmp_path)
    assert json.loads(resumed.out)["status"] == "ACTIVE"
    deleted = await api.cli("monitor", "delete", monitor["id"], cwd=tmp_path)
    assert deleted.code == 0
    missing = await api.cli("monitor", "pause", monitor["id"], cwd=tmp_path)
    assert missing.code == 2 and "404" in missing.err
    empty = await api.cli("monitor", "list", cwd=tmp_path)
    assert "No monitors." in empty.err


async def test_an_interval_below_the_minimum_is_refused(api: Api, tmp_path: Path) -> None:
    result = await api.cli("monitor", "create", "http://a.test/", "-i", "0.01", cwd=tmp_path)
    assert result.code == 2
    assert "interval_seconds" in result.err


async def test_a_site_monitor_reports_pages_added_and_removed(
    api: Api, site: ChangingSiteServer, tmp_path: Path
) -> None:
    refused = await api.cli("monitor", "create", "-i", "1", cwd=tmp_path)
    assert refused.code == 2 and "--crawl" in refused.err
    created = await api.cli(
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
        shown = await api.cli("monitor", "changes", monitor["id"], "--json", cwd=tmp_path)
        assert shown.code == 0, shown
        changes = json.loads(shown.out)["changes"]
        found = sorted((c["kind"], c["url"]) for c in changes if c["kind"] != "changed")
        if len(found) >= 2:
            break
        await asyncio.sleep(0.1)
    assert found == [("added", site.url("/new/arrival")), ("removed", site.url(gone))]
    # Only the start page, whose list of pages changed, changed in content: noise is ignored.
    assert {c["url"] for c in changes if c["kind"] == "changed"} <= {site.url("/")}
    assert (await api.cli("monitor", "delete", monitor["id"], cwd=tmp_path)).code == 0
