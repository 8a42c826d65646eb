"""The crawls pages of the dashboard in a real browser, against a real ``taskcrawler serve``:
start a crawl with the form, watch its counts in the list and on its page, follow a page to its
job, and cancel the crawl."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from playwright.async_api import Browser, Page, Route, expect

from tests.support.cli import Api, keyed
from tests.support.dashboard import open_dashboard, watched_page
from tests.support.served import Served
from tests.support.services import free_port

WAIT_MS = 30_000
#: Each page is served this late, so the crawl is still running when it is cancelled.
PAGE_DELAY_SECONDS = 0.3
#: More than two screens of the crawl page's jobs (50 each).
CRAWL_PAGES = 120


@contextlib.asynccontextmanager
async def tree_site(delay: float) -> AsyncIterator[str]:
    """Pages /p/0, /p/1, …: a tree, each linking to three more, each served ``delay`` late."""

    async def handle(request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        await asyncio.sleep(delay)
        links = "".join(
            f"<a href='/p/{m}'>Page {m}</a> " for m in (3 * n + 1, 3 * n + 2, 3 * n + 3)
        )
        body = f"<html><head><title>Page {n}</title></head><body><p>{links}</p></body></html>"
        return web.Response(text=body, content_type="text/html")

    app = web.Application()
    app.router.add_get(r"/p/{n:\d+}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def chain() -> AsyncIterator[str]:
    """A tree whose pages wait to be fetched, so a crawl of it is still running when watched."""
    async with tree_site(PAGE_DELAY_SECONDS) as base_url:
        yield base_url


@pytest.fixture
async def served(keyed_server: Served, request: pytest.FixtureRequest) -> Api:
    """The module's server as this test's own key sees it."""
    return await keyed(keyed_server, request)


@pytest.fixture
async def page(browser: Browser, served: Api) -> AsyncIterator[Page]:
    """A fresh page whose dashboard holds the test's key; closed before the server stops, so
    its polling never finds it gone."""
    # The browser logs every answer that is not 2xx; the 422 below is asked for.
    async with watched_page(browser, key=served.key, expected=("status of 422",)) as opened:
        yield opened


async def test_start_watch_and_cancel_a_crawl(page: Page, served: Api, chain: str) -> None:
    start = chain + "/p/0"
    await open_dashboard(page, served.base_url + "/crawls")
    await expect(page).to_have_title("Crawls · TaskCrawler")
    await expect(page.locator("#crawls-body")).to_contain_text("No crawls yet", timeout=WAIT_MS)

    # A bad request is answered in the form, and nothing is started.
    await page.fill("#crawl-url", "ftp://example.com/")
    await page.click("#crawl-button")
    await expect(page.locator("#crawl-result")).to_contain_text("Not started: 422")

    await page.fill("#crawl-url", start)
    await expect(page.locator("#crawl-formats").get_by_label("markdown")).to_be_checked()
    await page.fill("#crawl-limit", "200")
    await page.fill("#crawl-depth", "100")
    await page.click("#crawl-button")
    started = page.locator("#crawl-result a")
    await expect(started).to_have_text(start, timeout=WAIT_MS)
    row = page.locator("#crawls-body tr[data-crawl-id]")
    await expect(row).to_have_count(1, timeout=WAIT_MS)
    await expect(row.locator(".badge")).to_have_text("RUNNING")
    # Live counts: pages are found and completed while the list is watched.
    await expect(row.locator('[data-count="completed"]')).not_to_have_text("0", timeout=WAIT_MS)
    crawl_id = await row.get_attribute("data-crawl-id")

    await row.get_by_role("link", name=start).click()
    await expect(page).to_have_url(f"{served.base_url}/crawls/{crawl_id}")
    await expect(page.locator("#crawl-status")).to_have_text("RUNNING", timeout=WAIT_MS)
    await expect(page.locator('dd[data-field="limit"]')).to_have_text("200")
    await expect(page.locator('dd[data-field="max_depth"]')).to_have_text("100")
    await expect(page.locator('dd[data-field="render"]')).to_have_text("never")
    await expect(page.locator("#crawl-progress-text")).to_contain_text("pages finished")
    first = page.locator("#crawl-jobs-body tr[data-job-id]").first
    await expect(first).to_be_visible(timeout=WAIT_MS)

    page.once("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
    await page.get_by_role("button", name="Cancel crawl").click()
    await expect(page.locator("#crawl-status")).to_have_text("CANCELLED", timeout=WAIT_MS)
    await expect(page.get_by_role("button", name="Cancel crawl")).to_be_hidden()
    # The pages being fetched finish; nothing more is scheduled.
    await expect(page.locator('dd[data-field="pending"]')).to_have_text("0", timeout=WAIT_MS)

    job_id = await first.get_attribute("data-job-id")
    await first.get_by_role("link").click()
    await expect(page).to_have_url(f"{served.base_url}/jobs/{job_id}")

    await open_dashboard(page, served.base_url + "/crawls")
    await expect(row.locator(".badge")).to_have_text("CANCELLED", timeout=WAIT_MS)


async def test_a_crawls_pages_are_paged_through(page: Page, served: Api) -> None:
    """More pages than one screen shows: Older, Newer and Newest walk the crawl's jobs with the
    API's cursor, and every page of the crawl is on exactly one screen."""
    async with (
        tree_site(0.0) as base_url,
        aiohttp.ClientSession(
            served.base_url, headers={"Authorization": f"Bearer {served.key}"}
        ) as http,
    ):
        started = await http.post(
            "/api/v1/crawls",
            json={"url": base_url + "/p/0", "limit": CRAWL_PAGES, "sitemap": "skip"},
        )
        assert started.status == 201, await started.text()
        crawl_id = (await started.json())["id"]
        async with asyncio.timeout(WAIT_MS / 1000):
            while True:
                crawl = await (await http.get(f"/api/v1/crawls/{crawl_id}")).json()
                if crawl["status"] == "COMPLETED":
                    break
                await asyncio.sleep(0.2)

    await open_dashboard(page, f"{served.base_url}/crawls/{crawl_id}")
    rows = page.locator("#crawl-jobs-body tr[data-job-id]")
    shown = page.locator("#crawl-jobs-range")
    older, newer, newest = (page.locator(f"#crawl-{name}") for name in ("older", "newer", "newest"))

    async def screen(first: int, last: int) -> list[str]:
        text = f"{first}\N{EN DASH}{last} of {CRAWL_PAGES}"
        await expect(shown).to_have_text(text, timeout=WAIT_MS)
        await expect(rows).to_have_count(last - first + 1, timeout=WAIT_MS)
        return [str(await row.get_attribute("data-job-id")) for row in await rows.all()]

    newest_screen = await screen(1, 50)
    await expect(newer).to_be_disabled()
    await expect(newest).to_be_disabled()
    # The dashboard's poll asks for this page again; Older is clicked while that answer is on
    # its way. The answer comes after the turn: it must not be shown as the next page's.
    asked_again, answer = asyncio.Event(), asyncio.Event()

    async def hold_one_answer_for_the_newest(route: Route) -> None:
        if "cursor=" not in route.request.url and not asked_again.is_set():
            asked_again.set()
            await answer.wait()
        await route.continue_()

    await page.route("**/api/v1/crawls/*/jobs*", hold_one_answer_for_the_newest)
    await asyncio.wait_for(asked_again.wait(), WAIT_MS / 1000)
    await older.click()
    answer.set()
    second = await screen(51, 100)
    assert not set(second) & set(newest_screen)
    await page.unroute("**/api/v1/crawls/*/jobs*")
    await expect(newer).to_be_enabled()
    await older.click()
    last = await screen(101, CRAWL_PAGES)
    await expect(older).to_be_disabled()
    await newer.click()
    assert await screen(51, 100) == second
    await newest.click()
    assert await screen(1, 50) == newest_screen
    # Every page of the crawl once, on exactly one screen.
    assert len(set(newest_screen + second + last)) == CRAWL_PAGES
