"""The dashboard in a real browser (headless Chromium) against a real ``taskcrawler serve``.

One serve for the module, with keys required: each test has a key of its own, which its page
holds (as the dashboard keeps the key it was given), and a key sees only its own jobs."""

from __future__ import annotations

import re
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest
from playwright.async_api import Browser, Page, expect

from tests.support.cli import Api, keyed
from tests.support.dashboard import dashboard_ready, open_dashboard, watched_page
from tests.support.served import Served
from tests.support.target import TargetServer

WAIT_MS = 30_000


@pytest.fixture
async def served(keyed_server: Served, request: pytest.FixtureRequest) -> Api:
    """The module's server as this test's own key sees it."""
    return await keyed(keyed_server, request)


@pytest.fixture
async def page(browser: Browser, served: Api) -> AsyncIterator[Page]:
    """A fresh browser context whose dashboard holds the test's key (as it keeps the key it
    was given)."""
    async with watched_page(browser, key=served.key, expected=("401",)) as opened:
        yield opened


@pytest.fixture
async def page_without_key(browser: Browser, keyed_server: Served) -> AsyncIterator[Page]:
    """A fresh browser context whose dashboard holds no key yet: it asks for one."""
    async with watched_page(browser, expected=("401",)) as opened:
        yield opened


def row_of(page: Page, url: str):  # type: ignore[no-untyped-def]
    return page.locator("#jobs-body tr").filter(has=page.get_by_role("link", name=url, exact=True))


async def test_submit_a_url_and_watch_it_complete(
    page: Page, served: Api, target: TargetServer
) -> None:
    url = target.url("/title/Dashboard%20works")
    await open_dashboard(page, served.base_url + "/")
    await expect(page).to_have_title("Jobs · TaskCrawler")
    await page.get_by_label("URLs").fill(url)
    # The formats: metadata and Markdown by default; the text asked for too.
    formats = page.locator("#submit-formats")
    await expect(formats.get_by_label("markdown", exact=True)).to_be_checked()
    await expect(formats.get_by_label("html", exact=True)).not_to_be_checked()
    await formats.get_by_label("text", exact=True).check()
    await page.get_by_role("button", name="Submit", exact=True).click()
    await expect(page.locator("#submit-result")).to_contain_text("1 new", timeout=WAIT_MS)

    row = row_of(page, url)
    await expect(row).to_have_attribute("data-status", "COMPLETED", timeout=WAIT_MS)
    await expect(row.locator(".badge")).to_have_text("COMPLETED")
    await expect(row).to_contain_text("Dashboard works")
    await expect(page.locator("#count-COMPLETED")).to_have_text("1", timeout=WAIT_MS)
    assert target.hits_for("/title/Dashboard%20works") == 1

    # Its job page: metadata, timings, no error.
    await row.get_by_role("link", name=url, exact=True).click()
    await expect(page).to_have_url(f"{served.base_url}/jobs/{await row_id(page, served, url)}")
    await expect(page.locator("#job-status")).to_have_text("COMPLETED", timeout=WAIT_MS)
    meta = page.locator("#job-meta")
    await expect(meta).to_contain_text("Dashboard works")
    await expect(meta).to_contain_text("metadata, markdown, text")
    await expect(meta).to_contain_text("text/html")
    await expect(meta).to_contain_text("200")
    timings = page.locator("#job-timings")
    await expect(timings).to_contain_text("Created → finished")
    await expect(page.locator("#error-card")).to_be_hidden()
    await expect(page.get_by_role("button", name="Retry")).to_be_visible()
    await page.get_by_text("What the page says about itself").click()
    await expect(page.locator("#job-result")).to_contain_text('"title": "Dashboard works"')


def auth(served: Api) -> dict[str, str]:
    return {"Authorization": f"Bearer {served.key}"}


