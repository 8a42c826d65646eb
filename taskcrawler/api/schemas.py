"""The wire format of the HTTP API (v1). Field names of the seed are kept exactly."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args
from uuid import UUID

from pydantic import BaseModel, Field, field_validator

from taskcrawler.api.inputs import Instant, RequestModel
from taskcrawler.domain import InvalidURL, Job, JobStatus, validate_url
from taskcrawler.domain.keys import ApiKey
from taskcrawler.domain.urls import MAX_URL_LENGTH

Format = Literal["metadata", "markdown", "text", "html", "links"]
#: Entries ``formats`` may list, repeats included (they are dropped): each format a few times
#: over is a client's slip; more is not a list of formats.
MAX_FORMATS_LISTED = 4 * len(get_args(Format))
FinishedStatus = Literal["FAILED", "COMPLETED", "CANCELLED"]
FAILED: FinishedStatus = "FAILED"
MAX_BATCH = 1000
#: Largest value of an INTEGER column on every backend; bigger ones are refused, not overflowed.
MAX_INT32 = 2**31 - 1
#: A century: older than any job can be, and still a date (timedelta arithmetic overflows later).
MAX_AGE_SECONDS = 100 * 365 * 24 * 3600


def _checked_url(url: str) -> str:
    try:
        return validate_url(url)
    except InvalidURL as exc:
        raise ValueError(str(exc)) from None


class JobOptionsIn(RequestModel):
    formats: list[Format] | None = Field(
        None,
        max_length=MAX_FORMATS_LISTED,
        description='What to extract; default ["metadata"]. Markdown, text, html and links '
        "are kept for GET /api/v1/jobs/{id}/content and /links. Each is kept once, in the "
        "order given.",
    )
    callback_url: str | None = Field(
        None,
        max_length=MAX_URL_LENGTH,
        description="Gets a signed POST when the job completes or fails.",
    )
    max_age: float | None = Field(
        None,
        ge=0,
        le=MAX_AGE_SECONDS,
        description="Seconds. If the URL already has a finished job older than this, it is "
        "scraped again (same id, a new run); a younger one is returned as it is.",
    )

    @field_validator("callback_url")
    @classmethod
    def _callback_acceptable(cls, url: str | None) -> str | None:
        return None if url is None else _checked_url(url)

    @field_validator("formats")
    @classmethod
    def _each_once(cls, formats: list[Format] | None) -> list[Format] | None:
        return None if formats is None else list(dict.fromkeys(formats))


class JobCreate(JobOptionsIn):
    url: str = Field(
        max_length=MAX_URL_LENGTH,
        description="An http(s) URL. Submitting a URL that already has a job returns that job.",
        examples=["https://example.com"],
    )

    @field_validator("url")
    @classmethod
    def _acceptable(cls, url: str) -> str:
        return _checked_url(url)


class BatchCreate(JobOptionsIn):
    urls: list[str] = Field(min_length=1, max_length=MAX_BATCH, description="Up to 1,000 URLs.")

    @field_validator("urls")
    @classmethod
    def _all_acceptable(cls, urls: list[str]) -> list[str]:
        problems = []
        for index, url in enumerate(urls):
            try:
                validate_url(url)
            except InvalidURL as exc:
                problems.append(f"urls[{index}]: {exc}")
        if problems:
            raise ValueError("; ".join(problems[:20]))
        return urls


class JobOut(BaseModel):
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
    next_attempt_at: datetime | None = Field(description="When a scheduled retry is due.")
    formats: list[str]
    run_count: int = Field(description="Earlier runs of this job (re-scrapes, retries).")
    unchanged: bool = Field(description="The last run got 304 Not Modified: result kept.")
    result: dict[str, Any] | None = Field(description="What the page says about itself.")

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls(**_job_fields(job))


def _job_fields(job: Job) -> dict[str, Any]:
    return dict(
        id=job.id,
        url=job.url,
        status=job.status,
        retry_count=job.retry_count,
        scraped_title=job.scraped_title,
        error_log=job.error_log,
        error_code=job.error_code,
        http_status=job.http_status,
        final_url=job.final_url,
        content_type=job.content_type,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        next_attempt_at=job.next_attempt_at,
        formats=list(job.formats),
        run_count=job.run_count,
        unchanged=job.unchanged,
        result=job.result,
    )


class BatchItem(JobOut):
    created: bool = Field(description="False when the URL already had a job.")

    @classmethod
    def of_created(cls, job: Job, *, created: bool) -> BatchItem:
        return cls(**_job_fields(job), created=created)


class BatchOut(BaseModel):
    jobs: list[BatchItem]
    created: int
    existing: int


class JobPage(BaseModel):
    jobs: list[JobOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page.")


class RetryFilter(RequestModel):
    status: list[FinishedStatus] = Field(default_factory=lambda: [FAILED])
    host: str | None = Field(None, max_length=255)
    error_code: str | None = Field(None, max_length=64)
    created_after: Instant | None = None
    created_before: Instant | None = None


class RetryOut(BaseModel):
    restarted: int
    ids: list[UUID]


class RunOut(BaseModel):
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


class KeyCreate(RequestModel):
    name: str = Field(min_length=1, max_length=200)
    is_admin: bool = False
    requests_per_minute: int | None = Field(None, ge=1, le=MAX_INT32)
    max_pending_jobs: int | None = Field(None, ge=1, le=MAX_INT32)
    callback_url: str | None = Field(None, max_length=MAX_URL_LENGTH)

    @field_validator("callback_url")
    @classmethod
    def _callback_acceptable(cls, url: str | None) -> str | None:
        return None if url is None else _checked_url(url)


class KeyOut(BaseModel):
    id: str
    name: str
    is_admin: bool
    requests_per_minute: int | None
    max_pending_jobs: int | None
    callback_url: str | None
    created_at: datetime
    revoked_at: datetime | None

    @classmethod
    def of(cls, key: ApiKey) -> KeyOut:
        return cls(
            id=key.id,
            name=key.name,
            is_admin=key.is_admin,
            requests_per_minute=key.requests_per_minute,
            max_pending_jobs=key.max_pending_jobs,
            callback_url=key.callback_url,
            created_at=key.created_at,
            revoked_at=key.revoked_at,
        )


class KeyWithSecret(KeyOut):
    webhook_secret: str = Field(
        description="HMAC-SHA256 key that signs this key's webhooks. Shown once; store it now."
    )


class KeyCreated(KeyWithSecret):
    key: str = Field(description="The secret token. Shown once; store it now.")


class ErrorOut(BaseModel):
    detail: str
    dependency: str | None = None


class Health(BaseModel):
    status: str
    checks: dict[str, str] = Field(default_factory=dict)
