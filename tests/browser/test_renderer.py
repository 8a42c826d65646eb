"""The renderer against Debian's chromium, a local site and a local intranet: no mocks.

``public.test`` resolves (through the tests' fake DNS) to 127.0.0.1, which the tests' guard
treats as a public address; ``intranet.test`` and 127.0.0.2 stay blocked, as loopback and
private addresses are in production. The intranet server counts what reaches it: a refused
request must not reach it at all.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from selectolax.lexbor import LexborHTMLParser

from taskcrawler.browser import (
    TEXT_ONLY,
    BrowserRenderer,
    RenderOptions,
    processes,
    render_availability,
)
from taskcrawler.browser.launcher import INSTANCE_VARIABLE, PLAYWRIGHT_DISABLED_FEATURES
from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.extract import extract
from taskcrawler.extract.appshell import shell_verdict
from taskcrawler.fetch import Fetcher
from tests.browser.conftest import (
    GONE_WITHIN_SECONDS,
    LOOPING_PAGE_DEADLINE_SECONDS,
    chromium_path,
    gone,
    new_renderer,
    pretend_public,
    render_settings,
    resolver,
)
from tests.support.hostile import StaticResolver
from tests.support.render_site import RenderSite
from tests.unit.test_appshell import CORPUS
from tests.unit.test_appshell import manifest as appshell_manifest


async def render_error(renderer: BrowserRenderer, url: str, **options: Any) -> FetchError:
    with pytest.raises(FetchError) as caught:
        await renderer.render(url, RenderOptions(**options))
    return caught.value


async def settles_to(renderer: BrowserRenderer, count: int) -> bool:
    """Whether the browser's live processes come down to ``count`` (a closed page's renderer
    exits a moment after its context is closed)."""
    for _ in range(int(GONE_WITHIN_SECONDS / 0.1)):
        if renderer.browser_processes() <= count:
            return True
        await asyncio.sleep(0.1)
    return False


# --- rendering ---------------------------------------------------------------------------------


async def test_a_page_built_by_javascript_is_rendered_and_auto_chooses_it(
    site: RenderSite, renderer: BrowserRenderer
) -> None:
    fetcher = Fetcher(render_settings(), guard=pretend_public(), resolver=resolver())
    try:
        shell = await fetcher.fetch(site.url("/spa"))
        static = await fetcher.fetch(site.url("/static"))
    finally:
        await fetcher.close()
    assert b"Brake pads" not in shell.body  # the products come from the API
    assert shell_verdict(shell.body, shell.charset).render
    assert not shell_verdict(static.body, static.charset).render

    result = await renderer.render(site.url("/spa"), RenderOptions(wait_until="networkidle"))
    assert "Built by JavaScript from the API." in result.html
    assert result.status == 200 and result.final_url == site.url("/spa")
    assert result.headers["content-type"].startswith("text/html")
    assert result.blocked_requests == 0 and result.requests >= 2
    # The rendered DOM goes through the same extraction as a fetched page.
    page = extract(result.html.encode(), url=result.final_url, formats=["text"])
    assert page.text is not None and "Brake pads" in page.text
    assert "Brake pads" not in (
        extract(shell.body, url=shell.final_url, formats=["text"]).text or ""
    )


async def test_a_fetched_document_is_rendered_without_fetching_it_again(
    site: RenderSite, renderer: BrowserRenderer
) -> None:
    fetcher = Fetcher(render_settings(), guard=pretend_public(), resolver=resolver())
    try:
        shell = await fetcher.fetch(site.url("/spa"))
    finally:
        await fetcher.close()
    before = site.hits["/spa"]
    result = await renderer.render(
        shell.url, RenderOptions(wait_until="networkidle"), document=shell
    )
    assert "Built by JavaScript from the API." in result.html
    assert site.hits["/spa"] == before  # the browser was handed the body
    assert site.hits["/api/products"] >= 1  # but the page's own requests went out


async def test_waits_for_a_selector_and_says_when_one_never_comes(
    site: RenderSite, renderer: BrowserRenderer
) -> None:
    found = await renderer.render(site.url("/late"), RenderOptions(wait_for_selector="#late"))
    assert "Arrived late." in found.html and found.waits_timed_out == ()
    missing = await renderer.render(
        site.url("/late"), RenderOptions(wait_for_selector="#never", wait_seconds=0.5)
    )
    assert missing.waits_timed_out == ("selector",)


async def test_images_fonts_and_media_can_be_left_out(
    site: RenderSite, renderer: BrowserRenderer
) -> None:
    site.hits.clear()
    result = await renderer.render(
        site.url("/images?n=6"), RenderOptions(block_resources=TEXT_ONLY)
    )
    assert result.skipped_requests >= 6
    assert not any(path.startswith("/img/") for path in site.hits)
    assert site.hits["/font.woff2"] == 0
    shown = await renderer.render(site.url("/images?n=6"))
    assert shown.skipped_requests == 0
    assert sum(n for path, n in site.hits.items() if path.startswith("/img/")) == 6


async def test_the_main_document_must_be_a_page(
    site: RenderSite, renderer: BrowserRenderer
) -> None:
    missing = await render_error(renderer, site.url("/status/404"))
    assert missing.code == "http_404" and not missing.transient
    failing = await render_error(renderer, site.url("/status/503"))
    assert failing.code == ErrorCode.HTTP_5XX and failing.transient
    download = await render_error(renderer, site.url("/file.bin"))
    assert download.code == ErrorCode.UNSUPPORTED_CONTENT_TYPE and not download.transient
    local = await render_error(renderer, "file:///etc/passwd")
    assert local.code == ErrorCode.INVALID_URL


@pytest.fixture(scope="module")
async def limited() -> AsyncIterator[BrowserRenderer]:
    """A renderer with the limits the tests below reach for set low: no redirect, 1 MiB of a
    page's traffic, screenshots 1,000 px high. Each test's page reaches one of them only, and
    one browser spares the launches of three."""
    shared = new_renderer(
        max_redirects=0, render_max_bytes=1024 * 1024, render_screenshot_max_height=1000
    )
    yield shared
    await shared.close()


async def test_redirects_are_followed_and_their_number_bounded(
    site: RenderSite, renderer: BrowserRenderer, limited: BrowserRenderer
) -> None:
    hop = site.url("/static")
    result = await renderer.render(site.url(f"/redirect?to={hop}"))
    assert result.final_url == hop and "About us" in result.html
    error = await render_error(limited, site.url(f"/redirect?to={hop}"))
    assert error.code == ErrorCode.TOO_MANY_REDIRECTS


async def test_local_files_downloads_and_service_workers_are_refused(
    site: RenderSite, renderer: BrowserRenderer
) -> None:
    local = await renderer.render(site.url("/local-files"))
    assert "root:" not in local.html
    assert "fetch refused" in local.html
    assert local.final_url == site.url("/local-files")  # the navigation to file: did not happen
    worker = await renderer.render(site.url("/service-worker"), RenderOptions(wait_seconds=2))
    assert 'id="sw">registered' not in worker.html
    assert site.hits["/sw.js"] == 0
    download = await renderer.render(site.url("/download"))
    assert "Download" in download.html  # the page rendered; the file was never saved


async def test_total_bytes_of_a_page_are_bounded(
    site: RenderSite, limited: BrowserRenderer
) -> None:
    result = await limited.render(site.url("/heavy?n=6"))  # 6 x 512 KiB of scripts
    assert result.over_budget
    assert 512 * 1024 < result.bytes_received <= 1024 * 1024


# --- screenshots -------------------------------------------------------------------------------


async def test_a_full_page_screenshot_is_a_png_of_the_page(
    site: RenderSite, renderer: BrowserRenderer
) -> None:
    options = RenderOptions(screenshot=True, viewport_width=800, viewport_height=600)
    result = await renderer.render(site.url("/tall?h=3000"), options)
    assert result.screenshot is not None
    assert result.screenshot.png.startswith(b"\x89PNG\r\n\x1a\n")
    assert (result.screenshot.width, result.screenshot.height) == (800, 3000)
    assert not result.screenshot.cut

    viewport = await renderer.render(
        site.url("/tall?h=3000"),
        RenderOptions(screenshot=True, full_page=False, viewport_width=800, viewport_height=600),
    )
    assert viewport.screenshot is not None
    assert (viewport.screenshot.width, viewport.screenshot.height) == (800, 600)


async def test_a_screenshot_is_cut_at_the_height_limit(
    site: RenderSite, limited: BrowserRenderer
) -> None:
    result = await limited.render(
        site.url("/tall?h=5000"), RenderOptions(screenshot=True, viewport_width=640)
    )
    assert result.screenshot is not None and result.screenshot.cut
    assert (result.screenshot.width, result.screenshot.height) == (640, 1000)


# --- the address guard -------------------------------------------------------------------------


def reach_url(site: RenderSite, intranet: RenderSite) -> str:
    port, inner = intranet.port, f"127.0.0.2:{intranet.port}"
    redirect = site.url(f"/redirect?to=http://{inner}/secret")
    query = [
        ("fetch", f"http://{inner}/secret"),  # a literal
        ("fetch", f"http://intranet.test:{port}/secret"),  # a name that resolves inward
        ("fetch", f"http://0x7f000002:{port}/secret"),  # 127.0.0.2 in hexadecimal
        ("fetch", f"http://[::ffff:127.0.0.2]:{port}/secret"),
        ("fetch", "http://169.254.169.254/latest/meta-data/"),  # cloud metadata
        ("fetch", redirect),  # allowed first hop, refused second
        ("image", f"http://{inner}/secret?img"),
        ("frame", f"http://intranet.test:{port}/secret"),
        ("socket", f"ws://{inner}/ws"),
        ("popup", f"http://{inner}/secret?popup"),
        ("socket", site.url("/ws").replace("http:", "ws:")),  # a public socket still works
    ]
    return site.url("/reach?" + urlencode(query))


async def test_a_page_cannot_reach_private_addresses(
    site: RenderSite, intranet: RenderSite, renderer: BrowserRenderer
) -> None:
    intranet.hits.clear()
    result = await renderer.render(
        reach_url(site, intranet), RenderOptions(wait_until="networkidle")
    )
    assert intranet.total_hits == 0
    assert result.blocked_requests >= 8
    blocked = " ".join(result.blocked)
    assert "127.0.0.2" in blocked and "169.254.169.254" in blocked and "loopback" in blocked
    assert "socket said echo hello" in result.html  # the public WebSocket went through


async def test_allowing_private_networks_reaches_them(
    site: RenderSite, intranet: RenderSite
) -> None:
    """The same page, guard off: proves the previous test would see a leak."""
    open_renderer = BrowserRenderer(
        render_settings(allow_private_networks=True), resolver=resolver()
    )
    intranet.hits.clear()
    try:
        result = await open_renderer.render(
            reach_url(site, intranet), RenderOptions(wait_until="networkidle")
        )
    finally:
        await open_renderer.close()
    assert intranet.hits["/secret"] >= 3 and intranet.hits["/ws"] == 1
    assert result.blocked_requests == 0


async def test_a_private_main_document_is_refused(
    intranet: RenderSite, renderer: BrowserRenderer
) -> None:
    intranet.hits.clear()
    for url in (
        f"http://127.0.0.2:{intranet.port}/secret",
        f"http://intranet.test:{intranet.port}/secret",
    ):
        error = await render_error(renderer, url)
        assert error.code == ErrorCode.BLOCKED_ADDRESS and not error.transient
    assert intranet.total_hits == 0


async def test_a_rebinding_name_never_reaches_the_intranet(
    site: RenderSite, intranet: RenderSite
) -> None:
    """The browser resolves nothing itself: the proxy vets each answer and connects to it."""
    rebinding = StaticResolver({"rebind.test": [["127.0.0.1"], ["127.0.0.2"]]})
    guarded = BrowserRenderer(render_settings(), guard=pretend_public(), resolver=rebinding)
    intranet.hits.clear()
    try:
        url = (
            f"http://rebind.test:{site.port}/reach?fetch=http://rebind.test:{intranet.port}/secret"
        )
        await guarded.render(url, RenderOptions(wait_until="networkidle"))
    finally:
        await guarded.close()
    assert intranet.total_hits == 0
    assert rebinding.calls and set(rebinding.calls) == {"rebind.test"}


# --- hangs, crashes, recycling, shutdown ---------------------------------------------------------


@pytest.mark.parametrize("path", ["/loop", "/loop-later"])
async def test_a_page_that_loops_forever_fails_render_timeout_and_the_next_one_renders(
    site: RenderSite, path: str
) -> None:
    hasty = new_renderer(render_timeout_seconds=LOOPING_PAGE_DEADLINE_SECONDS)
    try:
        await hasty.render(site.url("/static"))  # so the looping page's document comes at once
        async with asyncio.timeout(LOOPING_PAGE_DEADLINE_SECONDS + GONE_WITHIN_SECONDS):
            error = await render_error(hasty, site.url(path))
        assert error.code == ErrorCode.RENDER_TIMEOUT and not error.transient
        pid = hasty.browser_pid
        result = await hasty.render(site.url("/static"))
        assert "About us" in result.html
        # The stuck renderer was killed with its context; the browser itself lived on.
        assert hasty.browser_pid == pid and hasty.stats.launches == 1
        assert await settles_to(hasty, 2)  # the browser and its storage service, no renderer
    finally:
        await hasty.close()


async def test_a_document_that_never_finishes_is_a_transient_timeout(site: RenderSite) -> None:
    """Not the page's scripts but the server: retried, like a fetch that timed out."""
    hasty = new_renderer(render_timeout_seconds=3.0)
    site.slow_release.clear()
    try:
        error = await render_error(hasty, site.url("/drip"))
    finally:
        site.slow_release.set()
        await hasty.close()
    assert error.code == ErrorCode.TIMEOUT and error.transient


