"""Firecrawl's screenshots and ``waitFor`` through the official ``firecrawl-py`` SDK (v2 and v1),
against ``taskcrawler serve`` whose worker renders with Debian's chromium: the document's
``screenshot`` is a URL that serves the PNG, of the viewport or of the whole page as asked;
``mobile`` renders as a phone and ``actions`` run and give their results."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from taskcrawler.browser.renderer import png_size
from taskcrawler.client import AsyncTaskCrawler
from tests.browser.conftest import chromium_path
from tests.support.firecrawl_sdk import v1_client, v2_client
from tests.support.render_site import RenderSite
from tests.support.served import FIRECRAWL_ENV, Served, served_on_sqlite


@pytest.fixture(scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path
) -> AsyncIterator[Served]:
    """One serve (and its browser) for the module: each test uses keys of its own."""
    async with served_on_sqlite(
        tmp_path_factory,
        _sqlite_template,
        **FIRECRAWL_ENV,
        TASKCRAWLER_BROWSER=chromium_path(),
        TASKCRAWLER_RENDER_TIMEOUT_SECONDS="30",
    ) as served:
        yield served


async def _picture(served: Served, url: str, key: str | None) -> httpx.Response:
    assert url.startswith(f"{served.base_url}/api/v1/jobs/"), url
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.get(url, headers=headers)


async def test_the_v2_sdk_gets_a_viewport_screenshot_and_waits(
    served: Served, site: RenderSite
) -> None:
    key = await served.new_key("pictures")
    fc = v2_client(key, served.base_url)
    shot = {"type": "screenshot", "viewport": {"width": 800, "height": 600}}
    doc = await asyncio.to_thread(
        fc.scrape, site.url("/tall?h=1500", host="127.0.0.1"), formats=["markdown", shot]
    )
    assert doc.screenshot and doc.metadata.status_code == 200
    picture = await _picture(served, doc.screenshot, key)
    assert picture.status_code == 200 and picture.headers["content-type"] == "image/png"
    assert png_size(picture.content) == (800, 600)  # the viewport, not the 1,500 px page
    # The URL is the jobs API's: it takes the key the SDK holds, as every call does.
    assert (await _picture(served, doc.screenshot, None)).status_code == 401

    # waitFor renders the page: what its script builds from its API is in the Markdown.
    spa = await asyncio.to_thread(
        fc.scrape, site.url("/spa", host="127.0.0.1"), formats=["markdown"], wait_for=5000
    )
    assert "Brake pads" in spa.markdown and spa.screenshot is None

    # A batch's documents link their pictures the same way (the default viewport here).
    batch = await asyncio.to_thread(
        fc.batch_scrape,
        [site.url("/tall?h=900", host="127.0.0.1")],
        formats=["screenshot"],
        poll_interval=1,
    )
    [shown] = batch.data
    assert shown.screenshot is not None
    assert png_size((await _picture(served, shown.screenshot, key)).content) == (1280, 800)

    # A page scraped for its Markdown alone gains a screenshot when one is asked: rendered.
    plain = site.url("/tall?h=700", host="127.0.0.1")
    first = await asyncio.to_thread(fc.scrape, plain, formats=["markdown"])
    assert first.screenshot is None
    later = await asyncio.to_thread(fc.scrape, plain, formats=["markdown", "screenshot"])
    assert later.screenshot and later.metadata.scrape_id == first.metadata.scrape_id
    assert (await _picture(served, later.screenshot, key)).status_code == 200

    # mobile renders as a phone; actions run before the page is taken, and give their results.
    phone = await asyncio.to_thread(
        fc.scrape, site.url("/device", host="127.0.0.1"), formats=["markdown"], mobile=True
    )
    assert "width:412 touch:1 mobile-ua:true" in phone.markdown
    assert all("Mobile" in agent for agent in site.user_agents)  # the fetch's too
    # The URL's job, first scraped without actions, runs again with them.
    plain_first = await asyncio.to_thread(
        fc.scrape, site.url("/actions", host="127.0.0.1"), formats=["markdown"]
    )
    assert "Revealed text" not in plain_first.markdown and plain_first.actions is None
    acted = await asyncio.to_thread(
        fc.scrape,
        site.url("/actions", host="127.0.0.1"),
        formats=["markdown"],
        actions=[
            {"type": "click", "selector": "#more"},
            {"type": "wait", "selector": "#shown"},
            {"type": "executeJavascript", "script": "document.querySelectorAll('p').length"},
            {"type": "scrape"},
            {"type": "screenshot", "viewport": {"width": 640, "height": 480}},
            {"type": "pdf", "format": "A5"},
        ],
    )
    assert "Revealed text" in acted.markdown and acted.actions is not None
    assert acted.actions["javascriptReturns"] == [{"type": "number", "value": 3}]
    assert "Revealed text" in acted.actions["scrapes"][0]["html"]
    [shot_url], [pdf_url] = acted.actions["screenshots"], acted.actions["pdfs"]
    assert shot_url.endswith("/actions/screenshots/0") and pdf_url.endswith("/actions/pdfs/0")
    taken, printed = await _picture(served, shot_url, key), await _picture(served, pdf_url, key)
    assert taken.headers["content-type"] == "image/png" and png_size(taken.content) == (640, 480)
    assert printed.headers["content-type"] == "application/pdf"
    assert printed.content.startswith(b"%PDF-")
    assert (await _picture(served, pdf_url, None)).status_code == 401
    # The native API lists the same files as paths, and its client reads them.
    job_id = acted.metadata.scrape_id
    async with AsyncTaskCrawler(served.base_url, api_key=key) as tc:
        job = await tc.get_job(job_id)
        assert job.result is not None
        assert job.result["actions"]["pdfs"] == [f"/api/v1/jobs/{job_id}/actions/pdfs/0"]
        assert await tc.action_file(job_id, "pdfs", 0) == printed.content
    failing = {"type": "executeJavascript", "script": "throw new Error('boom')"}
    async with httpx.AsyncClient(timeout=60) as http:
        refused = await http.post(
            f"{served.base_url}/v2/scrape",
            headers={"Authorization": f"Bearer {key}"},
            json={"url": site.url("/actions?x", host="127.0.0.1"), "actions": [failing]},
        )
    assert refused.status_code == 500 and not refused.json()["success"]
    assert (
        "action_failed: actions[0] (executeJavascript) failed: the script threw Error: boom"
        in (refused.json()["error"])
    )


# The v1 SDK still calls pydantic's v1-style .dict().
@pytest.mark.filterwarnings("ignore:The `dict` method is deprecated:DeprecationWarning")
async def test_the_v1_sdk_gets_a_full_page_screenshot(served: Served, site: RenderSite) -> None:
    key = await served.new_key("pictures-v1")
    app = v1_client(key, served.base_url)
    doc = await asyncio.to_thread(
        app.scrape_url,
        site.url("/tall?h=1400", host="127.0.0.1"),
        formats=["screenshot@fullPage"],
    )
    assert doc.screenshot
    picture = await _picture(served, doc.screenshot, key)
    assert png_size(picture.content) == (1280, 1400)  # the default viewport's width, all of it
