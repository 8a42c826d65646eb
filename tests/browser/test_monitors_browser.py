"""The monitors pages of the dashboard in a real browser, against a real ``taskcrawler serve``
whose scheduler runs a monitor on a short interval: the list, a monitor, a change's diff."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest
from playwright.async_api import Browser, Page, expect

from tests.support.changing_site import ChangingSiteServer, start_changing_site
from tests.support.dashboard import open_dashboard, watched_page
from tests.support.processes import ProcessManager
from tests.support.served import Served, serve

WAIT_MS = 30_000


@pytest.fixture
def site() -> Iterator[ChangingSiteServer]:
    server = start_changing_site(seed=11, per_kind=1)
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


@pytest.fixture
async def page(browser: Browser, served: Served) -> AsyncIterator[Page]:
    # Closed before the server stops (it depends on it): the dashboard polls until then, and a
    # poll to a stopped server is a console error.
    async with watched_page(browser) as opened:
        yield opened


async def test_a_change_is_shown_with_its_diff(
    page: Page, served: Served, site: ChangingSiteServer
) -> None:
    url = site.url("/etag/0")
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            served.base_url + "/api/v1/monitors", json={"url": url, "interval_seconds": 0.3}
        ) as response,
    ):
        assert response.status == 201
        monitor = await response.json()
    await open_dashboard(page, served.base_url + "/monitors")
    await expect(page).to_have_title("Monitors · TaskCrawler")
    row = page.locator(f'#monitors-body tr[data-monitor-id="{monitor["id"]}"]')
    await expect(row.locator(".badge")).to_have_text("ACTIVE", timeout=WAIT_MS)
    await row.get_by_role("link", name=url).click()
    await expect(page).to_have_url(f"{served.base_url}/monitors/{monitor['id']}")
    await expect(page.locator("#changes")).to_contain_text("No change yet", timeout=WAIT_MS)

    for _ in range(400):  # the baseline run first, then the change
        if site.served_for("/etag/0"):
            break
        await asyncio.sleep(0.05)
    edit = site.site.change("/etag/0")
    change = page.locator("#changes article.change")
    await expect(change).to_have_count(1, timeout=WAIT_MS)
    await expect(change.locator("pre.diff .line.del")).to_have_text(f"-{edit.old}")
    await expect(change.locator("pre.diff .line.add")).to_have_text(f"+{edit.new}")

    await page.get_by_role("button", name="Pause").click()
    await expect(page.locator("#monitor-status")).to_have_text("PAUSED", timeout=WAIT_MS)
    await page.get_by_role("button", name="Resume").click()
    await expect(page.locator("#monitor-status")).to_have_text("ACTIVE", timeout=WAIT_MS)
