"""``POST /api/v1/map``: a site's URLs from its sitemaps and its start page's links."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field

from taskcrawler.api.deps import CallerDep, get_services
from taskcrawler.domain.crawls import MAX_PATTERNS
from taskcrawler.domain.urls import MAX_URL_LENGTH
from taskcrawler.service.mapping import DEFAULT_MAP_LIMIT, MAX_SEARCH_CHARS, MapRefused

router = APIRouter(tags=["map"])


class MapIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

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


@router.post(
    "/api/v1/map",
    response_model=MapOut,
    responses={422: {"description": "Bad input, or a start URL that cannot be fetched."}},
    summary="A site's URLs, from its sitemaps and its start page's links, without scraping",
)
async def map_site(body: MapIn, request: Request, caller: CallerDep) -> MapOut:
    services = await get_services(request)
    mapper = services.mapper
    options: dict[str, Any] = body.model_dump(exclude={"url"})
    map_request = mapper.request(body.url, **options)  # InvalidCrawlSpec: 422 naming the field
    try:
        result = await mapper.map(map_request)
    except MapRefused as exc:
        raise HTTPException(422, str(exc)) from None
    return MapOut(links=result.links, warnings=result.warnings)


__all__ = ["router"]
