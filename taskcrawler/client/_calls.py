"""Each API call once: its method, path, body and how its answer is read. The sync and the async
clients only send them, so the two can never disagree about a call."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypedDict, TypeVar, Unpack
from uuid import UUID

from pydantic import TypeAdapter

# Written from the request models (taskcrawler.contract.keywords); named here, with the rest.
from taskcrawler.client._keywords import CrawlOptions as CrawlOptions
from taskcrawler.client._keywords import JobOptions as JobOptions
from taskcrawler.client._keywords import WebSearchOptions as WebSearchOptions
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
from taskcrawler.domain.crawls import Sitemap

T = TypeVar("T")

JOBS = "/api/v1/jobs"
CRAWLS = "/api/v1/crawls"
MONITORS = "/api/v1/monitors"
KEYS = "/api/v1/keys"
MAX_BATCH = 1000  # the batch endpoint's limit
MAX_PAGE = 500  # the list endpoint's largest page
#: The export's header with the cursor of what finishes after it.
NEXT_SINCE = "X-TaskCrawler-Next-Since"

ContentFormat = Literal["markdown", "text", "html", "clean_html", "images"]
ExportFormat = Literal["jsonl", "warc"]
SearchMode = Literal["semantic", "keyword", "hybrid"]
Params = list[tuple[str, str]]

_RUNS = TypeAdapter(list[Run])
_DELIVERIES = TypeAdapter(list[Delivery])
_KEYS = TypeAdapter(list[ApiKey])


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    method: str
    path: str
    read: Callable[[int, Any], T]
    json: Any = None
    params: Params = field(default_factory=list)
    #: The answer is text (a page's content), not JSON.
    text: bool = False
    #: The answer is bytes (a screenshot), not JSON.
    raw: bool = False


def _model(model: Callable[[Any], T]) -> Callable[[int, Any], T]:
    return lambda status, body: model(body)


class SearchOptions(TypedDict, total=False):
    """A search's options (keyword arguments of ``search``); each left out, or None, is the
    server's default."""

    #: How many chunks, the best first (1 to 100; default 10).
    k: int
    #: semantic, keyword or hybrid (the default).
    mode: SearchMode
    #: Only the pages of this crawl, this job, this host, under this URL prefix, or watched by
    #: this monitor.
    crawl_id: UUID | str | None
    job_id: UUID | str | None
    host: str | None
    url_prefix: str | None
    monitor_id: UUID | str | None
    #: Only the pages fetched at or after, or before, this time (aware datetime or ISO 8601).
    fetched_after: datetime | str | None
    fetched_before: datetime | str | None
    #: False: skip the server's reranker for this search.
    rerank: bool


class JobFilter(TypedDict, total=False):
    """Which jobs a bulk operation takes (keyword arguments of ``cancel_matching`` and
    ``retry_matching``): those matching every field given."""

    #: Statuses: PENDING and/or PROCESSING to cancel; FAILED, COMPLETED, CANCELLED to retry.
    statuses: Sequence[str]
    host: str | None
    #: Created after, or before, this time (aware datetime or ISO 8601).
    created_after: datetime | str | None
    created_before: datetime | str | None


class CancelFilter(JobFilter, total=False):
    #: These jobs (up to 1,000).
    ids: Sequence[UUID | str]
    #: A batch scrape's jobs (``/v1/batch/scrape``), or a crawl's pages.
    batch_id: UUID | str | None
    crawl_id: UUID | str | None


class RetryFilter(JobFilter, total=False):
    #: The jobs that failed with this error code.
    error_code: str | None


class MonitorOptions(TypedDict, total=False):
    """A monitor's options (keyword arguments of ``create_monitor``): what it watches (``url``,
    ``urls`` or a ``crawl``'s fields), and how."""

    url: str | None
    urls: Sequence[str] | None
    crawl: Mapping[str, Any] | None
    formats: Sequence[str] | None
    ignore_selectors: Sequence[str] | None
    callback_url: str | None


class MonitorChanges(TypedDict, total=False):
    """What ``update_monitor`` changes: each left out stays as it is."""

    #: True pauses the monitor, False resumes it.
    paused: bool | None
    interval_seconds: float | None
    #: Formats to add (made from the pages' stored copies).
    formats: Sequence[str] | None


class KeyOptions(TypedDict, total=False):
    """A new key's options (keyword arguments of ``create_key``)."""

    is_admin: bool
    requests_per_minute: int | None
    max_pending_jobs: int | None
    callback_url: str | None


class MapOptions(TypedDict, total=False):
    """A map's options (keyword arguments of ``map``); each left out, or None, is the server's
    default."""

    #: URLs at most.
    limit: int | None
    #: include: sitemaps and the start page's links; skip: links only; only: sitemaps only.
    sitemap: Sitemap
    #: Keeps the URLs containing every word of it.
    search: str | None
    allow_subdomains: bool
    #: Regular expressions (RE2) searched in the URL's path.
    include_paths: Sequence[str]
    exclude_paths: Sequence[str]


