"""The renderer of one worker process: one chromium, a bounded number of pages at once.

Each page gets a fresh browser context (no cookie, cache or storage survives it) whose only way
to the network is a proxy of its own behind the address guard (see :mod:`.proxy`). A render has a
hard deadline: Playwright's own timeouts end the waits, ``asyncio.timeout`` ends anything that
still hangs (a page whose scripts never yield never answers a call), and a context that cannot
be closed within a grace period gets its browser killed, process group and all. The browser is
recycled after ``browser_recycle_pages`` pages or when its processes hold more than
``browser_max_rss_mb``; one that crashed is replaced by the next render, and the pages it took
down fail as ``render_crashed``, a transient error, so their jobs are retried.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from aiohttp.abc import AbstractResolver
from playwright.async_api import (
    BrowserContext,
    Page,
    Request,
    Response,
    Route,
)
from playwright.async_api import (
    Error as PlaywrightError,
)
from playwright.async_api import (
    TimeoutError as PlaywrightTimeout,
)
from yarl import URL

from taskcrawler.browser import processes
from taskcrawler.browser.actions import Acted, run_actions
from taskcrawler.browser.adblock import DEBIAN_LISTS, AdBlocker
from taskcrawler.browser.availability import Availability, render_availability
from taskcrawler.browser.launcher import BrowserError, BrowserProcess
from taskcrawler.browser.options import RenderOptions, RenderResult
from taskcrawler.browser.proxy import Egress, PageProxy, PageTraffic
from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.domain.actions import MAX_PDF_PAGES, Action
from taskcrawler.domain.pages import FetchedPage, Screenshot
from taskcrawler.domain.rendering import mobile_user_agent
from taskcrawler.domain.urls import shares_credentials
from taskcrawler.fetch.fetcher import ALLOWED_CONTENT_TYPES
from taskcrawler.fetch.guard import AddressGuard
from taskcrawler.fetch.limits import check_content_type, parse_retry_after
from taskcrawler.settings import Settings

log = logging.getLogger(__name__)

#: A page, a context or a browser that does not close within this long is killed.
CLOSE_GRACE_SECONDS = 5.0
LAUNCH_TIMEOUT_SECONDS = 30.0
#: How long a page has to answer a trivial script before it counts as stuck.
BUSY_PROBE_SECONDS = 1.0
#: Part of the deadline kept for reading the DOM and the screenshot once the waits are over.
RESERVE_SHARE, MAX_RESERVE_SECONDS = 0.25, 5.0
#: Screenshots over ``max_body_bytes`` are taken again this much shorter than the size asks.
SCREENSHOT_SHRINK_MARGIN = 0.9
DEFAULT_OPTIONS = RenderOptions()

# The DOM as HTML, refused (null) above a length, so a page cannot send us gigabytes.
_SERIALIZE = """(maxChars) => {
  const root = document.documentElement;
  if (!root) return "";
  const html = root.outerHTML;
  if (html.length > maxChars) return null;
  const type = document.doctype;
  return (type ? "<!DOCTYPE " + type.name + ">" : "") + html;
}"""
_PAGE_HEIGHT = """() => Math.max(
  document.documentElement ? document.documentElement.scrollHeight : 0,
  document.body ? document.body.scrollHeight : 0)"""
# Headers of a fetched document that describe the bytes as they were sent, not as we hold them
# (aiohttp decompressed and de-chunked the body).
_FRAMING_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
# Navigation errors of chromium (net::ERR_*) that mean the answer itself was unusable.
_BAD_RESPONSE_ERRORS = (
    "ERR_INVALID_RESPONSE",
    "ERR_INVALID_HTTP_RESPONSE",
    "ERR_RESPONSE_HEADERS_TOO_BIG",
    "ERR_CONTENT_DECODING_FAILED",
)
_CLOSED_ERRORS = (
    "ERR_CONNECTION_CLOSED",
    "ERR_CONNECTION_RESET",
    "ERR_EMPTY_RESPONSE",
    "ERR_CONTENT_LENGTH_MISMATCH",
    "ERR_INCOMPLETE_CHUNKED_ENCODING",
)


@dataclass
class RendererStats:
    """Counters for the worker's metrics and logs."""

    launches: int = 0
    rendered: int = 0
    failed: int = 0
    timeouts: int = 0
    crashes: int = 0
    recycled_after_pages: int = 0
    recycled_for_memory: int = 0
    blocked_requests: int = 0


