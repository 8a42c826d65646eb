"""The wire format of the HTTP API (v1). Field names of the seed are kept exactly."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator

from taskcrawler.domain import InvalidURL, Job, JobStatus, validate_url
from taskcrawler.domain.urls import MAX_URL_LENGTH


class JobCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        max_length=MAX_URL_LENGTH,
        description="An http(s) URL. Submitting a URL that already has a job returns that job.",
        examples=["https://example.com"],
    )

    @field_validator("url")
    @classmethod
    def _acceptable(cls, url: str) -> str:
        try:
            return validate_url(url)
        except InvalidURL as exc:
            raise ValueError(str(exc)) from None


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
    result: dict[str, Any] | None = Field(description="What the page says about itself.")

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls(
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
            result=job.result,
        )


class ErrorOut(BaseModel):
    detail: str
    dependency: str | None = None


class Health(BaseModel):
    status: str
    checks: dict[str, str] = Field(default_factory=dict)
