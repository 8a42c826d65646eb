"""Firecrawl's use cases, answered by TaskCrawler's services: scrape, batch scrape, crawl, map,
search and extract, each answering with Firecrawl documents (:mod:`.documents`) of the jobs it
starts from Firecrawl's options (:mod:`.options`).

A refusal is :class:`~taskcrawler.firecrawl.options.Unsupported` (a 400 naming the field),
:class:`ScrapeTimedOut` (408) or :class:`ScrapeFailed` (500): :mod:`.errors` answers them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal
from uuid import UUID, uuid4

import orjson

from taskcrawler.domain import JobStatus
from taskcrawler.domain.change_tracking import (
    TrackingRequest,
    change_tracking,
)
from taskcrawler.domain.crawls import Crawl, CrawlSpec, CrawlStatus, InvalidCrawlSpec
from taskcrawler.domain.errors import Conflict, ErrorCode, NotFound
from taskcrawler.domain.extract_scope import (
    EXTRACT_CRAWL_PAGES,
    crawl_scope,
    crawl_start,
    is_wildcard,
)
from taskcrawler.domain.jobs import Job, JobQuery, QueueCounts
from taskcrawler.domain.keys import Caller
from taskcrawler.domain.runs import RunContent
from taskcrawler.domain.structured import (
    AnswerRejected,
    JsonRequest,
    merged,
    validated,
)
from taskcrawler.domain.web_search import WebQuery, WebResult
from taskcrawler.firecrawl.documents import (
    ScreenshotURL,
    firecrawl_document,
    stored_texts,
    their_formats,
)
from taskcrawler.firecrawl.hooks import (
    FirecrawlHook,
    FirecrawlHookRepository,
    HookKind,
)
from taskcrawler.firecrawl.options import (
    MAX_TIMEOUT_MS,
    PageOptions,
    ScrapeSpec,
    Unsupported,
    WebhookSpec,
    crawl_formats,
)
from taskcrawler.service.content import ContentService
from taskcrawler.service.crawls import CrawlService
from taskcrawler.service.jobs import JobService
from taskcrawler.service.mapping import MapService
from taskcrawler.service.web_search import WebSearchService
from taskcrawler.storage.ports import (
    BatchRepository,
    TrackingRepository,
)

#: Firecrawl's formats and the TaskCrawler formats that make them.

POLL_SECONDS = 0.1
#: Documents per page of a batch's status (Firecrawl pages them with ``next``).
BATCH_PAGE = 100
#: Documents per page of a crawl's status.
CRAWL_PAGE = 100
#: A page of a batch's or a crawl's status ends once its documents pass this many bytes of
#: JSON, as Firecrawl's does (``next`` goes on; a page always holds one document): a hundred
#: pages of 10 MB, each as rawHtml, html and Markdown, would otherwise be one answer of GBs.
STATUS_PAGE_MAX_BYTES = 10 * 1024 * 1024
#: Jobs whose texts a status page reads per query: each may hold several texts of 10 MB.
TEXTS_GROUP = 16
#: A scrape whose page failed for one of these is a 400: the document (a PDF, a page) is past
#: the limits of what one request may make TaskCrawler read.
PAST_LIMITS = frozenset(
    {
        ErrorCode.TOO_LARGE,
        ErrorCode.PARSE_TIMEOUT,
        ErrorCode.PARSE_CRASHED,
        ErrorCode.UNREADABLE_DOCUMENT,
    }
)
#: A scrape whose page was fetched but whose json or summary could not be made is a 500 with
#: the reason (Firecrawl's answer when its model fails).
MODEL_FAILURES = frozenset(
    {
        ErrorCode.LLM_NOT_CONFIGURED,
        ErrorCode.LLM_UNAVAILABLE,
        ErrorCode.LLM_INVALID_ANSWER,
        ErrorCode.JSON_SCHEMA_MISMATCH,
    }
)
#: A crawl's errors are its newest failed pages, this many at most.
MAX_CRAWL_ERRORS = 1000
#: Running crawls listed at most (Firecrawl lists them all; a tenant rarely runs more).
MAX_ACTIVE_CRAWLS = 1000
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


class ScrapeTimedOut(Exception):
    """The page was not scraped within the request's ``timeout``: a 408."""


class ClientGone(Exception):
    """The client left while its scrape was waiting for a page: nobody reads the answer."""


#: Whether the request's client has gone (:meth:`starlette.requests.Request.is_disconnected`).
Gone = Callable[[], Awaitable[bool]]


async def _never_gone() -> bool:
    return False


