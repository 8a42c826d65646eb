"""The wire format of the HTTP API (v1): what requests may say, and every response's shape.
The first version's field names (``id``, ``url``, ``status``, …) are kept exactly: clients rely
on them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator

from taskcrawler.api.inputs import Instant, RequestModel
from taskcrawler.domain import InvalidURL, validate_url
from taskcrawler.domain.crawls import MAX_PATTERNS
from taskcrawler.domain.jobs import Created
from taskcrawler.domain.pages import StoredLink
from taskcrawler.domain.urls import MAX_URL_LENGTH
from taskcrawler.domain.views import JobView
from taskcrawler.domain.webhooks import DeliveryStatus
from taskcrawler.service.mapping import DEFAULT_MAP_LIMIT, MAX_SEARCH_CHARS

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


class RunOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

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
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    is_admin: bool
    requests_per_minute: int | None
    max_pending_jobs: int | None
    callback_url: str | None
    created_at: datetime
    revoked_at: datetime | None


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


class LinkOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    job_id: UUID
    url: str
    text: str | None
    rel: list[str]
    internal: bool
    nofollow: bool
    source_url: str | None = None


class LinkPage(BaseModel):
    links: list[LinkOut]
    next_cursor: int | None

    @classmethod
    def of(cls, links: list[StoredLink], limit: int) -> LinkPage:
        """A page of ``limit`` links; a full page may have a next one."""
        more = len(links) == limit
        return cls(
            links=[LinkOut.model_validate(link) for link in links],
            next_cursor=links[-1].id if more else None,
        )


class DeliveryOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: UUID = Field(description="Sent as X-TaskCrawler-Delivery; the same on every retry.")
    job_id: UUID
    event: str = Field(description="job.completed or job.failed")
    url: str = Field(description="The callback URL.")
    status: DeliveryStatus = Field(
        description="PENDING (due or in flight), DELIVERED, FAILED, or BLOCKED: never sent, "
        "because the callback URL was refused before connecting (a blocked address, or a URL "
        "no request can be made to; last_error says which)."
    )
    attempts: int = Field(
        description="POSTs sent so far, the one in flight included; a refused one is not one."
    )
    last_status_code: int | None = Field(description="The receiver's last HTTP status.")
    last_error: str | None = Field(description="The last failure: its code, then a message.")
    created_at: datetime
    next_attempt_at: datetime | None = Field(description="When a PENDING delivery is due.")
    delivered_at: datetime | None


class MapIn(RequestModel):
    url: str = Field(
        max_length=MAX_URL_LENGTH,
        description="The site's start page (http or https).",
        examples=["https://example.com"],
    )
    limit: int | None = Field(
        None,
        ge=1,
        description=f"At most this many URLs: default {DEFAULT_MAP_LIMIT:,}, at most "
        "TASKCRAWLER_MAP_MAX_LIMIT.",
    )
    sitemap: Literal["include", "skip", "only"] = Field(
        "include",
        description="include: sitemaps and the start page's links; skip: links only; "
        "only: sitemaps only.",
    )
    search: str | None = Field(
        None,
        max_length=MAX_SEARCH_CHARS,
        description="Keep the URLs that contain every word of it (case-insensitive).",
    )
    allow_subdomains: bool = Field(False, description="Subdomains of the site are in scope.")
    include_paths: list[str] = Field(
        default_factory=list,
        max_length=MAX_PATTERNS,
        description="RE2 patterns; a URL's path must contain a match of one of them.",
    )
    exclude_paths: list[str] = Field(
        default_factory=list,
        max_length=MAX_PATTERNS,
        description="RE2 patterns; a URL whose path contains a match of one is left out.",
    )


class MapOut(BaseModel):
    links: list[str] = Field(description="In-scope URLs, each once, as crawl keys.")
    warnings: list[str] = Field(
        default_factory=list,
        description="What could not be read (the start page, a sitemap) or a cap that was "
        "reached; the links are what was found anyway.",
    )


# --- Firecrawl-compatible answers (/v1, /v2) ---------------------------------------------------


class FirecrawlDocument(BaseModel):
    """A scraped page as Firecrawl shows it: the formats asked for, and its metadata."""

    model_config = ConfigDict(extra="allow")

    markdown: str | None = None
    html: str | None = None
    rawHtml: str | None = None
    links: list[str] | None = None
    metadata: dict[str, Any]


class FirecrawlScrapeOut(BaseModel):
    success: bool = True
    data: FirecrawlDocument


class FirecrawlLink(BaseModel):
    url: str


class FirecrawlMapOutV1(BaseModel):
    success: bool = True
    links: list[str]


class FirecrawlMapOutV2(BaseModel):
    success: bool = True
    links: list[FirecrawlLink]


class FirecrawlErrorOut(BaseModel):
    success: Literal[False] = False
    error: str = Field(description="What was refused, naming the field when one was.")
    details: list[Any] | None = Field(None, description="Validation errors, when any.")


class FirecrawlBatchStarted(BaseModel):
    success: bool = True
    id: str
    url: str = Field(description="Where to read the batch's status.")
    invalidURLs: list[str] | None = None


class FirecrawlBatchStatus(BaseModel):
    success: bool = True
    status: Literal["scraping", "completed"]
    total: int
    completed: int
    creditsUsed: int
    expiresAt: datetime
    next: str | None = Field(None, description="The next page of documents, if any.")
    data: list[FirecrawlDocument]
