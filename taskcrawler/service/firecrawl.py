"""Firecrawl's scrape and map, answered by TaskCrawler: a Firecrawl document from a job, so that
Firecrawl's SDKs and the tools built on them work with a change of base URL.

What TaskCrawler cannot do is refused with :class:`Unsupported`, naming the field, never
silently ignored; a field at Firecrawl's default value asks for nothing and is accepted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from taskcrawler.domain import JobStatus
from taskcrawler.domain.crawls import CrawlStatus, InvalidCrawlSpec
from taskcrawler.domain.errors import Conflict, ErrorCode, NotFound
from taskcrawler.domain.jobs import Job, JobQuery
from taskcrawler.domain.keys import Caller
from taskcrawler.domain.rendering import (
    DEFAULT_RENDER,
    SCREENSHOT,
    RenderRequest,
    check_viewport,
)
from taskcrawler.service.content import ContentService
from taskcrawler.service.crawls import CrawlService
from taskcrawler.service.jobs import JobOptions, JobService
from taskcrawler.service.mapping import MapService
from taskcrawler.storage.ports import BatchRepository

#: Firecrawl's formats and the TaskCrawler formats that make them.
FORMATS: Mapping[str, str] = {
    "markdown": "markdown",
    "html": "html",
    "rawHtml": "html",
    "links": "links",
    "screenshot": SCREENSHOT,
}
#: Firecrawl's screenshot formats: of the viewport, and (v1's name) of the whole page.
SCREENSHOTS = frozenset({"screenshot", "screenshot@fullPage"})
#: The options of v2's ``{"type": "screenshot", …}`` format that TaskCrawler takes.
_SCREENSHOT_FIELDS = frozenset({"type", "fullPage", "viewport", "quality"})
UNSUPPORTED_FORMATS = frozenset(
    {"json", "extract", "summary", "changeTracking", "images", "branding", "attributes",
     "content"}
)  # fmt: skip
#: Firecrawl's default wait for a scrape (its ``timeout``), in milliseconds.
DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 300_000
POLL_SECONDS = 0.1
MAX_LINKS = 5_000
#: Documents per page of a batch's status (Firecrawl pages them with ``next``).
BATCH_PAGE = 100
#: Documents per page of a crawl's status.
CRAWL_PAGE = 100
#: A crawl's errors are its newest failed pages, this many at most.
MAX_CRAWL_ERRORS = 1000
#: A crawl's pages that have a document: fetched, whatever the HTTP status (cancelled ones not).
_FETCHED = (JobStatus.COMPLETED, JobStatus.FAILED)
#: Our crawl fields, as Firecrawl names them in errors.
_CRAWL_FIELDS = {
    "include_paths": "includePaths",
    "exclude_paths": "excludePaths",
    "max_depth": "maxDiscoveryDepth",
    "allow_subdomains": "allowSubdomains",
    "allow_external": "allowExternalLinks",
    "formats": "scrapeOptions.formats",
}
_CRAWL_STATUS: Mapping[CrawlStatus, Literal["scraping", "completed", "cancelled"]] = {
    CrawlStatus.RUNNING: "scraping",
    CrawlStatus.COMPLETED: "completed",
    CrawlStatus.CANCELLED: "cancelled",
}


class Unsupported(ValueError):
    """A field or value TaskCrawler does not do: a 400 naming it."""


class ScrapeTimedOut(Exception):
    """The page was not scraped within the request's ``timeout``: a 408."""


class ScrapeFailed(Exception):
    """The page could not be fetched at all (no HTTP answer), or not rendered when a render
    was needed (``render_unavailable``): a 500 with the reason."""


#: The absolute URL of a job's screenshot (the API knows where it serves them).
ScreenshotURL = Callable[[UUID], str]


@dataclass(frozen=True, slots=True)
class ScreenshotSpec:
    """What a Firecrawl screenshot format asks for."""

    full_page: bool = False
    viewport: tuple[int, int] | None = None  # width, height


