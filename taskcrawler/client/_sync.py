"""The synchronous client: the async one's calls, sent with a blocking httpx client."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
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


class TaskCrawler:
    """The TaskCrawler API from blocking code.

    ::

        with TaskCrawler("http://127.0.0.1:8000", api_key="tc_...") as tc:
            submitted = tc.submit("https://example.com", formats=["markdown"])
            job = tc.wait(submitted.job.id)
            print(job.status, tc.content(job.id))

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
        transport: httpx.BaseTransport | None = None,
        user_agent: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=_base.headers(api_key, user_agent),
            timeout=_base.timeout(timeout),
            transport=transport,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- jobs ----------------------------------------------------------------------------

    def submit(self, url: str, **options: Unpack[JobOptions]) -> Submitted:
        """Submit one URL: its job, and whether this call created it."""
        return self._send(_calls.submit(url, **options))

    def submit_batch(self, urls: Sequence[str], **options: Unpack[JobOptions]) -> Batch:
        """Submit up to 1,000 URLs at once, each with the same options."""
        return self._send(_calls.submit_batch(urls, **options))

    def list_jobs(
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
        return self._send(
            _calls.list_jobs(
                statuses, host, created_after, created_before, limit, cursor, id_prefix
            )
        )

    def iter_jobs(self, *, statuses: Sequence[str] = (), host: str | None = None) -> Iterator[Job]:
        """Every job, newest first, page after page."""
        cursor: str | None = None
        while True:
            page = self.list_jobs(
                statuses=statuses, host=host, limit=_calls.MAX_PAGE, cursor=cursor
            )
            yield from page.jobs
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def get_job(self, job_id: UUID | str) -> Job:
        return self._send(_calls.get_job(job_id))

    def runs(self, job_id: UUID | str, limit: int | None = None) -> list[Run]:
        """The job's last earlier runs (re-scrapes and retries of a finished job; ``limit``,
        100 unless said), oldest first."""
        return self._send(_calls.runs(job_id, limit))

    def retry(self, job_id: UUID | str) -> Job:
        return self._send(_calls.retry(job_id))

    def cancel(self, job_id: UUID | str) -> Job:
        return self._send(_calls.cancel(job_id))

    def wait(
        self, job_id: UUID | str, *, interval: float = 0.5, timeout: float | None = None
    ) -> Job:
        """Poll the job until it is COMPLETED, FAILED or CANCELLED; TimeoutError after
        ``timeout`` seconds."""
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.get_job(job_id)
            if job.status.is_final:
                return job
            if deadline is not None and time.monotonic() + interval > deadline:
                raise TimeoutError(f"job {job_id} is still {job.status.value}")
            time.sleep(interval)

    def content(self, job_id: UUID | str, format: ContentFormat = "markdown") -> str:
        """The page's main content as Markdown or text, or its HTML (asked for in formats)."""
        return self._send(_calls.content(job_id, format))

    def links(self, job_id: UUID | str, *, after: int | None = None, limit: int = 100) -> LinkPage:
        return self._send(_calls.links(job_id, after, limit))

    # --- sites ----------------------------------------------------------------------------

    def map(self, url: str, **options: Unpack[MapOptions]) -> MapResult:
        """A site's URLs from its sitemaps and its start page, without scraping them."""
        return self._send(_calls.map_site(url, **options))

    # --- crawls ---------------------------------------------------------------------------

    def start_crawl(self, url: str, **options: Unpack[CrawlOptions]) -> Crawl:
        """Start a crawl of ``url``'s site: a RUNNING crawl whose pages are jobs."""
        return self._send(_calls.start_crawl(url, **options))

    def get_crawl(self, crawl_id: UUID | str) -> Crawl:
        """The crawl with its pages' live counts."""
        return self._send(_calls.get_crawl(crawl_id))

    def list_crawls(self, *, limit: int = 50, cursor: str | None = None) -> CrawlPage:
        """One page of crawls, newest first; pass ``next_cursor`` back for the next."""
        return self._send(_calls.list_crawls(limit, cursor))

    def crawl_jobs(
        self,
        crawl_id: UUID | str,
        *,
        statuses: Sequence[str] = (),
        limit: int = 50,
        cursor: str | None = None,
    ) -> JobPage:
        """One page of the crawl's pages (jobs), newest first."""
        return self._send(_calls.crawl_jobs(crawl_id, statuses, limit, cursor))

    def cancel_crawl(self, crawl_id: UUID | str) -> Crawl:
        """Cancel the crawl: its pending pages are cancelled, nothing new is scheduled."""
        return self._send(_calls.cancel_crawl(crawl_id))

    # --- jobs in bulk, and more of a job ----------------------------------------------
    def cancel_matching(self, **where: Unpack[CancelFilter]) -> Cancelled:
        """Cancel every unfinished job that matches all the fields given (at least one): ``ids``,
        ``batch_id``, ``crawl_id``, ``statuses`` (PENDING, PROCESSING), ``host``, ``created_after``,
        ``created_before``. Jobs being fetched are cancelled too; ``more`` says call it again."""
        return self._send(_calls.cancel_matching(**where))

    def retry_matching(self, **where: Unpack[RetryFilter]) -> Restarted:
        """Run again every finished job that matches (default: every FAILED one)."""
        return self._send(_calls.retry_matching(**where))

    def deliveries(self, job_id: UUID | str, limit: int | None = None) -> list[Delivery]:
        """The job's last webhook deliveries (``limit``, 100 unless said; one a run), oldest
        first: where, how many attempts, the last status or error."""
        return self._send(_calls.deliveries(job_id, limit))

    def screenshot(self, job_id: UUID | str) -> bytes:
        """The PNG of the rendered page (asked for with the ``screenshot`` format)."""
        return self._send(_calls.screenshot(job_id))

    def action_file(
        self,
        job_id: UUID | str,
        kind: Literal["screenshots", "pdfs"] = "screenshots",
        index: int = 0,
    ) -> bytes:
        """The ``index``-th file (0 first) of the page's ``screenshot`` actions (a PNG) or
        ``pdf`` actions (a PDF), as the job's ``result.actions`` lists them."""
        return self._send(_calls.action_file(job_id, kind, index))

    def chunks(self, job_id: UUID | str) -> Chunks:
        """The page's chunks (asked for with the ``chunks`` format), with their heading paths."""
        return self._send(_calls.chunks(job_id))

    def backlinks(self, target: str, *, after: int | None = None, limit: int = 100) -> LinkPage:
        """Which of your pages link to ``target``."""
        return self._send(_calls.backlinks(target, after, limit))

    # --- monitors ---------------------------------------------------------------------
    def create_monitor(self, interval_seconds: float, **options: Unpack[MonitorOptions]) -> Monitor:
        """Watch ``url``, ``urls`` or a site (``crawl``) every ``interval_seconds``; its first
        run is due at once."""
        return self._send(_calls.create_monitor(interval_seconds, **options))

    def list_monitors(self, *, limit: int = 50, cursor: str | None = None) -> MonitorPage:
        """One page of monitors, newest first; pass ``next_cursor`` back for the next."""
        return self._send(_calls.list_monitors(limit, cursor))

    def get_monitor(self, monitor_id: UUID | str) -> Monitor:
        """The monitor, its pages (each a job) and its schedule."""
        return self._send(_calls.get_monitor(monitor_id))

    def update_monitor(self, monitor_id: UUID | str, **changes: Unpack[MonitorChanges]) -> Monitor:
        """Pause or resume it (``paused``), set its ``interval_seconds``, or add ``formats``."""
        return self._send(_calls.update_monitor(monitor_id, **changes))

    def delete_monitor(self, monitor_id: UUID | str) -> None:
        """Stop watching: the monitor, its jobs, their runs and its changes are deleted."""
        return self._send(_calls.delete_monitor(monitor_id))

    def changes(
        self, monitor_id: UUID | str, *, limit: int = 50, cursor: str | None = None
    ) -> ChangePage:
        """One page of the monitor's changes, newest first, each with its diff."""
        return self._send(_calls.changes(monitor_id, limit, cursor))

    def get_change(self, monitor_id: UUID | str, change_id: UUID | str) -> Change:
        """One change, with its whole diff."""
        return self._send(_calls.get_change(monitor_id, change_id))

    def run_content(self, job_id: UUID | str, run: int) -> RunContent:
        """An old run of a watched page: the Markdown and text it read."""
        return self._send(_calls.run_content(job_id, run))

    def diff(self, job_id: UUID | str, from_run: int, to_run: int) -> RunDiff:
        """The unified diff of two runs' Markdown, and the metadata that changed."""
        return self._send(_calls.diff(job_id, from_run, to_run))

    # --- keys (an admin key's) --------------------------------------------------------
    def list_keys(self) -> list[ApiKey]:
        """Every API key, without secrets."""
        return self._send(_calls.list_keys())

    def create_key(self, name: str, **options: Unpack[KeyOptions]) -> NewKey:
        """A new key: its token and webhook secret are in this answer only."""
        return self._send(_calls.create_key(name, **options))

    def rotate_webhook_secret(self, key_id: str) -> KeyWithSecret:
        """A new secret for the key's webhook signatures (shown once)."""
        return self._send(_calls.rotate_webhook_secret(key_id))

    def revoke_key(self, key_id: str) -> None:
        """Revoke the key: it is refused from now on."""
        return self._send(_calls.revoke_key(key_id))

    # --- search ---------------------------------------------------------------------------

    def search(self, q: str, **options: Unpack[SearchOptions]) -> SearchResults:
        """The chunks of your pages that best match ``q`` (``k``, default 10; ``mode``
        semantic, keyword or hybrid), each with what a citation needs (URL, title, headings,
        its place in the page's Markdown, when the page was fetched); narrowed by crawl, job,
        host, URL prefix, monitor or fetch time when given."""
        return self._send(_calls.search(q, **options))

    def web_search(self, query: str, **options: Unpack[WebSearchOptions]) -> WebSearchResults:
        """The web through the deployment's search engine (``TASKCRAWLER_SEARXNG_URL``): each
        result's URL, title and description; with ``formats``, each result is also a job."""
        return self._send(_calls.web_search(query, **options))

    # --- export ---------------------------------------------------------------------------

    def export_to(
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
        with self._export(format, since, limit, crawl_id) as response:
            next_since = response.headers.get(NEXT_SINCE, since or "")
            for chunk in response.iter_bytes():
                out.write(chunk)
        return str(next_since)

    def export(
        self,
        *,
        since: str | None = None,
        limit: int | None = None,
        crawl_id: UUID | str | None = None,
    ) -> Iterator[ExportRecord]:
        """The finished jobs not exported after ``since``, in the order they finished, each
        with the ``cursor`` that resumes after it: every result comes once."""
        with self._export("jsonl", since, limit, crawl_id) as response:
            for line in response.iter_lines():
                if line:
                    yield ExportRecord.model_validate_json(line)

    @contextlib.contextmanager
    def _export(
        self,
        format: ExportFormat,
        since: str | None,
        limit: int | None,
        crawl_id: UUID | str | None = None,
    ) -> Iterator[httpx.Response]:
        params = tuple(_calls.export_params(format, since, limit, crawl_id))
        try:
            with self._http.stream("GET", "/api/v1/export", params=params) as response:
                if response.status_code >= 400:
                    _base.check(response, response.read())
                yield response
        except httpx.TransportError as exc:
            raise _base.unreachable(self.base_url, exc, self.timeout) from None

    # --- plumbing -------------------------------------------------------------------------

    def _send(self, call: Call[T]) -> T:
        try:
            response = self._http.request(call.method, call.path, **_base.request_kwargs(call))
        except httpx.TransportError as exc:
            raise _base.unreachable(self.base_url, exc, self.timeout) from None
        return _base.read(call, response)

    def call_json(
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
        return self._send(call)

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Any other call, as httpx sends it (the key and base URL applied); not checked."""
        return self._http.request(method, path, **kwargs)