async def test_chromium_killed_mid_render_is_transient_and_replaced(site: RenderSite) -> None:
    crashy = new_renderer()
    try:
        await crashy.render(site.url("/static"))
        process = crashy._current
        assert process is not None
        pgid, instance = process.pgid, process.instance
        site.slow_release.clear()
        site.slow_arrived.clear()
        pending = asyncio.ensure_future(crashy.render(site.url("/slow")))
        await site.slow_arrived.wait()  # the browser is waiting for the document now
        os.kill(process.pid, signal.SIGKILL)
        with pytest.raises(FetchError) as caught:
            await pending
        assert caught.value.code == ErrorCode.RENDER_CRASHED and caught.value.transient
        result = await crashy.render(site.url("/spa"), RenderOptions(wait_until="networkidle"))
        assert "Built by JavaScript" in result.html
        assert crashy.stats.launches == 2 and crashy.browser_pid != process.pid
        assert await gone(pgid, instance) == []
    finally:
        site.slow_release.set()
        await crashy.close()


async def test_the_browser_is_recycled_after_n_pages_without_leaks(site: RenderSite) -> None:
    recycled = new_renderer(browser_recycle_pages=3, browser_concurrency=2)
    browsers: set[tuple[int, str]] = set()
    counts: list[int] = []

    async def sample() -> None:
        while True:
            counts.append(recycled.browser_processes())
            current = recycled._current
            if current is not None:
                browsers.add((current.pgid, current.instance))
            await asyncio.sleep(0.02)

    sampler = asyncio.ensure_future(sample())
    try:
        for _ in range(4):
            pages = [
                recycled.render(site.url("/spa"), RenderOptions(wait_until="networkidle"))
                for _ in range(2)
            ]
            results = await asyncio.gather(*pages)
            assert all("Built by JavaScript" in r.html for r in results)
    finally:
        sampler.cancel()
        await asyncio.gather(sampler, return_exceptions=True)
        await recycled.close()
    assert recycled.stats.launches == 3  # 8 pages, 3 a browser
    assert recycled.stats.recycled_after_pages == 2
    assert len(browsers) == 3
    # The pool, the browser and its storage service; momentarily one more, when a page's
    # renderer is starting while a closed page's renderer is still exiting.
    assert 0 < max(counts) <= 2 + 2 + 1
    for pgid, instance in browsers:
        assert await gone(pgid, instance) == []


