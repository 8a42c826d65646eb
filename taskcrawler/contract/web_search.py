"""``POST /api/v1/web-search``: the web, through the deployment's search engine."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, Field

from taskcrawler.contract.options import JobOptionsIn
from taskcrawler.domain.web_search import DEFAULT_RESULTS as DEFAULT_WEB_RESULTS
from taskcrawler.domain.web_search import MAX_QUERY_CHARS
from taskcrawler.domain.web_search import MAX_RESULTS as MAX_WEB_RESULTS


class WebSearchIn(JobOptionsIn):
    """``POST /api/v1/web-search``: the web, through the deployment's search engine."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to search.")
    limit: int = Field(DEFAULT_WEB_RESULTS, ge=1, le=MAX_WEB_RESULTS, description="Results.")
    source: Literal["web", "news", "images"] = Field(
        "web", description="The engine's category: web pages, news, or images."
    )
    language: str | None = Field(
        None, max_length=20, description="A language tag the engine filters by (en, de-CH)."
    )
    time_range: Literal["day", "week", "month", "year"] | None = Field(
        None, description="Only results this recent."
    )
    include_domains: list[Annotated[str, Field(max_length=253)]] | None = Field(
        None, max_length=50, description="Only results on these domains (and their subdomains)."
    )
    exclude_domains: list[Annotated[str, Field(max_length=253)]] | None = Field(
        None, max_length=50, description="No results on these domains."
    )


class WebSearchResultOut(BaseModel):
    url: str
    title: str
    description: str
    position: int
    published: str | None = None
    image_url: str | None = None
    job_id: UUID | None = Field(None, description="The result's job, when formats were asked.")


class WebSearchOut(BaseModel):
    results: list[WebSearchResultOut]
