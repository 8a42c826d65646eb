"""The job as clients see it: the body of ``GET /api/v1/jobs/{id}`` and of every webhook.

One model for both, derived from :class:`~taskcrawler.domain.jobs.Job` by attribute, so a field
added to the view is shown by the API and sent to callbacks alike. The first version's fields
(``id``, ``url``, ``status``, ``retry_count``, ``scraped_title``, ``error_log``) are kept exactly:
clients rely on them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Self
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator

from taskcrawler.domain.crawls import Crawl, Sitemap
from taskcrawler.domain.jobs import Job, JobStatus
from taskcrawler.domain.rendering import RenderRequest


class JobView(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: UUID
    url: str
    status: JobStatus
    retry_count: int
    scraped_title: str | None = Field(description="The page's <title>.")
    error_log: str | None = Field(description="The last error: its code, then a message.")
    error_code: str | None = Field(description="Stable code of the last error, e.g. http_404.")
    http_status: int | None
    final_url: str | None = Field(description="The URL after redirects.")
    content_type: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    fetched_at: datetime | None = Field(
        None,
        description="When the page its result was made from was fetched: a format added later "
        "is made from that stored copy, and max_age counts from here.",
    )
    next_attempt_at: datetime | None = Field(description="When a scheduled retry is due.")
    formats: list[str] = Field(
        description="What the job extracts: every format asked for its URL so far."
    )
    run_count: int = Field(description="Earlier runs of this job (re-scrapes, retries).")
    unchanged: bool = Field(description="The last run got 304 Not Modified: result kept.")
    result: dict[str, Any] | None = Field(description="What the page says about itself.")
    render: str = Field("never", description="never, auto or always.")
    render_options: dict[str, Any] | None = Field(
        None, description="How the page is rendered, as asked (null: the defaults)."
    )

    @field_validator("render_options", mode="before")
    @classmethod
    def _as_asked(cls, options: object) -> object:
        return options.to_json() if isinstance(options, RenderRequest) else options

    crawl_id: UUID | None = Field(None, description="The crawl this job is a page of.")
    depth: int | None = Field(None, description="A crawl page's link hops from the start.")

    @classmethod
    def of(cls, job: Job) -> Self:
        return cls.model_validate(job)


def job_document(job: Job) -> dict[str, Any]:
    """The job as JSON values, exactly as the API encodes it: a webhook's payload."""
    return JobView.of(job).model_dump(mode="json")


class CrawlView(BaseModel):
    """A crawl and its pages' counts, taken at once: ``discovered`` = ``pending`` +
    ``completed`` + ``failed`` + ``cancelled`` (``pending`` includes the pages being fetched,
    ``processing``). The body of ``GET /api/v1/crawls/{id}`` and of ``crawl.completed``."""

    id: UUID
    url: str
    status: Literal["RUNNING", "COMPLETED", "CANCELLED"]
    discovered: int
    pending: int
    processing: int
    completed: int
    failed: int
    cancelled: int
    created_at: datetime
    finished_at: datetime | None
    max_depth: int | None
    limit: int
    sitemap: Sitemap
    formats: list[str] = Field(default_factory=list, description="Extracted of every page.")
    render: str = Field("never", description="How every page is rendered: never, auto, always.")
    max_age: float | None = Field(
        None, description="Seconds: a page scraped more recently than this is reused."
    )
    webhook_events: list[str] = Field(
        default_factory=list, description="What the callback URL is told of."
    )

    @classmethod
    def of(cls, crawl: Crawl) -> Self:
        counts = crawl.counts
        return cls(
            id=crawl.id,
            url=crawl.url,
            status=crawl.status.value,
            discovered=counts.discovered,
            pending=counts.pending,
            processing=counts.processing,
            completed=counts.completed,
            failed=counts.failed,
            cancelled=counts.cancelled,
            created_at=crawl.created_at,
            finished_at=crawl.finished_at,
            max_depth=crawl.spec.max_depth,
            limit=crawl.spec.limit,
            sitemap=crawl.spec.sitemap.value,
            formats=list(crawl.spec.pages.formats),
            render=crawl.spec.pages.render,
            max_age=crawl.spec.pages.max_age,
            webhook_events=list(crawl.spec.webhook_events),
        )


def crawl_document(crawl: Crawl) -> dict[str, Any]:
    """The crawl as JSON values, exactly as the API encodes it: its webhook's payload."""
    return CrawlView.of(crawl).model_dump(mode="json")
