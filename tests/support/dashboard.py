"""The dashboard in a browser test: a page whose console errors fail the test, used once its
module has wired its forms.

Chromium aborts the loads in flight when the machine's network changes (an address added to an
interface), with ``net::ERR_NETWORK_CHANGED``: the multi-host tests plug links into this
network namespace while the browser tests run beside them. Such a load is the machine's doing,
not the page's: its console line is not a fault, and a dashboard whose own files it aborted is
loaded again.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

from playwright.async_api import Browser, Page, Request, expect
from playwright.async_api import Error as PlaywrightError

READY_MS = 30_000
NETWORK_CHANGED = "net::ERR_NETWORK_CHANGED"
LOADS = 3  # a network change is rare: two in a row during one page's load would be news


@contextlib.asynccontextmanager
async def watched_page(
    browser: Browser, *, key: str | None = None, expected: Sequence[str] = ()
) -> AsyncIterator[Page]:
    """A fresh browser context (its own localStorage, holding ``key`` if given) whose page
    fails the test on a JavaScript exception or a console error, except those containing one of
    ``expected`` (an answer the test asks for) and network changes.

    A fixture asks for the server before this page, so that the page is closed before the
    served process stops: a dashboard still polling a server that is going logs a refused
    connection, not a fault."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    if key is not None:
        await context.add_init_script(f"localStorage.setItem('taskcrawler.apiKey', '{key}')")
    opened = await context.new_page()
    problems: list[str] = []
    ignored = (*expected, NETWORK_CHANGED)
    opened.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    opened.on(
        "console",
        lambda message: (
            problems.append(f"console: {message.text}")
            if message.type == "error" and not any(text in message.text for text in ignored)
            else None
        ),
    )
    try:
        yield opened
    finally:
        await context.close()
    # A blocked inline script or style (CSP), a JS exception, a missing file: all show up here.
    assert not problems, problems


async def dashboard_ready(page: Page) -> None:
    """Wait for the page's script to have wired it (``<html data-ready>``): a form sent
    before that is sent by the browser itself, not by the page."""
    await expect(page.locator("html[data-ready]")).to_have_count(1, timeout=READY_MS)


async def open_dashboard(page: Page, url: str) -> None:
    """Load ``url`` and wait until its dashboard is wired; loaded again if a network change
    aborted one of its files."""
    aborted: list[str] = []

    def note(request: Request) -> None:
        if request.failure == NETWORK_CHANGED:
            aborted.append(request.url)

    page.on("requestfailed", note)
    try:
        for load in range(1, LOADS + 1):
            aborted.clear()
            try:
                await page.goto(url)
            except PlaywrightError as exc:
                # The document itself aborted: goto raises before anything is checked.
                if NETWORK_CHANGED not in exc.message or load == LOADS:
                    raise
                continue
            try:
                await dashboard_ready(page)
                return
            except AssertionError:
                if not aborted or load == LOADS:
                    raise
    finally:
        page.remove_listener("requestfailed", note)