async def test_the_browser_is_recycled_above_its_memory_limit(site: RenderSite) -> None:
    hungry = new_renderer(browser_max_rss_mb=128)  # below what one chromium holds
    try:
        await hungry.render(site.url("/static"))
        await hungry.render(site.url("/static"))
    finally:
        await hungry.close()
    assert hungry.stats.recycled_for_memory == 2 and hungry.stats.launches == 2


async def test_close_leaves_no_chromium_process(site: RenderSite) -> None:
    closing = new_renderer()
    await closing.render(site.url("/static"))
    process = closing._current
    assert process is not None
    assert processes.carrying_variable(INSTANCE_VARIABLE, process.instance)
    await closing.close()
    assert await gone(process.pgid, process.instance) == []
    assert closing.browser_pid is None


async def test_without_a_browser_rendering_is_unavailable(site: RenderSite) -> None:
    missing = BrowserRenderer(render_settings(browser="/nonexistent/chromium"))
    assert "/nonexistent/chromium" in missing.availability.reason
    error = await render_error(missing, site.url("/static"))
    assert error.code == ErrorCode.RENDER_UNAVAILABLE and not error.transient
    assert render_availability(render_settings()).available


async def test_playwrights_own_feature_switches_are_kept(
    site: RenderSite, renderer: BrowserRenderer
) -> None:
    """Chromium takes the last --disable-features only; ours must carry Playwright's list."""
    await renderer.render(site.url("/static"))
    pid = renderer.browser_pid
    assert pid is not None
    arguments = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")  # noqa: ASYNC240
    lists = [
        a.split("=", 1)[1].split(",") for a in arguments if a.startswith("--disable-features=")
    ]
    assert len(lists) >= 2
    playwrights, ours = set(lists[0]), set(lists[-1])
    assert playwrights <= ours, playwrights - ours
    assert set(PLAYWRIGHT_DISABLED_FEATURES) <= ours