@dataclass
class _PageState:
    """What one render learned while it ran."""

    main_response: Response | None = None
    document_arrived: bool = False  # the main document's body was received in full
    document_served: bool = False
    skipped: int = 0
    crashed: bool = False
    waits_timed_out: list[str] = field(default_factory=list)
    ads_blocked: int = 0  # of skipped, those the ad filter lists refused
    ads_unblocked: str | None = None  # why ads were asked to be blocked and were not


class BrowserRenderer:
    """Renders pages in a headless chromium; one instance per worker process.

    ``guard`` and ``resolver`` are the fetcher's (the same address policy; tests pass a fake
    DNS). ``availability`` defaults to :func:`render_availability` of the settings.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        guard: AddressGuard | None = None,
        resolver: AbstractResolver | None = None,
        availability: Availability | None = None,
    ) -> None:
        self.settings = settings
        self.availability = availability or render_availability(settings)
        guard = guard or AddressGuard(enabled=not settings.allow_private_networks)
        self._egress = Egress(settings, guard, resolver)
        self.ad_blocker = AdBlocker(settings.ad_filter_lists or DEBIAN_LISTS)
        self._slots = asyncio.Semaphore(settings.browser_concurrency)
        self._launching = asyncio.Lock()
        self._current: BrowserProcess | None = None
        self._closed = False
        self.stats = RendererStats()

    # --- the public surface --------------------------------------------------------------

    async def render(
        self,
        url: str,
        options: RenderOptions = DEFAULT_OPTIONS,
        *,
        document: FetchedPage | None = None,
    ) -> RenderResult:
        """Render ``url``; raise :class:`FetchError` when no usable page came of it.

        ``document``: the page as the fetcher already got it (robots.txt, politeness and limits
        applied). The browser then navigates to its ``final_url`` and is handed this body
        instead of asking the site again; every other request goes to the network.
        """
        self._check_available()
        start = _start_url(url, document)
        async with self._slots:
            process = await self._acquire()
            try:
                result = await self._render_on(process, url, start, options, document)
            except FetchError as error:
                self._count_failure(error)
                raise
            finally:
                await self._release(process)
        self.stats.rendered += 1
        self.stats.blocked_requests += result.blocked_requests
        return result

    async def close(self) -> None:
        """Close the browser and its driver; no chromium process is left. Idempotent."""
        self._closed = True
        process, self._current = self._current, None
        if process is not None:
            await process.close(CLOSE_GRACE_SECONDS)
        await self._egress.close()

    @property
    def browser_pid(self) -> int | None:
        """The running browser's main process, if one is running."""
        process = self._current
        return None if process is None or process.closing else process.pid

    def browser_processes(self) -> int:
        """Live processes of the running browser (0 when none runs)."""
        process = self._current
        return 0 if process is None else len(process.members())

    def metrics(self) -> dict[str, float]:
        """The counters of :attr:`stats` and the browser's live processes and memory."""
        values: dict[str, float] = {
            name: float(getattr(self.stats, name)) for name in self.stats.__dataclass_fields__
        }
        values["browser_processes"] = self.browser_processes()
        values["browser_resident_bytes"] = self.browser_resident_bytes()
        return values

    def browser_resident_bytes(self) -> int:
        process = self._current
        return 0 if process is None else process.resident_bytes()

    # --- the browser's lifecycle ---------------------------------------------------------

    def _check_available(self) -> None:
        if not self.availability.available:
            raise FetchError(
                ErrorCode.RENDER_UNAVAILABLE,
                f"rendering is not available in this worker: {self.availability.reason}",
                transient=False,
            )
        if self._closed:
            # Shutting down: another worker can render it.
            raise FetchError(ErrorCode.RENDER_UNAVAILABLE, "the renderer is closed", transient=True)

    async def _acquire(self) -> BrowserProcess:
        """A browser with room for one more page, launched or replaced as needed."""
        while True:
            process = self._current
            if process is None:
                await self._launch_if_none()
                continue
            if not process.usable:
                # Draining: its last page closes it (or it has closed already).
                if process.active == 0:
                    await self._discard(process)
                await process.closed.wait()
                continue
            if process.pages_started >= self.settings.browser_recycle_pages:
                process.retiring = True
                self.stats.recycled_after_pages += 1
                continue
            process.pages_started += 1
            process.active += 1
            return process

    async def _launch_if_none(self) -> None:
        async with self._launching:
            if self._current is not None:
                return
            self._check_available()
            executable = self.availability.executable
            assert executable is not None
            try:
                self._current = await BrowserProcess.launch(
                    executable, timeout_seconds=LAUNCH_TIMEOUT_SECONDS
                )
            except (PlaywrightError, BrowserError, OSError) as exc:
                log.warning("chromium did not start: %s", exc)
                raise FetchError(
                    ErrorCode.RENDER_CRASHED, f"the browser did not start: {_first_line(exc)}"
                ) from None
            self.stats.launches += 1
            log.info("chromium started (pid %d)", self._current.pid)

    async def _release(self, process: BrowserProcess) -> None:
        process.active -= 1
        if process.usable and self._over_memory(process):
            process.retiring = True
            self.stats.recycled_for_memory += 1
        if not process.usable and process.active == 0:
            await self._discard(process)

    def _over_memory(self, process: BrowserProcess) -> bool:
        limit = self.settings.browser_max_rss_mb * 1024 * 1024
        return process.resident_bytes() > limit

    async def _discard(self, process: BrowserProcess) -> None:
        if self._current is process:
            self._current = None
        if process.crashed:
            log.warning("chromium (pid %d) is gone; the next page starts a new one", process.pid)
        await process.close(CLOSE_GRACE_SECONDS)

    def _count_failure(self, error: FetchError) -> None:
        self.stats.failed += 1
        if error.code == ErrorCode.RENDER_TIMEOUT:
            self.stats.timeouts += 1
        elif error.code == ErrorCode.RENDER_CRASHED:
            self.stats.crashes += 1

    # --- one page ------------------------------------------------------------------------

    async def _render_on(
        self,
        process: BrowserProcess,
        url: str,
        start: str,
        options: RenderOptions,
        document: FetchedPage | None,
    ) -> RenderResult:
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.settings.render_timeout_seconds
        traffic = PageTraffic(max_bytes=self.settings.render_max_bytes)
        state = _PageState()
        try:
            proxy = await PageProxy(self._egress, traffic).start()
        except OSError as exc:
            raise FetchError(
                ErrorCode.RENDER_CRASHED, f"no port for the page's proxy: {exc}"
            ) from None
        context: BrowserContext | None = None
        page: Page | None = None
        try:
            async with asyncio.timeout_at(deadline):
                context = await process.browser.new_context(
                    proxy={"server": proxy.url},
                    viewport={"width": options.viewport_width, "height": options.viewport_height},
                    device_scale_factor=1,
                    user_agent=(
                        mobile_user_agent(self.settings.user_agent)
                        if options.mobile
                        else self.settings.user_agent
                    ),
                    is_mobile=options.mobile,
                    has_touch=options.mobile,
                    accept_downloads=False,
                    service_workers="block",
                    locale=options.locale,
                    timezone_id=options.timezone_id,
                    ignore_https_errors=options.ignore_https_errors,
                )
                page = await context.new_page()
                context.on("page", _close_popup)
                page.on("crash", lambda _page: setattr(state, "crashed", True))
                page.on("response", _main_response_recorder(page, state))
                page.on("requestfinished", _document_arrival_recorder(page, state))
                await self._route(context, page, start, options, document, state)
                html, screenshot, acted = await self._drive(
                    page, start, options, traffic, state, deadline
                )
                main = state.main_response
                assert main is not None
                final_url, headers = page.url, await main.all_headers()
        except TimeoutError:
            raise _if_alive(process, await _deadline_error(page, state, traffic, start)) from None
        except PlaywrightError as exc:
            raise _browser_error(exc, process, state, traffic, start) from None
        except FetchError as error:
            # A navigation cut short by the browser's death reads as the network's failure.
            raise _if_alive(process, error) from None
        finally:
            await self._dispose(process, context)
            await proxy.close()
        return RenderResult(
            url=url,
            final_url=final_url,
            status=main.status,
            headers=headers,
            html=html,
            screenshot=screenshot,
            elapsed_seconds=loop.time() - started,
            requests=traffic.requests,
            blocked_requests=traffic.blocked,
            skipped_requests=state.skipped,
            bytes_received=traffic.bytes_received,
            over_budget=traffic.over_budget,
            blocked=tuple(traffic.blocked_names),
            waits_timed_out=tuple(state.waits_timed_out),
            ads_blocked=state.ads_blocked,
            ads_note=state.ads_unblocked,
            actions=None if acted is None else acted.output,
            captures=() if acted is None else tuple(acted.captures),
        )

    async def _route(
        self,
        context: BrowserContext,
        page: Page,
        start: str,
        options: RenderOptions,
        document: FetchedPage | None,
        state: _PageState,
    ) -> None:
        """Requests seen by Playwright before the network: only when something is to be done
        with them (a document already fetched, resource types to skip, ads to refuse, headers
        for the page's host), since each costs a round trip to this process."""
        ads = options.block_ads and await self.ad_blocker.ready()
        state.ads_unblocked = (
            f"ads not blocked: {self.ad_blocker.unavailable}"
            if options.block_ads and not ads
            else None
        )
        blocked = options.block_resources
        if document is None and not blocked and not ads and not options.page_headers:
            return
        extra = dict(options.page_headers)

        async def handle(route: Route) -> None:
            request = route.request
            if document is not None and not state.document_served and _is_start(request, start):
                state.document_served = True
                await route.fulfill(
                    status=document.status,
                    headers=_replayed_headers(document),
                    body=document.body,
                )
            elif request.resource_type in blocked:
                state.skipped += 1
                await route.abort("blockedbyclient")
            elif (
                ads
                and request.resource_type != "document"
                and self.ad_blocker.blocks(request.url, start, request.resource_type)
            ):
                # The page itself is what was asked for: only what it loads is refused.
                state.skipped += 1
                state.ads_blocked += 1
                await route.abort("blockedbyclient")
            elif extra and shares_credentials(options.page_url, request.url):
                await route.fallback(headers={**request.headers, **extra})
            else:
                await route.fallback()

        await context.route("**/*", handle)

    async def _drive(
        self,
        page: Page,
        start: str,
        options: RenderOptions,
        traffic: PageTraffic,
        state: _PageState,
        deadline: float,
    ) -> tuple[str, Screenshot | None, Acted | None]:
        """Navigate, wait as asked (within the deadline), run the actions, then read the DOM
        and the picture."""
        reserve = min(MAX_RESERVE_SECONDS, RESERVE_SHARE * self.settings.render_timeout_seconds)

        def budget_ms(bound: float | None = None) -> float:
            left = deadline - reserve - asyncio.get_running_loop().time()
            if bound is not None:
                left = min(left, bound)
            return max(1.0, left * 1000)

        try:
            response = await page.goto(start, wait_until="domcontentloaded", timeout=budget_ms())
            if state.main_response is None:
                state.main_response = response
        except PlaywrightTimeout:
            raise await _deadline_error(page, state, traffic, start) from None
        except PlaywrightError as exc:
            if "interrupted by another navigation" not in str(exc):
                raise _navigation_error(exc, state, traffic, start) from None
        self._check_main_response(state, traffic, start)
        await _soft_wait(
            state, "load", page.wait_for_load_state("load", timeout=budget_ms(options.wait_seconds))
        )
        if options.wait_until == "networkidle":
            idle = page.wait_for_load_state("networkidle", timeout=budget_ms(options.wait_seconds))
            await _soft_wait(state, "networkidle", idle)
        if options.wait_for_selector is not None:
            appeared = page.wait_for_selector(
                "css=" + options.wait_for_selector,
                state="attached",
                timeout=budget_ms(options.wait_seconds),
            )
            await _soft_wait(state, "selector", appeared)
        acted = None
        if options.actions:
            self._check_main_response(state, traffic, start)  # acting on a refused page is moot
            acted = await run_actions(
                page,
                options.actions,
                deadline - reserve,
                self._serialize,
                partial(self._capture, options),
                self.settings.max_body_bytes,
            )
        self._check_main_response(state, traffic, start)  # a script may have navigated since
        html = await self._serialize(page)
        screenshot = await self._screenshot(page, options) if options.screenshot else None
        return html, screenshot, acted

    def _check_main_response(self, state: _PageState, traffic: PageTraffic, start: str) -> None:
        """The page's document must be one a fetch would have accepted."""
        response = state.main_response
        if response is None:
            raise FetchError(ErrorCode.CONNECT, f"no document arrived for {start}")
        refused = traffic.failures.get(_authority(response.url))
        if refused is not None and response.status in (403, 502, 504):
            raise refused  # the proxy's answer, not the site's
        redirects, request = 0, response.request.redirected_from
        while request is not None:
            redirects += 1
            request = request.redirected_from
        if redirects > self.settings.max_redirects:
            raise FetchError(
                ErrorCode.TOO_MANY_REDIRECTS,
                f"more than {self.settings.max_redirects} redirects (last to {response.url})",
            )
        if response.status >= 400:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            raise FetchError.for_status(response.status, response.status_text, retry_after)
        check_content_type(response.headers.get("content-type"), ALLOWED_CONTENT_TYPES)

    async def _serialize(self, page: Page) -> str:
        limit = self.settings.max_body_bytes
        try:
            html = await page.evaluate(_SERIALIZE, limit)
        except PlaywrightError as exc:
            if "context was destroyed" not in str(exc):
                raise
            # A script navigated while we read: read the new document once it is parsed.
            await page.wait_for_load_state("domcontentloaded")
            html = await page.evaluate(_SERIALIZE, limit)
        if html is None or len(html.encode("utf-8", "replace")) > limit:
            raise FetchError(
                ErrorCode.TOO_LARGE, f"the rendered page is over the limit of {limit} bytes"
            )
        return str(html)

    async def _screenshot(self, page: Page, options: RenderOptions) -> Screenshot | None:
        """The screenshot format's PNG (see :meth:`_picture`)."""
        return await self._picture(
            page,
            (options.viewport_width, options.viewport_height),
            options.full_page,
            self.settings.max_body_bytes,
        )

    async def _picture(
        self, page: Page, viewport: tuple[int, int], full_page: bool, limit: int
    ) -> Screenshot | None:
        """A PNG of the page, at most ``render_screenshot_max_height`` tall and ``limit``
        bytes big (taken again shorter when over; none if it still is)."""
        (width, height), cut = viewport, False
        if full_page:
            page_height = int(await page.evaluate(_PAGE_HEIGHT))
            cap = self.settings.render_screenshot_max_height
            height, cut = max(1, min(page_height, cap)), page_height > cap
        for _ in range(2):
            png = await page.screenshot(
                type="png",
                full_page=full_page,
                clip={"x": 0, "y": 0, "width": width, "height": height},
                animations="disabled",
            )
            if len(png) <= limit:
                shot_width, shot_height = png_size(png)
                return Screenshot(png, shot_width, shot_height, cut)
            height = int(height * limit / len(png) * SCREENSHOT_SHRINK_MARGIN)
            cut = True
            if height < 1:
                break
        return None

    async def _capture(
        self, options: RenderOptions, page: Page, action: Action, room: int
    ) -> bytes | None:
        """A screenshot or pdf action's file, of ``room`` bytes at most (None when over)."""
        limit = min(room, self.settings.max_body_bytes)
        if action.type == "pdf":
            pdf = await page.pdf(
                format=action.paper or "Letter",
                landscape=action.landscape,
                scale=action.scale or 1.0,
                print_background=True,
                page_ranges=f"1-{MAX_PDF_PAGES}",
            )
            return pdf if len(pdf) <= limit else None
        viewport = (options.viewport_width, options.viewport_height)
        if action.viewport is None:
            shot = await self._picture(page, viewport, action.full_page, limit)
            return None if shot is None else shot.png
        # Taken at the viewport asked for; the page gets its own back for what follows.
        width, height = action.viewport
        await page.set_viewport_size({"width": width, "height": height})
        try:
            shot = await self._picture(page, action.viewport, action.full_page, limit)
        finally:
            await page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
        return None if shot is None else shot.png

    async def _dispose(self, process: BrowserProcess, context: BrowserContext | None) -> None:
        """Close the page's context; a browser that cannot do that within the grace is killed
        (a renderer stuck in a script is killed by the context's closing; this is the case
        where the browser itself no longer answers)."""
        if context is None or process.crashed:
            return
        try:
            async with asyncio.timeout(CLOSE_GRACE_SECONDS):
                await context.close()
        except (TimeoutError, PlaywrightError) as exc:
            if not process.crashed:
                log.warning("a browser context did not close (%s); killing chromium", exc)
                process.kill()