@dataclass(frozen=True, slots=True)
class PageOptions:
    """What Firecrawl's scrape options ask of each page: its formats (Firecrawl's names, a
    screenshot as ``screenshot``), the screenshot's shape, and ``waitFor``."""

    formats: tuple[str, ...] = ("markdown",)
    screenshot: ScreenshotSpec | None = None
    wait_for_ms: int | None = None

    def render(self) -> tuple[str, RenderRequest | None]:
        """The render mode and options of the pages' jobs. A screenshot or a wait needs the
        browser: ``always``. ``waitFor`` bounds the wait for network idle (Firecrawl waits that
        long after the load; a page is taken here once its network is quiet, or then)."""
        shot, wait_ms = self.screenshot, self.wait_for_ms
        if shot is None and not wait_ms:
            return "never", None
        width, height = (shot and shot.viewport) or (
            DEFAULT_RENDER.viewport_width,
            DEFAULT_RENDER.viewport_height,
        )
        request = RenderRequest(
            wait_seconds=wait_ms / 1000 if wait_ms else DEFAULT_RENDER.wait_seconds,
            viewport_width=width,
            viewport_height=height,
            full_page=shot.full_page if shot else DEFAULT_RENDER.full_page,
        )
        return "always", request

    def job_options(self, max_age_ms: int | None) -> JobOptions:
        render, render_options = self.render()
        return JobOptions(
            _our_formats(self.formats),
            None,
            None if max_age_ms is None else max_age_ms / 1000,
            render=render,
            render_options=render_options,
        )


@dataclass(frozen=True, slots=True)
class ScrapeSpec:
    url: str
    page: PageOptions
    max_age_ms: int | None
    timeout_ms: int


def page_options(requested: list[Any], wait_for_ms: int | None = None) -> PageOptions:
    """Firecrawl's ``formats`` (strings, or ``{"type": …}`` objects in v2) and ``waitFor``,
    checked."""
    names: list[str] = []
    screenshot: ScreenshotSpec | None = None
    for index, item in enumerate(requested):
        name = item.get("type") if isinstance(item, Mapping) else item
        if not isinstance(name, str):
            raise Unsupported(f"formats[{index}]: not a format")
        if name in SCREENSHOTS:
            if screenshot is not None:
                raise Unsupported(f"formats[{index}]: one screenshot per request")
            screenshot = _screenshot_of(index, name, item)
            name = "screenshot"
        elif name in UNSUPPORTED_FORMATS:
            raise Unsupported(f"formats[{index}]: {name!r} is not supported by TaskCrawler yet")
        elif name not in FORMATS:
            raise Unsupported(f"formats[{index}]: unknown format {name!r}")
        names.append(name)
    formats = tuple(dict.fromkeys(names)) or ("markdown",)
    return PageOptions(formats, screenshot, wait_for_ms or None)


def _screenshot_of(index: int, name: str, item: Any) -> ScreenshotSpec:
    """``screenshot`` (the viewport), ``screenshot@fullPage``, or v2's object with
    ``fullPage`` and ``viewport``; ``quality`` (a JPEG's) is refused: screenshots are PNG."""
    where = f"formats[{index}]"
    if not isinstance(item, Mapping):
        return ScreenshotSpec(full_page=name == "screenshot@fullPage")
    if unknown := sorted(set(item) - _SCREENSHOT_FIELDS):
        raise Unsupported(f"{where}.{unknown[0]}: not an option of the screenshot format")
    if item.get("quality") is not None:
        raise Unsupported(f"{where}.quality: TaskCrawler's screenshots are PNG (no quality)")
    full_page = item.get("fullPage")
    if full_page is not None and not isinstance(full_page, bool):
        raise Unsupported(f"{where}.fullPage: must be true or false")
    return ScreenshotSpec(
        full_page=bool(full_page) or name == "screenshot@fullPage",
        viewport=_viewport_of(f"{where}.viewport", item.get("viewport")),
    )


def _viewport_of(where: str, value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"width", "height"}:
        raise Unsupported(f"{where}: must be {{width, height}}")
    width, height = value["width"], value["height"]
    for side in (width, height):
        if isinstance(side, bool) or not isinstance(side, int):
            raise Unsupported(f"{where}: width and height must be whole numbers of pixels")
    try:
        check_viewport(width, height)
    except ValueError as error:
        raise Unsupported(f"{where}: {error}") from None
    return width, height


@dataclass(frozen=True, slots=True)
class BatchStatus:
    status: str  # scraping | completed
    total: int
    completed: int
    #: The documents of the finished jobs from ``skip`` on, at most :data:`BATCH_PAGE`.
    documents: list[dict[str, Any]]
    #: Where the next page starts, if there is one.
    next_skip: int | None


@dataclass(frozen=True, slots=True)
class CrawlError:
    job_id: UUID
    url: str
    code: str | None
    error: str
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class CrawlErrors:
    """A crawl's failed pages: the newest :data:`MAX_CRAWL_ERRORS`, those refused by robots.txt
    apart, as Firecrawl lists them."""

    errors: list[CrawlError]
    robots_blocked: list[str]


@dataclass(frozen=True, slots=True)
class CrawlStatusPage:
    status: Literal["scraping", "completed", "cancelled"]
    total: int
    completed: int
    #: The documents of fetched pages, newest first, at most ``limit``.
    documents: list[dict[str, Any]]
    #: The cursor of the next page, if there is one.
    next_cursor: str | None


