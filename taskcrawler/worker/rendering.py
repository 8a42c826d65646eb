"""The worker's render step: between the fetch and the extraction, a job's page may be rendered
in the browser, and the rendered DOM then goes through the same extraction as any page.

* ``never``: nothing happens here.
* ``always`` (or a ``screenshot`` asked for): the page is rendered.
* ``auto``: rendered only when :func:`~taskcrawler.extract.appshell.shell_verdict` takes the
  fetched HTML for an app shell; the verdict is measured in the parser's lanes, so a big page
  is judged off the event loop.

The browser is handed the fetched document (robots.txt, politeness and limits already applied)
and asks the network only for what the page itself loads, through the address guard. Without a
browser, ``always`` fails as ``render_unavailable`` and ``auto`` extracts the fetched HTML and
says so in the result (``result.render.fallback``). A render's own failures are the job's:
``render_timeout`` (permanent), ``render_crashed`` (transient: retried, on a new browser).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from taskcrawler.browser.availability import Availability
from taskcrawler.browser.locale import timezone_for
from taskcrawler.browser.options import RenderOptions, RenderResult
from taskcrawler.domain import ClaimedJob, ErrorCode, FetchError, Outcome
from taskcrawler.domain.actions import with_capture_paths
from taskcrawler.domain.pages import Capture, FetchedPage, PageContent, Screenshot
from taskcrawler.domain.rendering import SCREENSHOT, RenderRequest, browser_need
from taskcrawler.domain.scrape_options import DEFAULT_OPTIONS, ScrapeOptions
from taskcrawler.extract.appshell import ShellVerdict, shell_verdict
from taskcrawler.worker.parsing import PageParser, ParseTimeout

log = logging.getLogger(__name__)

#: The availability of a worker built without a render step.
NO_BROWSER = Availability(False, "this worker was built without a browser")
#: Content types a browser renders as a page; anything else is extracted as it was fetched.
RENDERABLE_TYPES = frozenset({"text/html", "application/xhtml+xml"})


class Renderer(Protocol):
    """What the worker asks of a renderer (:class:`taskcrawler.browser.BrowserRenderer`)."""

    async def render(
        self, url: str, options: RenderOptions = ..., *, document: FetchedPage | None = None
    ) -> RenderResult: ...

    async def close(self) -> None: ...

    def metrics(self) -> dict[str, float]:
        """Its counters and the browser's processes and memory, for the worker's metrics."""
        ...


@dataclass(frozen=True, slots=True)
class Rendered:
    """The page to extract (the rendered DOM, or the fetched page when not rendered) and what
    the job's result says of the render."""

    page: FetchedPage
    info: dict[str, Any]
    screenshot: Screenshot | None = None
    #: What the page actions gave (Firecrawl's ``actions`` object), when any were asked.
    actions: dict[str, Any] | None = None
    #: The files of its screenshot and pdf actions.
    captures: tuple[Capture, ...] = ()

    def annotate(self, outcome: Outcome) -> Outcome:
        """The extraction's outcome with the render noted in its result and the screenshot
        added to its content; a failed outcome is left as it is."""
        if not outcome.succeeded:
            return outcome
        result = {**(outcome.result or {}), "render": self.info}
        if self.actions is not None:
            result["actions"] = self.actions
        content = outcome.content
        if self.screenshot is not None:
            content = dataclasses.replace(content or PageContent(), screenshot=self.screenshot)
        if self.captures or content is not None:
            # A render replaces what an earlier one's actions made, with nothing if need be.
            content = dataclasses.replace(content or PageContent(), captures=self.captures)
        return dataclasses.replace(outcome, result=result, content=content)


def browser_options(
    request: RenderRequest,
    *,
    screenshot: bool,
    options: ScrapeOptions = DEFAULT_OPTIONS,
    url: str = "",
) -> RenderOptions:
    """How the browser renders a job's page: as its render options ask, in its languages and
    its country's time zone, its headers for its own host (``url``'s) only."""
    return RenderOptions(
        wait_until=request.wait_until,
        wait_for_selector=request.wait_for,
        wait_seconds=request.wait_seconds,
        block_resources=frozenset(request.block),
        viewport_width=request.viewport(options.mobile)[0],
        viewport_height=request.viewport(options.mobile)[1],
        mobile=options.mobile,
        actions=options.actions,
        screenshot=screenshot,
        full_page=request.full_page,
        locale=options.languages[0] if options.languages else None,
        timezone_id=timezone_for(options.country),
        ignore_https_errors=options.skip_tls_verification,
        page_headers=options.headers,
        page_url=url,
        block_ads=options.block_ads,
    )


