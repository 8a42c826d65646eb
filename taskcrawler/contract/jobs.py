"""Jobs: submitting one or a batch, a job and its runs, and bulk retries and cancels."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator

from taskcrawler.contract.base import (
    FAILED,
    MAX_BATCH,
    FinishedStatus,
    Instant,
    RequestModel,
    checked_url,
)
from taskcrawler.contract.options import JobOptionsIn
from taskcrawler.domain import InvalidURL, validate_url
from taskcrawler.domain.jobs import Created, JobRun
from taskcrawler.domain.urls import MAX_URL_LENGTH
from taskcrawler.domain.views import JobView


class JobCreate(JobOptionsIn):
    url: str = Field(
        max_length=MAX_URL_LENGTH,
        description="An http(s) URL. Submitting a URL that already has a job returns that job.",
        examples=["https://example.com"],
    )

    @field_validator("url")
    @classmethod
    def _acceptable(cls, url: str) -> str:
        return checked_url(url)


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


class JobOut(JobView):
    """A job, as every endpoint and webhook shows it."""


class BatchItem(JobOut):
    created: bool = Field(description="False when the URL already had a job.")

    @classmethod
    def of_created(cls, created: Created) -> BatchItem:
        # Constructed from values the job's view has just validated.
        return cls.model_construct(**dict(JobOut.of(created.job)), created=created.created)


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


CancellableStatus = Literal["PENDING", "PROCESSING"]


class CancelFilter(RequestModel):
    """Which jobs a bulk cancel stops: those matching every field given (at least one)."""

    ids: list[UUID] = Field(default_factory=list, max_length=MAX_BATCH)
    batch_id: UUID | None = Field(None, description="A batch scrape's jobs (/v1/batch/scrape).")
    crawl_id: UUID | None = Field(None, description="A crawl's pages.")
    status: list[CancellableStatus] = Field(
        default_factory=list, max_length=2, description="Default: PENDING and PROCESSING."
    )
    host: str | None = Field(None, max_length=255)
    created_after: Instant | None = None
    created_before: Instant | None = None


class CancelOut(BaseModel):
    cancelled: int
    ids: list[UUID] = Field(description="The jobs this call cancelled, oldest first.")
    more: bool = Field(
        description="More jobs matched than one call cancels (10,000): call it again."
    )


class RunOut(JobRun):
    """An earlier run of a job, as the API shows it."""

    model_config = ConfigDict(from_attributes=True, frozen=False)