class FirecrawlService:
    def __init__(
        self,
        jobs: JobService,
        content: ContentService,
        mapper: MapService,
        batches: BatchRepository,
        crawls: CrawlService,
        *,
        max_wait_seconds: float = MAX_TIMEOUT_MS / 1000,
    ) -> None:
        self.jobs = jobs
        # A scrape holds its request open until the page is done: the operator's bound on that,
        # whatever ``timeout`` the client asks for.
        self.max_wait_seconds = max_wait_seconds
        self.content = content
        self.mapper = mapper
        self.batches = batches
        self.crawls = crawls

    async def start_crawl(
        self, caller: Caller, url: str, page: PageOptions, **options: Any
    ) -> UUID:
        """Start a crawl whose pages give ``page``'s formats, rendered as it asks; ``options``
        are :meth:`CrawlService.spec`'s. A bad option is refused naming Firecrawl's field."""
        render, render_options = page.render()
        try:
            spec = self.crawls.spec(
                url,
                formats=_our_formats(page.formats),
                render=render,
                render_options=render_options,
                **options,
            )
        except InvalidCrawlSpec as exc:
            field = exc.field
            for ours, theirs in _CRAWL_FIELDS.items():
                field = field.replace(ours, theirs, 1) if field.startswith(ours) else field
            raise Unsupported(f"{field}: {exc.message}") from None
        crawl = await self.crawls.start(caller, spec)
        return crawl.id

    async def cancel_crawl(self, caller: Caller, crawl_id: UUID) -> None:
        """Cancel a running crawl; :class:`Conflict` (Firecrawl's 409) for a completed one."""
        crawl = await self.crawls.get(caller, crawl_id)
        if crawl.status is CrawlStatus.COMPLETED:
            raise Conflict("the crawl has already completed")
        await self.crawls.cancel(caller, crawl_id)

    async def crawl_status(
        self,
        caller: Caller,
        crawl_id: UUID,
        screenshot_url: ScreenshotURL,
        *,
        cursor: str | None,
        limit: int = CRAWL_PAGE,
    ) -> CrawlStatusPage:
        """A crawl as Firecrawl shows it: counts, and a page of its fetched pages' documents
        (:class:`~taskcrawler.domain.errors.CrawlNotFound` for another tenant's)."""
        crawl = await self.crawls.get(caller, crawl_id)
        query = JobQuery(statuses=_FETCHED, limit=min(limit, CRAWL_PAGE), cursor=cursor)
        jobs, next_cursor = await self.crawls.pages(caller, crawl_id, query)
        documents = [await self._document_of(caller, job, screenshot_url) for job in jobs]
        counts = crawl.counts
        return CrawlStatusPage(
            status=_CRAWL_STATUS[crawl.status],
            total=counts.discovered,
            completed=counts.completed + counts.failed,
            documents=documents,
            next_cursor=next_cursor,
        )

    async def crawl_errors(self, caller: Caller, crawl_id: UUID) -> CrawlErrors:
        """The crawl's failed pages, newest first (robots.txt refusals apart)."""
        query = JobQuery(statuses=(JobStatus.FAILED,), limit=MAX_CRAWL_ERRORS)
        jobs, _ = await self.crawls.pages(caller, crawl_id, query)
        errors = [
            CrawlError(job.id, job.url, job.error_code, job.error_log or "failed", job.finished_at)
            for job in jobs
            if job.error_code != ErrorCode.ROBOTS_DISALLOWED
        ]
        blocked = [job.url for job in jobs if job.error_code == ErrorCode.ROBOTS_DISALLOWED]
        return CrawlErrors(errors, blocked)

    async def start_batch(
        self, caller: Caller, urls: list[str], page: PageOptions, max_age_ms: int | None
    ) -> UUID:
        """Submit every URL (one job each, deduplicated as ever) and keep them as a batch."""
        created = await self.jobs.submit_batch(caller, urls, page.job_options(max_age_ms))
        return await self.batches.create(caller.owner, [c.job.id for c in created])

    async def batch_status(
        self, caller: Caller, batch_id: UUID, screenshot_url: ScreenshotURL, *, skip: int
    ) -> BatchStatus:
        jobs = await self.batches.jobs_of(caller.owner, batch_id)
        if jobs is None:
            raise NotFound("no batch scrape with this id")
        finished = [job for job in jobs if job.status.is_final]
        page = finished[skip : skip + BATCH_PAGE]
        documents = [await self._document_of(caller, job, screenshot_url) for job in page]
        more = skip + BATCH_PAGE < len(finished)
        return BatchStatus(
            status="completed" if len(finished) == len(jobs) else "scraping",
            total=len(jobs),
            completed=len(finished),
            documents=documents,
            next_skip=skip + BATCH_PAGE if more else None,
        )

    async def scrape(
        self, caller: Caller, spec: ScrapeSpec, screenshot_url: ScreenshotURL
    ) -> dict[str, Any]:
        """Scrape ``spec.url`` (or reuse a result younger than ``maxAge``) and answer the
        Firecrawl document, once the job has finished. A URL scraped before without some of
        the formats asked gains them (from its stored page when there is one): the answer
        waits for that run as for a first one."""
        options = spec.page.job_options(spec.max_age_ms)
        created = await self.jobs.submit(caller, spec.url, options)
        job = await self._finished(
            caller, created.job, min(spec.timeout_ms / 1000, self.max_wait_seconds)
        )
        if job.status is JobStatus.FAILED and (
            job.http_status is None or job.error_code == ErrorCode.RENDER_UNAVAILABLE
        ):
            raise ScrapeFailed(job.error_log or "the page could not be fetched")
        if job.status is not JobStatus.COMPLETED and job.http_status is None:
            raise ScrapeFailed(f"the job is {job.status.value}")
        return await self.document(caller, job, spec.page.formats, screenshot_url)

    async def _finished(self, caller: Caller, job: Job, within: float) -> Job:
        deadline = time.monotonic() + within
        while not job.status.is_final:
            if time.monotonic() >= deadline:
                raise ScrapeTimedOut(f"the page was not scraped within {within:g} s")
            await asyncio.sleep(POLL_SECONDS)
            job = await self.jobs.get(caller, job.id)
        return job

    async def _document_of(
        self, caller: Caller, job: Job, screenshot_url: ScreenshotURL
    ) -> dict[str, Any]:
        return await self.document(caller, job, _their_formats(job), screenshot_url)

    async def document(
        self, caller: Caller, job: Job, formats: tuple[str, ...], screenshot_url: ScreenshotURL
    ) -> dict[str, Any]:
        """The Firecrawl document of a finished job."""
        doc: dict[str, Any] = {}
        completed = job.status is JobStatus.COMPLETED
        for name in formats:
            if name == "screenshot":
                doc |= _screenshot(job, screenshot_url) if completed else {}
            elif name == "links":
                links = (
                    await self.content.links_of(caller, job.id, after=0, limit=MAX_LINKS)
                    if completed
                    else []
                )
                doc["links"] = list(dict.fromkeys(link.url for link in links))
            else:
                doc[name] = (
                    await self.content.text(caller, job.id, FORMATS[name]) if completed else ""
                )
        doc["metadata"] = _metadata(job)
        return doc

    async def map(self, caller: Caller, url: str, **options: Any) -> list[str]:
        request = self.mapper.request(url, **options)
        result = await self.mapper.map(request)
        return result.links


