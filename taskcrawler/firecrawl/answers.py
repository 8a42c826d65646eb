"""Firecrawl's answers (/v1, /v2), in Firecrawl's field names: the models its routes render.
TaskCrawler's own API's bodies are in :mod:`taskcrawler.contract`."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class FirecrawlDocument(BaseModel):
    """A scraped page as Firecrawl shows it: the formats asked for, and its metadata."""

    model_config = ConfigDict(extra="allow")

    markdown: str | None = None
    html: str | None = None
    rawHtml: str | None = None
    links: list[str] | None = None
    screenshot: str | None = Field(
        None,
        description="Where the PNG is served (GET /api/v1/jobs/{id}/screenshot, with the "
        "same API key).",
    )
    warning: str | None = Field(None, description="What the document lacks, and why.")
    summary: str | None = Field(None, description="The model's summary of the page.")
    # ``json`` (what the model or the schema's selectors read) is an extra field: a field of
    # that name would shadow BaseModel.json.
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


class FirecrawlSearchOutV1(BaseModel):
    success: bool = True
    data: list[dict[str, Any]] = Field(
        description="The results: url, title, description; with scrapeOptions, each also "
        "the formats of its document and its metadata."
    )
    warning: str | None = None


class FirecrawlSearchData(BaseModel):
    web: list[dict[str, Any]] | None = None
    news: list[dict[str, Any]] | None = None
    images: list[dict[str, Any]] | None = None


class FirecrawlSearchOutV2(BaseModel):
    success: bool = True
    data: FirecrawlSearchData
    warning: str | None = None


class FirecrawlExtractStarted(BaseModel):
    success: bool = True
    id: str
    url: str = Field(description="Where to read the extract's status.")
    invalidURLs: list[str] | None = None


class FirecrawlExtractStatus(BaseModel):
    success: bool = True
    status: Literal["processing", "completed", "failed"]
    data: Any = Field(None, description="The pages' answers, merged into one.")
    error: str | None = None
    warning: str | None = None
    sources: dict[str, list[str]] | None = Field(
        None, description='{"urls": the pages the answer was read from}.'
    )
    expiresAt: datetime


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


class FirecrawlCrawlStarted(BaseModel):
    success: bool = True
    id: str
    url: str = Field(description="Where to read the crawl's status.")


class FirecrawlCrawlStatus(BaseModel):
    success: bool = True
    status: Literal["scraping", "completed", "cancelled"]
    total: int = Field(description="Pages discovered so far.")
    completed: int = Field(description="Pages fetched (whatever their HTTP status).")
    creditsUsed: int
    expiresAt: datetime
    next: str | None = Field(None, description="The next page of documents, if any.")
    data: list[FirecrawlDocument]


class FirecrawlCrawlError(BaseModel):
    id: str = Field(description="The failed page's job.")
    timestamp: datetime | None = Field(description="When it failed.")
    url: str
    code: str | None = Field(description="The job's error code.")
    error: str


class FirecrawlCrawlErrors(BaseModel):
    errors: list[FirecrawlCrawlError] = Field(
        description="The crawl's failed pages, newest first (1,000 at most)."
    )
    robotsBlocked: list[str] = Field(description="Pages robots.txt kept the crawl from.")


class FirecrawlCrawlCancelled(BaseModel):
    success: bool = True
    status: Literal["cancelled"] = "cancelled"


class FirecrawlActiveCrawl(BaseModel):
    id: str
    teamId: str = Field(description="The API key's tenant.")
    url: str
    options: dict[str, Any] | None = Field(None, description="The crawl's TaskCrawler spec.")


class FirecrawlActiveCrawls(BaseModel):
    success: bool = True
    crawls: list[FirecrawlActiveCrawl] = Field(description="The key's running crawls.")


#: What a self-hosted TaskCrawler answers for credits and tokens: it counts none.
UNMETERED = 99_999_999


class FirecrawlCreditsV2(BaseModel):
    remainingCredits: int = UNMETERED
    planCredits: int | None = None
    billingPeriodStart: str | None = None
    billingPeriodEnd: str | None = None


class FirecrawlCreditsV1(BaseModel):
    remaining_credits: int = UNMETERED
    plan_credits: int | None = None
    billing_period_start: str | None = None
    billing_period_end: str | None = None


class FirecrawlTokensV2(BaseModel):
    remainingTokens: int = UNMETERED
    planTokens: int | None = None
    billingPeriodStart: str | None = None
    billingPeriodEnd: str | None = None


class FirecrawlTokensV1(BaseModel):
    remaining_tokens: int = UNMETERED
    plan_tokens: int | None = None
    billing_period_start: str | None = None
    billing_period_end: str | None = None


class FirecrawlUsage(BaseModel):
    """Credit or token usage: TaskCrawler meters neither, so there is always plenty left."""

    success: bool = True
    data: FirecrawlCreditsV2 | FirecrawlCreditsV1 | FirecrawlTokensV2 | FirecrawlTokensV1


class FirecrawlUsageHistory(BaseModel):
    success: bool = True
    periods: list[dict[str, Any]] = Field(
        default_factory=list, description="Always empty: TaskCrawler meters no usage."
    )


class FirecrawlConcurrency(BaseModel):
    success: bool = True
    concurrency: int = Field(description="The key's jobs being fetched now.")
    maxConcurrency: int = Field(
        description="The key's pending-jobs limit, else the deployment's, else the workers' "
        "concurrency."
    )


class FirecrawlQueueStatus(BaseModel):
    success: bool = True
    jobsInQueue: int = Field(description="The key's jobs not finished yet.")
    activeJobsInQueue: int = Field(description="Of those, the ones being fetched.")
    waitingJobsInQueue: int = Field(description="Of those, the ones waiting.")
    maxConcurrency: int
    mostRecentSuccess: datetime | None = Field(
        default=None, description="When a job of the key last completed; absent before the first."
    )