async def row_id(page: Page, served: Api, url: str) -> str:
    async with (
        aiohttp.ClientSession(headers=auth(served)) as session,
        session.get(f"{served.base_url}/api/v1/jobs?limit=50") as response,
    ):
        jobs = (await response.json())["jobs"]
    return next(job["id"] for job in jobs if job["url"] == url)


async def test_many_urls_filters_failures_and_retry(
    page: Page, served: Api, target: TargetServer
) -> None:
    good = [target.url(f"/page/{n}") for n in range(3)]
    bad = target.url("/status/404")
    await open_dashboard(page, served.base_url + "/")
    await page.get_by_label("URLs").fill("\n".join([*good, "", "# a comment", bad]))
    await page.get_by_role("button", name="Submit", exact=True).click()
    await expect(page.locator("#submit-result")).to_have_text(
        "Submitted 4 URLs: 4 new, 0 already known.", timeout=WAIT_MS
    )
    failed = row_of(page, bad)
    await expect(failed).to_have_attribute("data-status", "FAILED", timeout=WAIT_MS)
    await expect(failed).to_contain_text("http_404")
    for url in good:
        await expect(row_of(page, url)).to_have_attribute("data-status", "COMPLETED")
    # Charts drawn from the list: one failure code, four jobs finished this minute.
    await expect(page.locator("#failure-chart svg")).to_have_attribute(
        "aria-label", "1 failed jobs: http_404 1.", timeout=WAIT_MS
    )
    await expect(page.locator("#throughput-chart svg")).to_have_attribute(
        "aria-label", re.compile(r"^4 jobs finished in the last 30 minutes \(1 failed\); ")
    )  # (how many in the current minute depends on when the minute turned)

    # Filter by status: only the failure is left, and the filter is in the address.
    await page.get_by_label("Status", exact=True).select_option("FAILED")
    await expect(page.locator("#jobs-body tr")).to_have_count(1, timeout=WAIT_MS)
    await expect(page).to_have_url(f"{served.base_url}/?status=FAILED")
    # Filter by a host with no jobs.
    await page.get_by_label("Status", exact=True).select_option("")
    await page.get_by_label("Host").fill("elsewhere.example")
    await page.get_by_role("button", name="Filter").click()
    await expect(page.locator("#jobs-body")).to_contain_text("No job matches these filters.")

    # Retry the failed job from its page: a new run, failed again, with history.
    await open_dashboard(page, served.base_url + "/?status=FAILED")
    await row_of(page, bad).get_by_role("link").click()
    await expect(page.locator("#error-card")).to_be_visible(timeout=WAIT_MS)
    await expect(page.locator("#error-log")).to_contain_text("HTTP 404")
    await page.get_by_role("button", name="Retry").click()
    await expect(page.locator("#runs-body tr")).to_have_count(1, timeout=WAIT_MS)
    await expect(page.locator("#runs-body")).to_contain_text("http_404")
    await expect(page.locator("#job-status")).to_have_text("FAILED", timeout=WAIT_MS)
    assert target.hits_for("/status/404") == 2


async def test_with_auth_required_the_dashboard_asks_for_a_key(
    page_without_key: Page, keyed_server: Served, target: TargetServer
) -> None:
    page = page_without_key
    token = await keyed_server.new_key()
    await open_dashboard(page, keyed_server.base_url + "/")
    dialog = page.get_by_role("dialog", name="API key")
    await expect(dialog).to_be_visible(timeout=WAIT_MS)
    await expect(dialog).to_contain_text("401")
    await dialog.get_by_label("Key").fill(token)
    await dialog.get_by_role("button", name="Save").click()
    await expect(dialog).to_be_hidden()
    await expect(page.locator("#jobs-body")).to_contain_text("No jobs yet", timeout=WAIT_MS)
    assert await page.evaluate("localStorage.getItem('taskcrawler.apiKey')") == token

    url = target.url("/page/42")
    await page.get_by_label("URLs").fill(url)
    await page.get_by_role("button", name="Submit", exact=True).click()
    await expect(row_of(page, url)).to_have_attribute("data-status", "COMPLETED", timeout=WAIT_MS)
    # The key survives a reload: no dialog the second time.
    await page.reload()
    await expect(row_of(page, url)).to_be_visible(timeout=WAIT_MS)
    await expect(dialog).to_be_hidden()


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG, after checking its signature and IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    width, height = struct.unpack(">II", data[16:24])
    assert data.rstrip(b"\x00")[-8:-4] == b"IEND"
    return width, height