# --- helpers ---------------------------------------------------------------------------------


def _start_url(url: str, document: FetchedPage | None) -> str:
    """Where the browser navigates: the fetched page's final URL, or ``url``; http(s) only,
    so a job can never point the browser at a file:, data: or chrome: URL."""
    target = document.final_url if document is not None else url
    try:
        parsed = URL(target)
    except (ValueError, TypeError) as exc:
        raise FetchError(ErrorCode.INVALID_URL, f"the URL cannot be parsed: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.raw_host:
        raise FetchError(ErrorCode.INVALID_URL, "only http(s) URLs with a host are rendered")
    return str(parsed.with_fragment(None))


def _authority(url: str) -> str:
    parsed = URL(url)
    return f"{parsed.raw_host}:{parsed.port}"


def _is_start(request: Request, start: str) -> bool:
    return request.is_navigation_request() and request.url == start


def _replayed_headers(document: FetchedPage) -> dict[str, str]:
    return {k: v for k, v in document.headers.items() if k not in _FRAMING_HEADERS}


def _main_response_recorder(page: Page, state: _PageState) -> Callable[[Response], None]:
    def record(response: Response) -> None:
        request = response.request
        if request.is_navigation_request() and response.frame == page.main_frame:
            state.main_response = response

    return record


def _document_arrival_recorder(page: Page, state: _PageState) -> Callable[[Request], None]:
    def record(request: Request) -> None:
        if request.is_navigation_request() and request.frame == page.main_frame:
            state.document_arrived = True

    return record


def _close_popup(popup: Page) -> None:
    """Pages a page opens (window.open, target=_blank) are closed at once: each would be
    another renderer process, and nothing is extracted from them."""
    task = asyncio.ensure_future(popup.close())
    task.add_done_callback(lambda done: done.cancelled() or done.exception())


async def _soft_wait(state: _PageState, name: str, wait: object) -> None:
    """Await ``wait``; one that times out is noted, not raised: the page is taken as it is."""
    try:
        await wait  # type: ignore[misc]
    except PlaywrightTimeout:
        state.waits_timed_out.append(name)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


async def _deadline_error(
    page: Page | None, state: _PageState, traffic: PageTraffic, start: str
) -> FetchError:
    """Past the deadline: the page's own fault when its scripts keep the browser busy (its
    document arrived in full, or the page does not answer a trivial script), else the
    network's: a document that never came, or that is still dripping in."""
    if state.document_arrived or (state.main_response is not None and await _busy(page)):
        return FetchError(
            ErrorCode.RENDER_TIMEOUT,
            "the page's scripts kept the browser busy past the render deadline",
            transient=False,
        )
    refused = traffic.failures.get(_authority(start))
    if refused is not None:
        return refused
    if state.main_response is not None:
        return FetchError(ErrorCode.TIMEOUT, f"the document of {start} did not finish in time")
    return FetchError(ErrorCode.TIMEOUT, f"the document of {start} did not arrive in time")


async def _busy(page: Page | None) -> bool:
    """Whether the page's main thread is stuck: it cannot run ``1`` within a second (while a
    document is merely slow to arrive, the page still runs scripts between its chunks)."""
    if page is None:
        return False
    try:
        async with asyncio.timeout(BUSY_PROBE_SECONDS):
            await page.evaluate("1")
    except TimeoutError:
        return True
    except PlaywrightError:
        return False
    return False


def _browser_died(process: BrowserProcess) -> bool:
    """Whether the browser is gone, even if Playwright has not reported it yet: its main
    process has exited (a zombie until its parent reaps it) or is no more."""
    if process.crashed:
        return True
    info = processes.read_process(process.pid)
    return info is None or info.is_zombie


def _if_alive(process: BrowserProcess, error: FetchError) -> FetchError:
    """``error``, or ``render_crashed`` (transient) when the browser died under the page."""
    if error.code == ErrorCode.RENDER_CRASHED or not _browser_died(process):
        return error
    return FetchError(
        ErrorCode.RENDER_CRASHED, f"the browser died while rendering ({error.message})"
    )


def _browser_error(
    exc: PlaywrightError,
    process: BrowserProcess,
    state: _PageState,
    traffic: PageTraffic,
    start: str,
) -> FetchError:
    """A Playwright error outside the navigation: the browser, or the page's renderer, died."""
    if process.crashed or state.crashed or not process.browser.is_connected():
        what = "the page's renderer" if state.crashed and not process.crashed else "the browser"
        return FetchError(
            ErrorCode.RENDER_CRASHED, f"{what} crashed while rendering: {_first_line(exc)}"
        )
    if traffic.over_budget:
        return FetchError(ErrorCode.TOO_LARGE, "the page downloaded more than render_max_bytes")
    return FetchError(ErrorCode.RENDER_CRASHED, f"the browser failed: {_first_line(exc)}")


def _navigation_error(
    exc: PlaywrightError, state: _PageState, traffic: PageTraffic, start: str
) -> FetchError:
    """The typed error for a navigation chromium gave up on (net::ERR_* in the message)."""
    message = _first_line(exc)
    refused = traffic.failures.get(_authority(start))
    if "ERR_TUNNEL_CONNECTION_FAILED" in message and refused is None and traffic.failures:
        refused = list(traffic.failures.values())[-1]  # a redirect's target was refused
    if refused is not None:
        return refused
    if state.crashed or "Target crashed" in message or "closed" in message:
        return FetchError(ErrorCode.RENDER_CRASHED, f"the browser failed: {message}")
    if "ERR_CERT" in message or "ERR_SSL" in message:
        return FetchError(ErrorCode.TLS, f"TLS failed: {message}", transient=False)
    if "ERR_TOO_MANY_REDIRECTS" in message:
        return FetchError(ErrorCode.TOO_MANY_REDIRECTS, message)
    if traffic.over_budget:
        return FetchError(ErrorCode.TOO_LARGE, "the page downloaded more than render_max_bytes")
    if "Download is starting" in message or "ERR_ABORTED" in message:
        return FetchError(
            ErrorCode.UNSUPPORTED_CONTENT_TYPE,
            f"the URL is not a page the browser shows (a download or an empty answer): {message}",
        )
    if any(code in message for code in _BAD_RESPONSE_ERRORS):
        return FetchError(ErrorCode.BAD_RESPONSE, message, transient=False)
    if any(code in message for code in _CLOSED_ERRORS):
        return FetchError(ErrorCode.CONNECTION_CLOSED, message)
    return FetchError(ErrorCode.CONNECT, f"the page did not load: {message}")


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