class ScrapeFailed(Exception):
    """The page could not be fetched at all (no HTTP answer), or not rendered when a render
    was needed (``render_unavailable``): a 500 with the reason."""


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


@dataclass(frozen=True, slots=True)
class SearchAnswer:
    """A search's results, each with its document when it was scraped."""

    results: list[tuple[WebResult, dict[str, Any] | None]]
    warning: str | None = None


@dataclass(frozen=True, slots=True)
class ExtractStatus:
    status: Literal["processing", "completed", "failed"]
    data: Any = None
    error: str | None = None
    warning: str | None = None
    #: The pages the answer was read from.
    sources: list[str] | None = None


class FirecrawlService:
    def __init__(
        self,
        jobs: JobService,
        content: ContentService,
        mapper: MapService,
        batches: BatchRepository,
        crawls: CrawlService,
        hooks: FirecrawlHookRepository,
        tracking: TrackingRepository,
        *,
        web: WebSearchService | None = None,
        max_wait_seconds: float = MAX_TIMEOUT_MS / 1000,
        worker_concurrency: int = 100,
    ) -> None:
        self.jobs = jobs
        self.web = web or WebSearchService(None, jobs)
        self.worker_concurrency = worker_concurrency
        # A scrape holds its request open until the page is done: the operator's bound on that,
        # whatever ``timeout`` the client asks for.
        self.max_wait_seconds = max_wait_seconds
        self.content = content
        self.mapper = mapper
        self.batches = batches
        self.crawls = crawls
        self.hooks = hooks
        self.tracking = tracking

    async def start_crawl(
        self,
        caller: Caller,
        url: str,
        page: PageOptions,
        *,
        webhook: WebhookSpec | None = None,
        api_url: str = "",
        **options: Any,
    ) -> UUID:
        """Start a crawl whose pages give ``page``'s formats, rendered as it asks; ``options``
        are :meth:`CrawlService.spec`'s. A bad option is refused naming Firecrawl's field.
        ``webhook``: told of the crawl's events (``api_url``: where this API is reached)."""
        crawl = await self.crawls.start(caller, self._crawl_spec(url, page, **options))
        if webhook is not None:
            await self._hook(caller, "crawl", crawl.id, webhook, api_url)
        return crawl.id

    def _crawl_spec(self, url: str, page: PageOptions, **options: Any) -> CrawlSpec:
        """The spec of a crawl whose pages give ``page``'s formats; a bad option is refused
        naming Firecrawl's field."""
        render, render_options = page.render()
        try:
            return self.crawls.spec(
                url,
                formats=crawl_formats(page.formats),
                render=render,
                render_options=render_options,
                options=page.options,
                **options,
            )
        except InvalidCrawlSpec as exc:
            field = exc.field
            for ours, theirs in _CRAWL_FIELDS.items():
                field = field.replace(ours, theirs, 1) if field.startswith(ours) else field
            raise Unsupported(f"{field}: {exc.message}") from None

    async def _hook(
        self, caller: Caller, kind: HookKind, target: UUID, webhook: WebhookSpec, api_url: str
    ) -> None:
        hook = FirecrawlHook(
            id=uuid4(),
            owner=caller.owner,
            kind=kind,
            target_id=target,
            url=webhook.url,
            events=webhook.events,
            headers=webhook.headers,
            metadata=webhook.metadata,
            api_url=api_url,
        )
        await self.hooks.create(hook)

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
        # In the order pages finished, not the order they were found: a page finishing while
        # a client follows ``next`` then comes after what it has read, never before it.
        pages, next_cursor = await self.crawls.finished_pages(
            caller, crawl_id, statuses=_FETCHED, limit=min(limit, CRAWL_PAGE), cursor=cursor
        )
        documents = await self._documents_of(caller, [job for job, _ in pages], screenshot_url)
        if len(documents) < len(pages):
            next_cursor = pages[len(documents) - 1][1]
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
        return _errors_of(jobs)

    async def batch_errors(self, caller: Caller, batch_id: UUID) -> CrawlErrors:
        """The batch's failed pages, in the order of its URLs (robots.txt refusals apart)."""
        jobs = await self.batches.jobs_of(caller.owner, batch_id)
        if jobs is None:
            raise NotFound("no batch scrape with this id")
        failed = [job for job in jobs if job.status is JobStatus.FAILED]
        return _errors_of(failed[:MAX_CRAWL_ERRORS])

    async def active_crawls(self, caller: Caller) -> list[Crawl]:
        """The caller's running crawls, newest first (at most :data:`MAX_ACTIVE_CRAWLS`)."""
        crawls, _ = await self.crawls.list_crawls(caller, limit=MAX_ACTIVE_CRAWLS, running=True)
        return crawls

    async def queue(self, caller: Caller) -> QueueCounts:
        return await self.jobs.jobs.queue_counts(caller.owner)

    def max_concurrency(self, caller: Caller) -> int:
        """How many of the caller's jobs may be under way at once: its own pending-jobs
        limit, else the deployment's, else what the workers fetch at once."""
        key_limit = caller.key.max_pending_jobs if caller.key else None
        return key_limit or self.jobs.policy.max_pending_jobs or self.worker_concurrency

    async def start_batch(
        self,
        caller: Caller,
        urls: list[str],
        page: PageOptions,
        max_age_ms: int | None,
        *,
        webhook: WebhookSpec | None = None,
        api_url: str = "",
    ) -> UUID:
        """Submit every URL (one job each, deduplicated as ever) and keep them as a batch;
        ``webhook`` is told of its events."""
        created = await self.jobs.submit_batch(caller, urls, page.job_options(max_age_ms))
        batch_id = await self.batches.create(caller.owner, [c.job.id for c in created])
        if webhook is not None:
            await self._hook(caller, "batch_scrape", batch_id, webhook, api_url)
        return batch_id

    async def batch_status(
        self, caller: Caller, batch_id: UUID, screenshot_url: ScreenshotURL, *, skip: int
    ) -> BatchStatus:
        jobs = await self.batches.jobs_of(caller.owner, batch_id)
        if jobs is None:
            raise NotFound("no batch scrape with this id")
        finished = [job for job in jobs if job.status.is_final]
        page = finished[skip : skip + BATCH_PAGE]
        documents = await self._documents_of(caller, page, screenshot_url)
        more = skip + len(documents) < len(finished)
        return BatchStatus(
            status="completed" if len(finished) == len(jobs) else "scraping",
            total=len(jobs),
            completed=len(finished),
            documents=documents,
            next_skip=skip + len(documents) if more else None,
        )

    async def scrape(
        self,
        caller: Caller,
        spec: ScrapeSpec,
        screenshot_url: ScreenshotURL,
        gone: Gone = _never_gone,
    ) -> dict[str, Any]:
        """Scrape ``spec.url`` (or reuse a result younger than ``maxAge``) and answer the
        Firecrawl document, once the job has finished. A URL scraped before without some of
        the formats asked gains them (from its stored page when there is one): the answer
        waits for that run as for a first one."""
        options = spec.page.job_options(spec.max_age_ms)
        created = await self.jobs.submit(caller, spec.url, options)
        job = await self._finished(
            caller, created.job, min(spec.timeout_ms / 1000, self.max_wait_seconds), gone
        )
        if job.status is JobStatus.FAILED and job.error_code in PAST_LIMITS:
            # The document is past what a request may make TaskCrawler read: the caller's to
            # change (another URL, fewer pages), as any bad input is.
            raise Unsupported(f"url: {job.error_log}")
        if job.status is JobStatus.FAILED and (
            job.http_status is None
            or job.error_code == ErrorCode.RENDER_UNAVAILABLE
            or job.error_code in MODEL_FAILURES
        ):
            raise ScrapeFailed(job.error_log or "the page could not be fetched")
        if job.status is not JobStatus.COMPLETED and job.http_status is None:
            raise ScrapeFailed(f"the job is {job.status.value}")
        document = await self.document(caller, job, spec.page.formats, screenshot_url)
        if spec.page.tracking is not None:
            document["changeTracking"] = await self._tracked(job, spec.page.tracking)
        return document

    async def _tracked(self, job: Job, request: TrackingRequest) -> dict[str, Any]:
        """The job's run against its previous one that was kept, then this run kept for the
        next (the run history monitors keep). The diff is computed off the event loop."""
        markdown = (await self.content.content.text(job.id, "markdown")) or ""
        previous = await self.tracking.previous(job.id, job.run_count)
        tracked: dict[str, Any] = await asyncio.to_thread(
            change_tracking, request, previous, markdown, job.http_status
        )
        fetched_at = job.fetched_at or job.finished_at
        if fetched_at is not None:
            await self.tracking.keep(
                job.id,
                job.run_count,
                fetched_at=fetched_at,
                http_status=job.http_status,
                status=job.status.value,
                content=RunContent(markdown, ""),
            )
        return tracked

    async def _finished(self, caller: Caller, job: Job, within: float, gone: Gone) -> Job:
        deadline = time.monotonic() + within
        while not job.status.is_final:
            if time.monotonic() >= deadline:
                raise ScrapeTimedOut(f"the page was not scraped within {within:g} s")
            # A client gone would otherwise hold this loop's reads until the deadline.
            if await gone():
                raise ClientGone
            await asyncio.sleep(POLL_SECONDS)
            job = await self.jobs.get(caller, job.id)
        return job

    async def _documents_of(
        self, caller: Caller, jobs: list[Job], screenshot_url: ScreenshotURL
    ) -> list[dict[str, Any]]:
        """The documents of ``jobs`` in order, until they pass :data:`STATUS_PAGE_MAX_BYTES`
        (the first always): a status page's, the rest left for its ``next``. Their texts are
        read :data:`TEXTS_GROUP` jobs to a query: a page of a hundred in a few reads, without
        holding a hundred pages' texts when a few fill the bound."""
        documents: list[dict[str, Any]] = []
        size = 0
        for start in range(0, len(jobs), TEXTS_GROUP):
            group = jobs[start : start + TEXTS_GROUP]
            formats = {job.id: their_formats(job) for job in group}
            wanted = {fmt for job in group for fmt in stored_texts(formats[job.id])}
            texts = await self.content.content.texts_of(
                [job.id for job in group if job.status is JobStatus.COMPLETED], sorted(wanted)
            )
            for job in group:
                document = await firecrawl_document(
                    self.content.content,
                    job,
                    formats[job.id],
                    screenshot_url,
                    texts=texts.get(job.id, {}),
                )
                size += len(orjson.dumps(document))
                if documents and size > STATUS_PAGE_MAX_BYTES:
                    return documents
                documents.append(document)
        return documents

    async def document(
        self, caller: Caller, job: Job, formats: tuple[str, ...], screenshot_url: ScreenshotURL
    ) -> dict[str, Any]:
        """The Firecrawl document of one of the caller's finished jobs (read for the caller)."""
        return await firecrawl_document(self.content.content, job, formats, screenshot_url)

    # --- search ---------------------------------------------------------------------------

    async def search_sources(
        self,
        caller: Caller,
        queries: Mapping[str, WebQuery],
        page: PageOptions | None,
        *,
        timeout_ms: int,
        screenshot_url: ScreenshotURL,
        gone: Gone = _never_gone,
    ) -> dict[str, SearchAnswer]:
        """:meth:`search` of each source's query (``web``, ``news``, ``images``: images are not
        scraped), all at once: the sources share the request's ``timeout_ms`` rather than take
        it in turn. One that fails ends the others."""
        tasks = [
            asyncio.ensure_future(
                self.search(
                    caller,
                    query,
                    page if source != "images" else None,
                    timeout_ms=timeout_ms,
                    screenshot_url=screenshot_url,
                    gone=gone,
                )
            )
            for source, query in queries.items()
        ]
        try:
            answers = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            raise
        return dict(zip(queries, answers, strict=True))

    async def search(
        self,
        caller: Caller,
        query: WebQuery,
        page: PageOptions | None,
        *,
        timeout_ms: int,
        screenshot_url: ScreenshotURL,
        gone: Gone = _never_gone,
    ) -> SearchAnswer:
        """The query's results from the search engine; with ``page`` (Firecrawl's
        ``scrapeOptions``), each result is scraped as a job of the caller and carries its
        document, once done within ``timeout_ms`` (those not done by then carry none, and the
        answer's ``warning`` says so)."""
        if page is not None and self.web.configured:
            self.jobs.check_options(page.job_options(None))
        results = await self.web.search(query)
        if page is None or not results:
            return SearchAnswer([(result, None) for result in results])
        created = await self.jobs.submit_batch(
            caller, [result.url for result in results], page.job_options(None)
        )
        deadline = time.monotonic() + min(timeout_ms / 1000, self.max_wait_seconds)
        found: list[tuple[WebResult, dict[str, Any] | None]] = []
        late = 0
        for result, made in zip(results, created, strict=True):
            job = await self._finished_by(caller, made.job, deadline, gone)
            if job is None:
                late += 1
                found.append((result, None))
                continue
            document = await self.document(caller, job, page.formats, screenshot_url)
            found.append((result, document))
        warning = f"{late} results were not scraped within the timeout" if late else None
        return SearchAnswer(found, warning)

    async def _finished_by(
        self, caller: Caller, job: Job, deadline: float, gone: Gone
    ) -> Job | None:
        """``job`` once final, or None if it is not by ``deadline``."""
        while not job.status.is_final:
            if time.monotonic() >= deadline:
                return None
            if await gone():
                raise ClientGone
            await asyncio.sleep(POLL_SECONDS)
            job = await self.jobs.get(caller, job.id)
        return job

    # --- extract --------------------------------------------------------------------------

    async def start_extract(
        self, caller: Caller, urls: list[str], request: JsonRequest, page: PageOptions
    ) -> UUID:
        """Every URL a job whose ``json`` format is ``request``, and every URL ending in
        ``/*`` a crawl of the pages under it (at most :data:`EXTRACT_CRAWL_PAGES`, or the
        deployment's crawl limit when lower), kept as a batch: the extract's id. A crawl is
        kept as its start page, whose job leads to the crawl's other pages. The answer is
        made from the pages' answers when all are done (:meth:`extract_status`)."""
        options = replace(page.options, json_schema=request.schema_json, json_prompt=request.prompt)
        json_page = replace(page, formats=("json",), options=options)
        limit = min(EXTRACT_CRAWL_PAGES, self.crawls.policy.max_limit)
        specs = {
            url: self._crawl_spec(
                crawl_start(url), json_page, limit=limit, include_paths=crawl_scope(url)
            )
            for url in urls
            if is_wildcard(url)
        }
        pages = [url for url in urls if url not in specs]
        created = (
            await self.jobs.submit_batch(caller, pages, json_page.job_options(None))
            if pages
            else []
        )
        ids = {url: made.job.id for url, made in zip(pages, created, strict=True)}
        for url, spec in specs.items():
            ids[url] = (await self.crawls.start_with_page(caller, spec))[1]
        # In the order of ``urls``: the answers are merged in it.
        return await self.batches.create(caller.owner, [ids[url] for url in urls])

    async def extract_status(self, caller: Caller, extract_id: UUID) -> ExtractStatus:
        """An extract as Firecrawl shows it: ``processing`` until every crawl has ended and
        every page is done, then ``completed`` with the pages' answers merged into one (and
        validated against the schema), or ``failed`` when no page gave one."""
        listed = await self.batches.jobs_of(caller.owner, extract_id)
        if listed is None:
            raise NotFound("no extract with this id")
        jobs = await self._extract_pages(caller, listed)
        if jobs is None or not all(job.status.is_final for job in jobs):
            return ExtractStatus("processing")
        answers = [
            (job.result or {}).get("json") for job in jobs if job.status is JobStatus.COMPLETED
        ]
        failed = [job for job in jobs if job.status is not JobStatus.COMPLETED]
        sources = [job.url for job in jobs if job.status is JobStatus.COMPLETED]
        if not answers:
            reason = failed[0].error_log if failed and failed[0].error_log else "no page was read"
            return ExtractStatus("failed", error=reason)
        schema = jobs[0].options.json.schema if jobs[0].options.json else None
        try:
            data = validated(merged(answers), schema)
        except AnswerRejected as exc:
            return ExtractStatus("failed", error=f"the pages' answers together: {exc}")
        warning = (
            f"{len(failed)} of {len(jobs)} pages gave no answer: "
            + ", ".join(j.url for j in failed[:5])
            if failed
            else None
        )
        return ExtractStatus("completed", data=data, sources=sources, warning=warning)

    async def _extract_pages(self, caller: Caller, listed: list[Job]) -> list[Job] | None:
        """The extract's pages: its listed ones, each crawl's start page replaced by the
        crawl's pages (oldest first, so the start page's answer leads); None while a crawl
        is running."""
        pages: dict[str, Job] = {}  # a page listed and crawled too is read once
        for job in listed:
            if job.crawl_id is None:
                pages.setdefault(job.url, job)
                continue
            crawl = await self.crawls.get(caller, job.crawl_id)
            if not crawl.status.is_final:
                return None
            query = JobQuery(limit=crawl.spec.limit)
            crawled, _ = await self.crawls.pages(caller, crawl.id, query)
            for page in sorted(crawled, key=lambda found: found.created_at):
                pages.setdefault(page.url, page)
        return list(pages.values())

    async def map(self, caller: Caller, url: str, **options: Any) -> list[str]:
        request = self.mapper.request(url, **options)
        result = await self.mapper.map(request)
        return result.links


def _errors_of(failed: list[Job]) -> CrawlErrors:
    """Failed pages as Firecrawl lists them: robots.txt's refusals apart."""
    errors = [
        CrawlError(job.id, job.url, job.error_code, job.error_log or "failed", job.finished_at)
        for job in failed
        if job.error_code != ErrorCode.ROBOTS_DISALLOWED
    ]
    blocked = [job.url for job in failed if job.error_code == ErrorCode.ROBOTS_DISALLOWED]
    return CrawlErrors(errors, blocked)
