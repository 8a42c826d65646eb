"""What the API answers, as typed models.

The job is :class:`~taskcrawler.domain.views.JobView`, the very model the API renders; the
other answers mirror their models in ``taskcrawler.api.schemas`` field for field (a test keeps
them equal) without importing the server, so ``import taskcrawler.client`` stays light.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from taskcrawler.domain.jobs import JobStatus
from taskcrawler.domain.views import CrawlView, JobView

__all__ = [
    "Batch",
    "BatchJob",
    "Crawl",
    "CrawlPage",
    "ExportRecord",
    "Job",
    "JobPage",
    "JobStatus",
    "Link",
    "LinkPage",
    "MapResult",
    "Run",
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
