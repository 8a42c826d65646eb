"""The asynchronous client."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Any, BinaryIO, Literal, Self, TypeVar, Unpack
from uuid import UUID

import httpx

from taskcrawler.client import _base, _calls
from taskcrawler.client._calls import (
    NEXT_SINCE,
    Call,
    CancelFilter,
    ContentFormat,
    CrawlOptions,
    ExportFormat,
    JobOptions,
    KeyOptions,
    MapOptions,
    MonitorChanges,
    MonitorOptions,
    RetryFilter,
    SearchOptions,
    WebSearchOptions,
)
from taskcrawler.client.models import (
    ApiKey,
    Batch,
    Cancelled,
    Change,
    ChangePage,
    Chunks,
    Crawl,
    CrawlPage,
    Delivery,
    ExportRecord,
    Job,
    JobPage,
    KeyWithSecret,
    LinkPage,
    MapResult,
    Monitor,
    MonitorPage,
    NewKey,
    Restarted,
    Run,
    RunContent,
    RunDiff,
    SearchResults,
    Submitted,
    WebSearchResults,
)

T = TypeVar("T")


class AsyncTaskCrawler:
    """The TaskCrawler API from asyncio code.

    ::

        async with AsyncTaskCrawler("http://127.0.0.1:8000", api_key="tc_...") as tc:
            submitted = await tc.submit("https://example.com", formats=["markdown"])
            job = await tc.wait(submitted.job.id)
            print(job.status, await tc.content(job.id))

    Every refusal raises :class:`~taskcrawler.client.TaskCrawlerError` with the HTTP status and
    the API's detail; no answer at all raises it with ``status`` None. ``transport`` is passed
    to httpx (``httpx.ASGITransport(app)`` calls an app in the same process).
    """

    def __init__(
        self,
        base_url: str = _base.DEFAULT_BASE_URL,
        api_key: str | None = None,
        *,
        timeout: float | None = _base.DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        user_agent: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=_base.headers(api_key, user_agent),
            timeout=_base.timeout(timeout),
            transport=transport,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- jobs ----------------------------------------------------------------------------

    async def submit(self, url: str, **options: Unpack[JobOptions]) -> Submitted:
        """Submit one URL: its job, and whether this call created it."""
        return await self._send(_calls.submit(url, **options))

    async def submit_batch(self, urls: Sequence[str], **options: Unpack[JobOptions]) -> Batch:
        """Submit up to 1,000 URLs at once, each with the same options."""
        return await self._send(_calls.submit_batch(urls, **options))

    async def list_jobs(
        self,
        *,
        statuses: Sequence[str] = (),
        host: str | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        id_prefix: str | None = None,
    ) -> JobPage:
        """One page of jobs, newest first; pass ``next_cursor`` back for the next.
        ``id_prefix``: only the jobs whose id starts with it (a short id)."""
        return await self._send(
            _calls.list_jobs(
                statuses, host, created_after, created_before, limit, cursor, id_prefix
            )
        )

    async def iter_jobs(
        self, *, statuses: Sequence[str] = (), host: str | None = None
    ) -> AsyncIterator[Job]:
        """Every job, newest first, page after page."""
        cursor: str | None = None
        while True:
            page = await self.list_jobs(
                statuses=statuses, host=host, limit=_calls.MAX_PAGE, cursor=cursor
            )
            for job in page.jobs:
                yield job
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def get_job(self, job_id: UUID | str) -> Job:
        return await self._send(_calls.get_job(job_id))

    async def runs(self, job_id: UUID | str, limit: int | None = None) -> list[Run]:
        """The job's last earlier runs (re-scrapes and retries of a finished job; ``limit``,
        100 unless said), oldest first."""
        return await self._send(_calls.runs(job_id, limit))

    async def retry(self, job_id: UUID | str) -> Job:
        return await self._send(_calls.retry(job_id))

    async def cancel(self, job_id: UUID | str) -> Job:
        return await self._send(_calls.cancel(job_id))

    async def wait(self, job_id: UUID | str, *, interval: float = 0.5) -> Job:
        """Poll the job until it is COMPLETED, FAILED or CANCELLED (bound it with
        ``asyncio.timeout``)."""
        while True:
            job = await self.get_job(job_id)
            if job.status.is_final:
                return job
            await asyncio.sleep(interval)

    async def content(self, job_id: UUID | str, format: ContentFormat = "markdown") -> str:
        """The page's main content as Markdown or text, or its HTML (asked for in formats)."""
        return await self._send(_calls.content(job_id, format))

    async def links(
        self, job_id: UUID | str, *, after: int | None = None, limit: int = 100
    ) -> LinkPage:
        return await self._send(_calls.links(job_id, after, limit))

    # --- sites ----------------------------------------------------------------------------

    async def map(self, url: str, **options: Unpack[MapOptions]) -> MapResult:
        """A site's URLs from its sitemaps and its start page, without scraping them."""
        return await self._send(_calls.map_site(url, **options))

    # --- crawls ---------------------------------------------------------------------------

    async def start_crawl(self, url: str, **options: Unpack[CrawlOptions]) -> Crawl:
        """Start a crawl of ``url``'s site: a RUNNING crawl whose pages are jobs."""
        return await self._send(_calls.start_crawl(url, **options))

    async def get_crawl(self, crawl_id: UUID | str) -> Crawl:
        """The crawl with its pages' live counts."""
        return await self._send(_calls.get_crawl(crawl_id))

    async def list_crawls(self, *, limit: int = 50, cursor: str | None = None) -> CrawlPage:
        """One page of crawls, newest first; pass ``next_cursor`` back for the next."""
        return await self._send(_calls.list_crawls(limit, cursor))

    async def crawl_jobs(
        self,
        crawl_id: UUID | str,
        *,
        statuses: Sequence[str] = (),
        limit: int = 50,
        cursor: str | None = None,
    ) -> JobPage:
        """One page of the crawl's pages (jobs), newest first."""
        return await self._send(_calls.crawl_jobs(crawl_id, statuses, limit, cursor))

    async def cancel_crawl(self, crawl_id: UUID | str) -> Crawl:
        """Cancel the crawl: its pending pages are cancelled, nothing new is scheduled."""
        return await self._send(_calls.cancel_crawl(crawl_id))

    # --- jobs in bulk, and more of a job ----------------------------------------------
    async def cancel_matching(self, **where: Unpack[CancelFilter]) -> Cancelled:
        """Cancel every unfinished job that matches all the fields given (at least one): ``ids``,
        ``batch_id``, ``crawl_id``, ``statuses`` (PENDING, PROCESSING), ``host``, ``created_after``,
        ``created_before``. Jobs being fetched are cancelled too; ``more`` says call it again."""
        return await self._send(_calls.cancel_matching(**where))

    async def retry_matching(self, **where: Unpack[RetryFilter]) -> Restarted:
        """Run again every finished job that matches (default: every FAILED one)."""
        return await self._send(_calls.retry_matching(**where))

    async def deliveries(self, job_id: UUID | str, limit: int | None = None) -> list[Delivery]:
        """The job's last webhook deliveries (``limit``, 100 unless said; one a run), oldest
        first: where, how many attempts, the last status or error."""
        return await self._send(_calls.deliveries(job_id, limit))

    async def screenshot(self, job_id: UUID | str) -> bytes:
        """The PNG of the rendered page (asked for with the ``screenshot`` format)."""
        return await self._send(_calls.screenshot(job_id))

    async def action_file(
        self,
        job_id: UUID | str,
        kind: Literal["screenshots", "pdfs"] = "screenshots",
        index: int = 0,
    ) -> bytes:
        """The ``index``-th file (0 first) of the page's ``screenshot`` actions (a PNG) or
        ``pdf`` actions (a PDF), as the job's ``result.actions`` lists them."""
        return await self._send(_calls.action_file(job_id, kind, index))

    async def chunks(self, job_id: UUID | str) -> Chunks:
        """The page's chunks (asked for with the ``chunks`` format), with their heading paths."""
        return await self._send(_calls.chunks(job_id))

    async def backlinks(
        self, target: str, *, after: int | None = None, limit: int = 100
    ) -> LinkPage:
        """Which of your pages link to ``target``."""
        return await self._send(_calls.backlinks(target, after, limit))

    # --- monitors ---------------------------------------------------------------------
    async def create_monitor(
        self, interval_seconds: float, **options: Unpack[MonitorOptions]
    ) -> Monitor:
        """Watch ``url``, ``urls`` or a site (``crawl``) every ``interval_seconds``; its first
        run is due at once."""
        return await self._send(_calls.create_monitor(interval_seconds, **options))

    async def list_monitors(self, *, limit: int = 50, cursor: str | None = None) -> MonitorPage:
        """One page of monitors, newest first; pass ``next_cursor`` back for the next."""
        return await self._send(_calls.list_monitors(limit, cursor))

    async def get_monitor(self, monitor_id: UUID | str) -> Monitor:
        """The monitor, its pages (each a job) and its schedule."""
        return await self._send(_calls.get_monitor(monitor_id))

    async def update_monitor(
        self, monitor_id: UUID | str, **changes: Unpack[MonitorChanges]
    ) -> Monitor:
        """Pause or resume it (``paused``), set its ``interval_seconds``, or add ``formats``."""
        return await self._send(_calls.update_monitor(monitor_id, **changes))

    async def delete_monitor(self, monitor_id: UUID | str) -> None:
        """Stop watching: the monitor, its jobs, their runs and its changes are deleted."""
        return await self._send(_calls.delete_monitor(monitor_id))

    async def changes(
        self, monitor_id: UUID | str, *, limit: int = 50, cursor: str | None = None
    ) -> ChangePage:
        """One page of the monitor's changes, newest first, each with its diff."""
        return await self._send(_calls.changes(monitor_id, limit, cursor))

    async def get_change(self, monitor_id: UUID | str, change_id: UUID | str) -> Change:
        """One change, with its whole diff."""
        return await self._send(_calls.get_change(monitor_id, change_id))

    async def run_content(self, job_id: UUID | str, run: int) -> RunContent:
        """An old run of a watched page: the Markdown and text it read."""
        return await self._send(_calls.run_content(job_id, run))

    async def diff(self, job_id: UUID | str, from_run: int, to_run: int) -> RunDiff:
        """The unified diff of two runs' Markdown, and the metadata that changed."""
        return await self._send(_calls.diff(job_id, from_run, to_run))

    # --- keys (an admin key's) --------------------------------------------------------
    async def list_keys(self) -> list[ApiKey]:
        """Every API key, without secrets."""
        return await self._send(_calls.list_keys())

    async def create_key(self, name: str, **options: Unpack[KeyOptions]) -> NewKey:
        """A new key: its token and webhook secret are in this answer only."""
        return await self._send(_calls.create_key(name, **options))

    async def rotate_webhook_secret(self, key_id: str) -> KeyWithSecret:
        """A new secret for the key's webhook signatures (shown once)."""
        return await self._send(_calls.rotate_webhook_secret(key_id))

    async def revoke_key(self, key_id: str) -> None:
        """Revoke the key: it is refused from now on."""
        return await self._send(_calls.revoke_key(key_id))

    # --- search ---------------------------------------------------------------------------

    async def search(self, q: str, **options: Unpack[SearchOptions]) -> SearchResults:
        """The chunks of your pages that best match ``q`` (``k``, default 10; ``mode``
        semantic, keyword or hybrid), each with what a citation needs (URL, title, headings,
        its place in the page's Markdown, when the page was fetched); narrowed by crawl, job,
        host, URL prefix, monitor or fetch time when given."""
        return await self._send(_calls.search(q, **options))

    async def web_search(self, query: str, **options: Unpack[WebSearchOptions]) -> WebSearchResults:
        """The web through the deployment's search engine (``TASKCRAWLER_SEARXNG_URL``): each
        result's URL, title and description; with ``formats``, each result is also a job."""
        return await self._send(_calls.web_search(query, **options))

    # --- export ---------------------------------------------------------------------------

    async def export_to(
        self,
        out: BinaryIO,
        format: ExportFormat = "jsonl",
        *,
        since: str | None = None,
        limit: int | None = None,
        crawl_id: UUID | str | None = None,
    ) -> str:
        """Write the export of what finished after ``since`` to ``out`` as it arrives (JSON
        Lines, or gzipped WARC records), of one crawl's pages if ``crawl_id`` is given; return
        the cursor to pass as ``since`` next time."""
        async with self._export(format, since, limit, crawl_id) as response:
            next_since = response.headers.get(NEXT_SINCE, since or "")
            async for chunk in response.aiter_bytes():
                out.write(chunk)
        return str(next_since)

    async def export(
        self,
        *,
        since: str | None = None,
        limit: int | None = None,
        crawl_id: UUID | str | None = None,
    ) -> AsyncIterator[ExportRecord]:
        """The finished jobs not exported after ``since``, in the order they finished, each
        with the ``cursor`` that resumes after it: every result comes once."""
        async with self._export("jsonl", since, limit, crawl_id) as response:
            async for line in response.aiter_lines():
                if line:
                    yield ExportRecord.model_validate_json(line)

    @contextlib.asynccontextmanager
    async def _export(
        self,
        format: ExportFormat,
        since: str | None,
        limit: int | None,
        crawl_id: UUID | str | None = None,
    ) -> AsyncIterator[httpx.Response]:
        params = tuple(_calls.export_params(format, since, limit, crawl_id))
        try:
            async with self._http.stream("GET", "/api/v1/export", params=params) as response:
                if response.status_code >= 400:
                    _base.check(response, await response.aread())
                yield response
        except httpx.TransportError as exc:
            raise _base.unreachable(self.base_url, exc, self.timeout) from None

    # --- plumbing -------------------------------------------------------------------------

    async def _send(self, call: Call[T]) -> T:
        try:
            response = await self._http.request(
                call.method, call.path, **_base.request_kwargs(call)
            )
        except httpx.TransportError as exc:
            raise _base.unreachable(self.base_url, exc, self.timeout) from None
        return _base.read(call, response)

    async def call_json(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Sequence[tuple[str, str]] | None = None,
    ) -> tuple[int, Any]:
        """Any endpoint this client has no method for: its status and JSON answer, refusals
        raised as :class:`TaskCrawlerError` like every other call's."""
        call: Call[tuple[int, Any]] = Call(
            method, path, lambda status, body: (status, body), json=json, params=list(params or [])
        )
        return await self._send(call)

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Any other call, as httpx sends it (the key and base URL applied); not checked."""
        return await self._http.request(method, path, **kwargs)