def crawl_formats(formats: tuple[str, ...]) -> tuple[str, ...]:
    """TaskCrawler's formats for a crawl whose pages give these Firecrawl formats."""
    return _our_formats(formats)


def _our_formats(formats: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(["metadata", *(FORMATS[f] for f in formats)]))


def _their_formats(job: Job) -> tuple[str, ...]:
    """The Firecrawl formats a job's own formats give."""
    theirs = {
        "markdown": ("markdown",),
        "html": ("html", "rawHtml"),
        "links": ("links",),
        SCREENSHOT: ("screenshot",),
    }
    return tuple(name for ours in job.formats for name in theirs.get(ours, ()))


def _screenshot(job: Job, screenshot_url: ScreenshotURL) -> dict[str, Any]:
    """``screenshot``: where the picture is served; or, when the render kept none, a
    ``warning`` saying why (Firecrawl's field for what a document lacks)."""
    render = (job.result or {}).get("render") or {}
    if render.get("rendered") and "screenshot" not in render:
        return {"screenshot": screenshot_url(job.id)}
    why = render.get("screenshot") or render.get("reason") or "the page was not rendered"
    return {"warning": f"no screenshot: {why}"}


def _metadata(job: Job) -> dict[str, Any]:
    found = dict((job.result or {}).get("metadata") or {})
    metadata: dict[str, Any] = {
        key: found[key] for key in ("title", "description", "language") if found.get(key)
    }
    if found.get("favicon"):
        metadata["favicon"] = found["favicon"]
    metadata |= {
        "sourceURL": job.url,
        "url": job.final_url or job.url,
        "statusCode": job.http_status,
        "contentType": job.content_type,
        "scrapeId": str(job.id),
    }
    if job.status is JobStatus.FAILED:
        metadata["error"] = job.error_log
    return metadata
