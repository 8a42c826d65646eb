"""Firecrawl's scrape and map, answered by TaskCrawler: a Firecrawl document from a job, so that
Firecrawl's SDKs and the tools built on them work with a change of base URL.

What TaskCrawler cannot do is refused with :class:`Unsupported`, naming the field, never
silently ignored; a field at Firecrawl's default value asks for nothing and is accepted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from taskcrawler.domain import JobStatus
from taskcrawler.domain.crawls import CrawlStatus, InvalidCrawlSpec
from taskcrawler.domain.errors import Conflict, NotFound
from taskcrawler.domain.jobs import Job, JobQuery
from taskcrawler.domain.keys import Caller
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
}
UNSUPPORTED_FORMATS = frozenset(
    {"screenshot", "screenshot@fullPage", "json", "extract", "summary", "changeTracking",
     "images", "branding", "attributes", "content"}
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
    """The page could not be fetched at all (no HTTP answer): a 500 with the reason."""


@dataclass(frozen=True, slots=True)
class ScrapeSpec:
    url: str
    formats: tuple[str, ...]  # Firecrawl's names
    max_age_ms: int | None
    timeout_ms: int


def formats_of(requested: list[Any]) -> tuple[str, ...]:
    """Firecrawl's ``formats`` (strings, or ``{"type": …}`` objects in v2), checked."""
    names: list[str] = []
    for index, item in enumerate(requested):
        name = item.get("type") if isinstance(item, Mapping) else item
        if not isinstance(name, str):
            raise Unsupported(f"formats[{index}]: not a format")
        if name in UNSUPPORTED_FORMATS:
            raise Unsupported(f"formats[{index}]: {name!r} is not supported by TaskCrawler yet")
        if name not in FORMATS:
            raise Unsupported(f"formats[{index}]: unknown format {name!r}")
        names.append(name)
    return tuple(dict.fromkeys(names)) or ("markdown",)


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
        self, caller: Caller, url: str, formats: tuple[str, ...], **options: Any
    ) -> UUID:
        """Start a crawl whose pages give ``formats`` (Firecrawl's names); ``options`` are
        :meth:`CrawlService.spec`'s. A bad option is refused naming Firecrawl's field."""
        try:
            spec = self.crawls.spec(url, formats=_our_formats(formats), **options)
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
        self, caller: Caller, crawl_id: UUID, *, cursor: str | None, limit: int = CRAWL_PAGE
    ) -> CrawlStatusPage:
        """A crawl as Firecrawl shows it: counts, and a page of its fetched pages' documents
        (:class:`~taskcrawler.domain.errors.CrawlNotFound` for another tenant's)."""
        crawl = await self.crawls.get(caller, crawl_id)
        query = JobQuery(statuses=_FETCHED, limit=min(limit, CRAWL_PAGE), cursor=cursor)
        jobs, next_cursor = await self.crawls.pages(caller, crawl_id, query)
        documents = [await self.document(caller, job, _their_formats(job)) for job in jobs]
        counts = crawl.counts
        return CrawlStatusPage(
            status=_CRAWL_STATUS[crawl.status],
            total=counts.discovered,
            completed=counts.completed + counts.failed,
            documents=documents,
            next_cursor=next_cursor,
        )

    async def start_batch(
        self, caller: Caller, urls: list[str], formats: tuple[str, ...], max_age_ms: int | None
    ) -> UUID:
        """Submit every URL (one job each, deduplicated as ever) and keep them as a batch."""
        ours = _our_formats(formats)
        max_age = None if max_age_ms is None else max_age_ms / 1000
        created = await self.jobs.submit_batch(caller, urls, JobOptions(ours, None, max_age))
        return await self.batches.create(caller.owner, [c.job.id for c in created])

    async def batch_status(self, caller: Caller, batch_id: UUID, *, skip: int) -> BatchStatus:
        jobs = await self.batches.jobs_of(caller.owner, batch_id)
        if jobs is None:
            raise NotFound("no batch scrape with this id")
        finished = [job for job in jobs if job.status.is_final]
        page = finished[skip : skip + BATCH_PAGE]
        documents = [await self.document(caller, job, _their_formats(job)) for job in page]
        more = skip + BATCH_PAGE < len(finished)
        return BatchStatus(
            status="completed" if len(finished) == len(jobs) else "scraping",
            total=len(jobs),
            completed=len(finished),
            documents=documents,
            next_skip=skip + BATCH_PAGE if more else None,
        )

    async def scrape(self, caller: Caller, spec: ScrapeSpec) -> dict[str, Any]:
        """Scrape ``spec.url`` (or reuse a result younger than ``maxAge``) and answer the
        Firecrawl document, once the job has finished."""
        ours = _our_formats(spec.formats)
        max_age = None if spec.max_age_ms is None else spec.max_age_ms / 1000
        created = await self.jobs.submit(caller, spec.url, JobOptions(ours, None, max_age))
        job = await self._finished(
            caller, created.job, min(spec.timeout_ms / 1000, self.max_wait_seconds)
        )
        if job.status is JobStatus.FAILED and job.http_status is None:
            raise ScrapeFailed(job.error_log or "the page could not be fetched")
        if job.status is not JobStatus.COMPLETED and job.http_status is None:
            raise ScrapeFailed(f"the job is {job.status.value}")
        missing = set(ours) - set(job.formats)
        if missing and job.status is JobStatus.COMPLETED:
            # The URL's stored job asked for less: scrape it again for these formats.
            raise Unsupported(
                f"formats: this URL was scraped without {', '.join(sorted(missing))}; "
                "pass maxAge: 0 to scrape it again"
            )
        return await self.document(caller, job, spec.formats)

    async def _finished(self, caller: Caller, job: Job, within: float) -> Job:
        deadline = time.monotonic() + within
        while not job.status.is_final:
            if time.monotonic() >= deadline:
                raise ScrapeTimedOut(f"the page was not scraped within {within:g} s")
            await asyncio.sleep(POLL_SECONDS)
            job = await self.jobs.get(caller, job.id)
        return job

    async def document(self, caller: Caller, job: Job, formats: tuple[str, ...]) -> dict[str, Any]:
        """The Firecrawl document of a finished job."""
        doc: dict[str, Any] = {}
        completed = job.status is JobStatus.COMPLETED
        for name in formats:
            if name == "links":
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
    theirs = {"markdown": ("markdown",), "html": ("html", "rawHtml"), "links": ("links",)}
    return tuple(name for ours in job.formats for name in theirs.get(ours, ()))


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
