"""Crawls: what starting one takes, and a crawl as every endpoint and its webhook show it."""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from taskcrawler.contract.base import (
    MAX_FORMATS_LISTED,
    MAX_INT32,
    Format,
    RequestModel,
)
from taskcrawler.contract.options import JOB_OPTIONS, JobOptionFields
from taskcrawler.domain.crawls import (
    DEFAULT_LIMIT,
    MAX_DEPTH,
    MAX_PATTERNS,
    WEBHOOK_EVENTS,
    Sitemap,
)
from taskcrawler.domain.jobs import DEFAULT_FORMATS
from taskcrawler.domain.scrape_options import DEFAULT_OPTIONS
from taskcrawler.domain.urls import MAX_URL_LENGTH
from taskcrawler.domain.views import CrawlView


def _default_formats() -> list[Format]:
    return cast(list[Format], list(DEFAULT_FORMATS))


CrawlEvent = Literal["crawl.page", "crawl.completed"]


def _default_events() -> list[CrawlEvent]:
    return ["crawl.completed"]


class CrawlScope(RequestModel):
    """Where a crawl goes: its start, its bounds, and what its callback URL is told of."""

    url: str = Field(
        max_length=MAX_URL_LENGTH,
        description="The start page (http or https); its host is the crawl's site.",
        examples=["https://example.com"],
    )
    max_depth: int | None = Field(
        None,
        ge=0,
        le=MAX_DEPTH,
        description="Link hops from the start page at most (sitemap pages count as one hop); "
        "default: no limit but `limit`.",
    )
    limit: int | None = Field(
        None,
        ge=1,
        le=MAX_INT32,
        description=f"Pages at most, the start included: default {DEFAULT_LIMIT:,} (or "
        "TASKCRAWLER_CRAWL_MAX_LIMIT when lower), at most TASKCRAWLER_CRAWL_MAX_LIMIT.",
    )
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
    allow_subdomains: bool = Field(False, description="Subdomains of the site are in scope.")
    allow_external: bool = Field(False, description="Every host is in scope.")
    sitemap: Sitemap = Field(
        "include",
        description="include: sitemaps and links; skip: links only; only: sitemap pages only.",
    )
    webhook_events: list[CrawlEvent] = Field(
        default_factory=_default_events,
        max_length=len(WEBHOOK_EVENTS),
        description="crawl.page: every page of the crawl once it is completed or failed (its "
        "job); crawl.completed: the crawl once nothing of it is left. Default: "
        "crawl.completed only.",
    )


# The scope's fields come first (a model lists its bases' fields from the last base on).
class CrawlIn(JobOptionFields, CrawlScope):
    """A crawl: its scope, and the job options every page of it is scraped with."""

    # A crawl always names its formats (its pages are jobs made with them), unlike a job,
    # whose formats left out may mean "those it has".
    formats: list[Format] = Field(
        default_factory=_default_formats,
        min_length=1,
        max_length=MAX_FORMATS_LISTED,
        description='What to extract of every page, as for a job; default ["metadata", '
        '"markdown"].',
    )

    def spec_fields(self) -> dict[str, Any]:
        """The crawl as the domain's spec takes it, by field name: its scope as given, and its
        pages' options read as a job's are (:meth:`job_options`), so that an option is
        converted in one place."""
        pages = self.job_options()
        fields = self.model_dump(include=set(CrawlScope.model_fields))
        fields.update((name, getattr(pages, name)) for name in JOB_OPTIONS)
        fields["options"] = pages.options or DEFAULT_OPTIONS
        return fields


class CrawlOut(CrawlView):
    """A crawl, as every endpoint and its webhook show it."""


class CrawlList(BaseModel):
    crawls: list[CrawlOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page.")
