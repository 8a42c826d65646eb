"""The dashboard in a browser test: a page is used once its module has wired its forms."""

from __future__ import annotations

from playwright.async_api import Page, expect

READY_MS = 30_000


async def dashboard_ready(page: Page) -> None:
    """Wait for the page's script to have wired it (``<html data-ready>``): a form sent
    before that is sent by the browser itself, not by the page."""
    await expect(page.locator("html[data-ready]")).to_have_count(1, timeout=READY_MS)


async def open_dashboard(page: Page, url: str) -> None:
    await page.goto(url)
    await dashboard_ready(page)