async def test_screenshot_of_a_busy_dashboard(
    page: Page, served: Api, target: TargetServer, tmp_path: Path
) -> None:
    urls = [target.url(f"/page/{n}") for n in range(1, 9)]
    urls += [target.url("/status/404"), target.url("/status/410"), target.url("/binary")]
    async with (
        aiohttp.ClientSession(headers=auth(served)) as session,
        session.post(f"{served.base_url}/api/v1/jobs/batch", json={"urls": urls}) as response,
    ):
        assert response.status == 200
    await open_dashboard(page, served.base_url + "/")
    await expect(page.locator("#jobs-body tr[data-status]")).to_have_count(len(urls))
    for url in urls:
        await expect(row_of(page, url)).to_have_attribute(
            "data-status",
            "FAILED" if "status" in url or "binary" in url else "COMPLETED",
            timeout=WAIT_MS,
        )
    await expect(page.locator("#failure-chart svg rect")).to_have_count(3, timeout=WAIT_MS)
    shot = tmp_path / "dashboard.png"
    await page.screenshot(path=str(shot), full_page=True)
    data = shot.read_bytes()
    width, height = png_size(data)
    assert width == 1280 and height >= 900
    assert len(data) > 30_000, "a page of tables and charts compresses to more than this"

    job_shot = tmp_path / "job.png"
    await row_of(page, target.url("/status/404")).get_by_role("link").click()
    await expect(page.locator("#error-card")).to_be_visible(timeout=WAIT_MS)
    await page.screenshot(path=str(job_shot), full_page=True)
    assert png_size(job_shot.read_bytes())[0] == 1280


async def test_search_finds_a_page_scraped_with_chunks(page: Page, served: Api) -> None:
    from aiohttp import web

    from tests.support.rag_corpus import TOPICS, corpus_app

    runner = web.AppRunner(corpus_app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        url = f"http://127.0.0.1:{port}/kb/9"  # black holes
        async with (
            aiohttp.ClientSession(headers=auth(served)) as session,
            session.post(
                f"{served.base_url}/api/v1/jobs", json={"url": url, "formats": ["chunks"]}
            ) as response,
        ):
            assert response.status == 201
        await open_dashboard(page, served.base_url + "/")
        await expect(row_of(page, url)).to_have_attribute(
            "data-status", "COMPLETED", timeout=WAIT_MS
        )
        await page.get_by_role("link", name="Search").click()
        await expect(page).to_have_title("Search · TaskCrawler")
        await dashboard_ready(page)
        await page.get_by_label("Question").fill(TOPICS[9].question)
        await page.get_by_label("Mode").select_option("semantic")
        await page.get_by_role("button", name="Search", exact=True).click()
        first = page.locator("#search-results li").first
        await expect(first).to_contain_text("Black holes", timeout=WAIT_MS)
        await expect(first).to_contain_text("event horizon")
        # A search's URL is searched on arrival: shared, bookmarked, or sent before the script ran.
        asked = urlencode({"q": "black holes event horizon", "mode": "keyword", "k": 3})
        await open_dashboard(page, f"{served.base_url}/search?{asked}")
        await expect(page.get_by_label("Mode")).to_have_value("keyword")
        await expect(first).to_contain_text("Black holes", timeout=WAIT_MS)
        await first.get_by_role("link", name="Black holes").click()
        await expect(page.locator("#job-status")).to_have_text("COMPLETED", timeout=WAIT_MS)
    finally:
        await runner.cleanup()