# --- the labels of the render: auto corpus --------------------------------------------------------

#: Words a render must add for a page to count as built in JavaScript.
GAINED_WORDS = 15


def _visible_words(html: bytes | str) -> int:
    """Every word a reader of the page sees (not the extractor's choice of main content)."""
    tree = LexborHTMLParser(html)
    for node in tree.css("script, style, noscript, template"):
        node.decompose()
    return len(tree.body.text(separator=" ").split()) if tree.body is not None else 0


async def test_the_auto_corpus_labels_are_what_chromium_does(
    site: RenderSite, renderer: BrowserRenderer
) -> None:
    """tests/unit/test_appshell.py trusts the labels; here chromium confirms each of them."""
    wrong = []
    for page in appshell_manifest():
        url = site.url(f"/corpus/{page['file']}")
        fetched = (CORPUS / page["file"]).read_bytes()
        rendered = await renderer.render(url, RenderOptions(wait_until="networkidle"))
        gained = _visible_words(rendered.html) - _visible_words(fetched)
        if (gained >= GAINED_WORDS) != page["builds_in_js"]:
            wrong.append((page["file"], gained))
    assert wrong == []


LAUNCH_AND_WAIT = """
import asyncio, sys
from taskcrawler.browser.launcher import BrowserProcess

async def main():
    process = await BrowserProcess.launch(sys.argv[1], timeout_seconds=60)
    print(process.pgid, process.instance, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_a_worker_killed_with_kill_9_leaves_no_chromium() -> None:
    """The driver notices its parent's pipe close and takes the browser with it."""
    worker = await asyncio.create_subprocess_exec(
        sys.executable, "-c", LAUNCH_AND_WAIT, chromium_path(), stdout=asyncio.subprocess.PIPE
    )
    try:
        assert worker.stdout is not None
        async with asyncio.timeout(GONE_WITHIN_SECONDS * 2):
            line = (await worker.stdout.readline()).decode().split()
        pgid, instance = int(line[0]), line[1]
        assert processes.group_members(pgid)
    finally:
        worker.kill()
        await worker.wait()
    assert await gone(pgid, instance) == []