class RenderStep:
    """Renders the pages of the jobs that ask for it. ``renderer`` is ``None`` when this worker
    has no browser (``availability`` says why)."""

    def __init__(
        self, renderer: Renderer | None, availability: Availability, parser: PageParser
    ) -> None:
        self.renderer = renderer if availability.available else None
        self.availability = availability
        self.parser = parser

    @property
    def available(self) -> bool:
        return self.renderer is not None

    async def prepare(self, job: ClaimedJob, page: FetchedPage) -> Rendered | None:
        """The page to extract for ``job``, rendered if it must be; ``None`` when the job does
        not render. Raises :class:`FetchError` when the render failed."""
        needs = browser_need(job.formats, job.options)
        # A URL's job keeps the mode it was first asked with; options a later submission gave
        # it (mobile, actions) still need the browser.
        mode = "always" if job.render == "never" and needs else job.render
        if mode == "never":
            return None
        info: dict[str, Any] = {"mode": mode, "rendered": False}
        if (page.content_type or "text/html") not in RENDERABLE_TYPES:
            info["reason"] = f"not an HTML page ({page.content_type})"
            return Rendered(page, info)
        wants_picture = SCREENSHOT in job.formats
        if mode == "auto" and needs is None:
            verdict = await self._verdict(page)
            info |= {"reason": verdict.reason, "words": verdict.words, "scripts": verdict.scripts}
            if not verdict.render:
                return Rendered(page, info)
        else:
            info["reason"] = f"{needs} was asked for" if needs else "always"
        if self.renderer is None:
            reason = f"rendering is not available in this worker: {self.availability.reason}"
            if mode == "always" or needs:
                raise FetchError(ErrorCode.RENDER_UNAVAILABLE, reason, transient=False)
            info["fallback"] = reason + "; the fetched HTML was extracted"
            return Rendered(page, info)
        options = browser_options(
            job.render_options, screenshot=wants_picture, options=job.options, url=job.url
        )
        result = await self.renderer.render(job.url, options, document=page)
        info |= {
            "rendered": True,
            "elapsed_seconds": round(result.elapsed_seconds, 3),
            "requests": result.requests,
            "blocked_requests": result.blocked_requests,
            "blocked": list(result.blocked),
            "skipped_requests": result.skipped_requests,
            "over_budget": result.over_budget,
            "waits_timed_out": list(result.waits_timed_out),
        }
        if job.options.block_ads:
            info["ads_blocked"] = result.ads_blocked
        if result.ads_note:
            info["ads"] = result.ads_note
        if wants_picture and result.screenshot is None:
            info["screenshot"] = "over the size limit: none kept"
        acted = None if result.actions is None else with_capture_paths(result.actions, job.id)
        return Rendered(
            _rendered_page(page, result), info, result.screenshot, acted, result.captures
        )

    async def _verdict(self, page: FetchedPage) -> ShellVerdict:
        try:
            return await self.parser.run(partial(shell_verdict, page.body, page.charset), page.body)
        except ParseTimeout as exc:
            raise FetchError(ErrorCode.PARSE_TIMEOUT, str(exc), transient=False) from None

    def stats(self) -> dict[str, float]:
        return {} if self.renderer is None else self.renderer.metrics()

    async def close(self) -> None:
        if self.renderer is not None:
            await self.renderer.close()


def _rendered_page(fetched: FetchedPage, result: RenderResult) -> FetchedPage:
    """The rendered DOM as a page: what extraction and the archive take."""
    return FetchedPage(
        url=fetched.url,
        final_url=result.final_url,
        status=result.status,
        headers=result.headers,
        content_type="text/html",
        charset="utf-8",
        body=result.html.encode("utf-8", "replace"),
    )
