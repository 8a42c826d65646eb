"""``POST /api/v1/web-search``: the web through the deployment's search engine (a SearXNG
instance), each result a job when formats are asked. ``GET /api/v1/search`` searches the
caller's own pages instead."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from taskcrawler.api.deps import CallerDep, ServicesDep
from taskcrawler.contract.base import ErrorOut
from taskcrawler.contract.web_search import WebSearchIn, WebSearchOut, WebSearchResultOut
from taskcrawler.domain.web_search import web_query

router = APIRouter(tags=["search"])

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "No search engine (or model) is configured."},
    502: {"model": ErrorOut, "description": "The search engine gave no usable answer."},
}


@router.post(
    "/api/v1/web-search",
    response_model=WebSearchOut,
    response_model_exclude_none=True,
    responses=ERRORS,
    summary="Search the web (TASKCRAWLER_SEARXNG_URL); with formats, each result is a job",
)
async def web_search(body: WebSearchIn, services: ServicesDep, caller: CallerDep) -> WebSearchOut:
    query = web_query(
        body.query,
        limit=body.limit,
        source=body.source,
        language=body.language,
        time_range=body.time_range,
        include_domains=body.include_domains,
        exclude_domains=body.exclude_domains,
    )
    asked = body.formats is not None or body.options is not None
    found = await services.web_search.search_and_submit(
        caller, query, body.job_options() if asked else None
    )
    return WebSearchOut(
        results=[
            WebSearchResultOut(
                url=item.result.url,
                title=item.result.title,
                description=item.result.description,
                position=item.result.position,
                published=item.result.published,
                image_url=item.result.image_url,
                job_id=item.job_id,
            )
            for item in found
        ]
    )
