"""What the API answers, as typed models.

The job is :class:`~taskcrawler.domain.views.JobView`, the very model the API renders; the
other answers mirror their models in ``taskcrawler.contract`` field for field (a test keeps
them equal) without importing the server, so ``import taskcrawler.client`` stays light.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from taskcrawler.domain.jobs import JobStatus
from taskcrawler.domain.views import CrawlView, JobView

__all__ = [
    "ApiKey",
    "Batch",
    "BatchJob",
    "Cancelled",
    "Change",
    "ChangePage",
    "Chunk",
    "Chunks",
    "Crawl",
    "CrawlPage",
    "Delivery",
    "ExportRecord",
    "Job",
    "JobPage",
    "JobStatus",
    "KeyWithSecret",
    "Link",
    "LinkPage",
    "MapResult",
    "Monitor",
    "MonitorPage",
    "MonitorPageEntry",
    "NewKey",
    "Restarted",
    "Run",
    "RunContent",
    "RunDiff",
    "SearchResult",
    "SearchResults",
    "Submitted",
]


class _Answer(BaseModel):
    # A newer server may add fields: an older client ignores them rather than failing.
    model_config = ConfigDict(extra="ignore")


class Job(JobView):
    """A job: ``GET /api/v1/jobs/{id}``."""

    model_config = ConfigDict(extra="ignore")


class Submitted(_Answer):
    """``POST /api/v1/jobs``: the job, and whether this call created it (201) or the URL
    already had it (200)."""

    job: Job
    created: bool


class BatchJob(Job):
    created: bool = Field(description="False when the URL already had a job.")


class Batch(_Answer):
    jobs: list[BatchJob]
    created: int
    existing: int


class JobPage(_Answer):
    jobs: list[Job]
    next_cursor: str | None


class Run(_Answer):
    run: int
    status: str
    retry_count: int
    http_status: int | None
    scraped_title: str | None
    error_code: str | None
    error_log: str | None
    content_hash: str | None
    started_at: datetime | None
    finished_at: datetime | None


class Link(_Answer):
    id: int
    job_id: UUID
    url: str
    text: str | None
    rel: list[str]
    internal: bool
    nofollow: bool
    source_url: str | None = None


class LinkPage(_Answer):
    links: list[Link]
    next_cursor: int | None


class MapResult(_Answer):
    links: list[str]
    warnings: list[str] = Field(default_factory=list)


class ExportRecord(_Answer):
    """One line of ``GET /api/v1/export?format=jsonl``: a finished job, its texts, and the
    cursor that resumes the export after it."""

    cursor: str
    job: Job
    content: dict[str, str] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict)


class Crawl(CrawlView):
    """A crawl and its pages' counts: ``GET /api/v1/crawls/{id}``."""

    model_config = ConfigDict(extra="ignore")


class CrawlPage(_Answer):
    """``GET /api/v1/crawls``: a page of crawls, newest first."""

    crawls: list[Crawl]
    next_cursor: str | None


class SearchResult(_Answer):
    """A chunk found, and what a citation of it needs: its page's URL and title, the headings
    it sits under, the characters of the page's Markdown it spans (``start``, ``end``), and
    when the page was fetched."""

    job_id: UUID
    url: str
    title: str | None
    chunk_index: int
    text: str
    score: float
    heading_path: list[str] = Field(default_factory=list)
    start: int | None = None
    end: int | None = None
    fetched_at: datetime | None = None


class SearchResults(_Answer):
    """``GET /api/v1/search``: the best chunks first."""

    results: list[SearchResult]


class WebSearchResult(_Answer):
    """A result of the web search engine, and its job when formats were asked."""

    url: str
    title: str
    description: str
    position: int
    published: str | None = None
    image_url: str | None = None
    job_id: UUID | None = None


class WebSearchResults(_Answer):
    """``POST /api/v1/web-search``: the engine's results in its order."""

    results: list[WebSearchResult]


class Cancelled(_Answer):
    """``POST /api/v1/jobs/cancel``: the jobs this call cancelled, oldest first, and whether
    more matched than one call cancels."""

    cancelled: int
    ids: list[UUID]
    more: bool


class Restarted(_Answer):
    """``POST /api/v1/jobs/retry``: the finished jobs this call ran again."""

    restarted: int
    ids: list[UUID]


class Delivery(_Answer):
    """A webhook delivery of a job: ``GET /api/v1/jobs/{id}/deliveries``."""

    id: UUID
    job_id: UUID
    event: str
    url: str
    status: str
    attempts: int
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    next_attempt_at: datetime | None
    delivered_at: datetime | None


class Chunk(_Answer):
    index: int
    text: str
    heading_path: list[str]
    token_count: int
    start: int | None = None
    end: int | None = None


class Chunks(_Answer):
    """``GET /api/v1/jobs/{id}/chunks``: the page's chunks, and the model that embedded them."""

    chunks: list[Chunk]
    model: str | None = None


# --- monitors ---------------------------------------------------------------------------------


class MonitorPageEntry(_Answer):
    url: str
    job_id: UUID


class Monitor(_Answer):
    """A monitor: ``GET /api/v1/monitors/{id}``."""

    id: UUID
    status: Literal["ACTIVE", "PAUSED"]
    urls: list[str]
    crawl: dict[str, Any] | None = None
    interval_seconds: float
    formats: list[str]
    ignore_selectors: list[str]
    callback_url: str | None
    pages: list[MonitorPageEntry]
    rounds: int
    last_run_at: datetime | None
    next_run_at: datetime | None
    created_at: datetime
    updated_at: datetime


class MonitorPage(_Answer):
    """``GET /api/v1/monitors``: a page of monitors, newest first."""

    monitors: list[Monitor]
    next_cursor: str | None


class Change(_Answer):
    """A change a monitor found, with its diff."""

    id: UUID
    monitor_id: UUID
    kind: Literal["changed", "added", "removed"]
    url: str
    job_id: UUID
    detected_at: datetime
    run: int | None
    previous_run: int | None
    previous_job_id: UUID | None
    diff: str | None
    diff_complete: bool | None
    metadata: dict[str, dict[str, Any]]


class ChangePage(_Answer):
    """``GET /api/v1/monitors/{id}/changes``: a page of changes, newest first."""

    changes: list[Change]
    next_cursor: str | None


class RunContent(_Answer):
    """An old run of a watched page, with the Markdown and text it read."""

    job_id: UUID
    run: int
    status: str
    http_status: int | None
    fetched_at: datetime
    content_run: int | None
    metadata: dict[str, Any]
    markdown: str
    text: str


class RunDiff(_Answer):
    """The diff between two runs of a page (``from_run``, ``to_run``: the API's ``from`` and
    ``to``)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    job_id: UUID
    from_run: int = Field(alias="from")
    to_run: int = Field(alias="to")
    diff: str
    complete: bool
    coarse: bool
    added_lines: int
    removed_lines: int
    metadata: dict[str, dict[str, Any]]


# --- keys (admin) -----------------------------------------------------------------------------


class ApiKey(_Answer):
    """An API key, without its secrets: ``GET /api/v1/keys``."""

    id: str
    name: str
    is_admin: bool
    requests_per_minute: int | None
    max_pending_jobs: int | None
    callback_url: str | None
    created_at: datetime
    revoked_at: datetime | None


class KeyWithSecret(ApiKey):
    """A key with its webhook signing secret (shown once)."""

    webhook_secret: str


class NewKey(KeyWithSecret):
    """A key just created, with its token (shown once)."""

    key: str
