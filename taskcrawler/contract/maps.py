"""``POST /api/v1/map``: a site's URLs, without scraping them."""

from __future__ import annotations

from pydantic import BaseModel, Field

from taskcrawler.contract.base import MAX_INT32, RequestModel
from taskcrawler.domain.crawls import MAX_PATTERNS, Sitemap
from taskcrawler.domain.crawls.discovery import DEFAULT_MAP_LIMIT, MAX_SEARCH_CHARS
from taskcrawler.domain.urls import MAX_URL_LENGTH


class MapIn(RequestModel):
    url: str = Field(
        max_length=MAX_URL_LENGTH,
        description="The site's start page (http or https).",
        examples=["https://example.com"],
    )
    limit: int | None = Field(
        None,
        ge=1,
        # Bounded here too, so that a value past 64 bits is refused, not carried on to the
        # settings' cap by the MCP tool's client (whose JSON encoder cannot write it).
        le=MAX_INT32,
        description=f"At most this many URLs: default {DEFAULT_MAP_LIMIT:,}, at most "
        "TASKCRAWLER_MAP_MAX_LIMIT.",
    )
    sitemap: Sitemap = Field(
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