def _body(**fields: Any) -> dict[str, Any]:
    """A request body of the fields given, None left out (the server's default)."""
    body: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None:
            continue
        if isinstance(value, Mapping):
            value = dict(value)
        elif isinstance(value, Sequence) and not isinstance(value, str):
            value = [str(item) if isinstance(item, UUID) else item for item in value]
        elif isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, UUID):
            value = str(value)
        body[name] = value
    return body


def _filter_body(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A bulk operation's filter as the API names it (``statuses`` is ``status`` there)."""
    named = {("status" if name == "statuses" else name): value for name, value in fields.items()}
    return _body(**named)


def submit(url: str, **options: Unpack[JobOptions]) -> Call[Submitted]:
    return Call(
        "POST",
        JOBS,
        lambda status, body: Submitted(job=Job.model_validate(body), created=status == 201),
        json=_body(url=url, **options),
    )


def submit_batch(urls: Sequence[str], **options: Unpack[JobOptions]) -> Call[Batch]:
    if len(urls) > MAX_BATCH:
        raise ValueError(f"at most {MAX_BATCH} URLs per batch")
    body = _body(urls=urls, **options)
    return Call("POST", f"{JOBS}/batch", _model(Batch.model_validate), json=body)


def list_jobs(
    statuses: Sequence[str] = (),
    host: str | None = None,
    created_after: str | None = None,
    created_before: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
    id_prefix: str | None = None,
) -> Call[JobPage]:
    params: Params = [("status", str(s)) for s in statuses]
    params.append(("limit", str(limit)))
    for name, value in (
        ("host", host),
        ("created_after", created_after),
        ("created_before", created_before),
        ("cursor", cursor),
        ("id_prefix", id_prefix),
    ):
        if value:
            params.append((name, value))
    return Call("GET", JOBS, _model(JobPage.model_validate), params=params)


def get_job(job_id: UUID | str) -> Call[Job]:
    return Call("GET", f"{JOBS}/{job_id}", _model(Job.model_validate))


def runs(job_id: UUID | str, limit: int | None = None) -> Call[list[Run]]:
    params: Params = [("limit", str(limit))] if limit is not None else []
    return Call("GET", f"{JOBS}/{job_id}/runs", _model(_RUNS.validate_python), params=params)


def retry(job_id: UUID | str) -> Call[Job]:
    return Call("POST", f"{JOBS}/{job_id}/retry", _model(Job.model_validate))


def cancel(job_id: UUID | str) -> Call[Job]:
    return Call("DELETE", f"{JOBS}/{job_id}", _model(Job.model_validate))


def cancel_matching(**where: Unpack[CancelFilter]) -> Call[Cancelled]:
    body = _filter_body(where)
    return Call("POST", f"{JOBS}/cancel", _model(Cancelled.model_validate), json=body)


def retry_matching(**where: Unpack[RetryFilter]) -> Call[Restarted]:
    body = _filter_body(where)
    return Call("POST", f"{JOBS}/retry", _model(Restarted.model_validate), json=body)


def deliveries(job_id: UUID | str, limit: int | None = None) -> Call[list[Delivery]]:
    params: Params = [("limit", str(limit))] if limit is not None else []
    return Call(
        "GET", f"{JOBS}/{job_id}/deliveries", _model(_DELIVERIES.validate_python), params=params
    )


def screenshot(job_id: UUID | str) -> Call[bytes]:
    return Call("GET", f"{JOBS}/{job_id}/screenshot", lambda status, body: bytes(body), raw=True)


def action_file(job_id: UUID | str, kind: str, index: int) -> Call[bytes]:
    path = f"{JOBS}/{job_id}/actions/{kind}/{int(index)}"
    return Call("GET", path, lambda status, body: bytes(body), raw=True)


def chunks(job_id: UUID | str) -> Call[Chunks]:
    return Call("GET", f"{JOBS}/{job_id}/chunks", _model(Chunks.model_validate))


def backlinks(target: str, after: int | None = None, limit: int = 100) -> Call[LinkPage]:
    params: Params = [("target", target), ("limit", str(limit))]
    if after is not None:
        params.append(("cursor", str(after)))
    return Call("GET", "/api/v1/links", _model(LinkPage.model_validate), params=params)


def content(job_id: UUID | str, format: ContentFormat = "markdown") -> Call[str]:
    return Call(
        "GET",
        f"{JOBS}/{job_id}/content",
        lambda status, body: str(body),
        params=[("format", format)],
        text=True,
    )


def links(job_id: UUID | str, after: int | None = None, limit: int = 100) -> Call[LinkPage]:
    params: Params = [("limit", str(limit))]
    if after is not None:
        params.append(("cursor", str(after)))
    return Call("GET", f"{JOBS}/{job_id}/links", _model(LinkPage.model_validate), params=params)


def map_site(url: str, **options: Unpack[MapOptions]) -> Call[MapResult]:
    body = _body(url=url, **options)
    return Call("POST", "/api/v1/map", _model(MapResult.model_validate), json=body)


def start_crawl(url: str, **options: Unpack[CrawlOptions]) -> Call[Crawl]:
    return Call("POST", CRAWLS, _model(Crawl.model_validate), json=_body(url=url, **options))


def get_crawl(crawl_id: UUID | str) -> Call[Crawl]:
    return Call("GET", f"{CRAWLS}/{crawl_id}", _model(Crawl.model_validate))


def list_crawls(limit: int = 50, cursor: str | None = None) -> Call[CrawlPage]:
    params: Params = [("limit", str(limit))] + ([("cursor", cursor)] if cursor else [])
    return Call("GET", CRAWLS, _model(CrawlPage.model_validate), params=params)


def crawl_jobs(
    crawl_id: UUID | str,
    statuses: Sequence[str] = (),
    limit: int = 50,
    cursor: str | None = None,
) -> Call[JobPage]:
    params: Params = [("status", str(s)) for s in statuses]
    params.append(("limit", str(limit)))
    if cursor:
        params.append(("cursor", cursor))
    return Call("GET", f"{CRAWLS}/{crawl_id}/jobs", _model(JobPage.model_validate), params=params)


def cancel_crawl(crawl_id: UUID | str) -> Call[Crawl]:
    return Call("DELETE", f"{CRAWLS}/{crawl_id}", _model(Crawl.model_validate))


def create_monitor(interval_seconds: float, **options: Unpack[MonitorOptions]) -> Call[Monitor]:
    body = _body(interval_seconds=interval_seconds, **options)
    return Call("POST", MONITORS, _model(Monitor.model_validate), json=body)


def list_monitors(limit: int = 50, cursor: str | None = None) -> Call[MonitorPage]:
    params: Params = [("limit", str(limit))] + ([("cursor", cursor)] if cursor else [])
    return Call("GET", MONITORS, _model(MonitorPage.model_validate), params=params)


def get_monitor(monitor_id: UUID | str) -> Call[Monitor]:
    return Call("GET", f"{MONITORS}/{monitor_id}", _model(Monitor.model_validate))


def update_monitor(monitor_id: UUID | str, **changes: Unpack[MonitorChanges]) -> Call[Monitor]:
    body = _body(**changes)
    return Call("PATCH", f"{MONITORS}/{monitor_id}", _model(Monitor.model_validate), json=body)


def delete_monitor(monitor_id: UUID | str) -> Call[None]:
    return Call("DELETE", f"{MONITORS}/{monitor_id}", lambda status, body: None)


def changes(monitor_id: UUID | str, limit: int = 50, cursor: str | None = None) -> Call[ChangePage]:
    params: Params = [("limit", str(limit))] + ([("cursor", cursor)] if cursor else [])
    path = f"{MONITORS}/{monitor_id}/changes"
    return Call("GET", path, _model(ChangePage.model_validate), params=params)


def get_change(monitor_id: UUID | str, change_id: UUID | str) -> Call[Change]:
    path = f"{MONITORS}/{monitor_id}/changes/{change_id}"
    return Call("GET", path, _model(Change.model_validate))


def run_content(job_id: UUID | str, run: int) -> Call[RunContent]:
    return Call("GET", f"{JOBS}/{job_id}/runs/{run}", _model(RunContent.model_validate))


def diff(job_id: UUID | str, from_run: int, to_run: int) -> Call[RunDiff]:
    params: Params = [("from", str(from_run)), ("to", str(to_run))]
    return Call("GET", f"{JOBS}/{job_id}/diff", _model(RunDiff.model_validate), params=params)


def list_keys() -> Call[list[ApiKey]]:
    return Call("GET", KEYS, _model(_KEYS.validate_python))


def create_key(name: str, **options: Unpack[KeyOptions]) -> Call[NewKey]:
    return Call("POST", KEYS, _model(NewKey.model_validate), json=_body(name=name, **options))


def rotate_webhook_secret(key_id: str) -> Call[KeyWithSecret]:
    path = f"{KEYS}/{key_id}/webhook-secret"
    return Call("POST", path, _model(KeyWithSecret.model_validate))


def revoke_key(key_id: str) -> Call[None]:
    return Call("DELETE", f"{KEYS}/{key_id}", lambda status, body: None)


def search(q: str, **options: Unpack[SearchOptions]) -> Call[SearchResults]:
    params: Params = [("q", q)]
    for name, value in options.items():
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, datetime):
            text = value.isoformat()
        else:
            text = str(value)
        params.append((name, text))
    return Call("GET", "/api/v1/search", _model(SearchResults.model_validate), params=params)


def web_search(query: str, **options: Unpack[WebSearchOptions]) -> Call[WebSearchResults]:
    body = _body(query=query, **options)
    return Call("POST", "/api/v1/web-search", _model(WebSearchResults.model_validate), json=body)


def export_params(
    format: ExportFormat,
    since: str | None,
    limit: int | None,
    crawl_id: UUID | str | None = None,
) -> Params:
    params: Params = [("format", format)]
    if crawl_id is not None:
        params.append(("crawl_id", str(crawl_id)))
    if since:
        params.append(("since", since))
    if limit is not None:
        params.append(("limit", str(limit)))
    return params
