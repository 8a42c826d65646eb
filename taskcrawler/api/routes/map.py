"""``POST /api/v1/map``: a site's URLs from its sitemaps and its start page's links."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.responses import StreamingResponse

from taskcrawler.api.deps import CallerDep, ServicesDep
from taskcrawler.api.streamed import json_with_list
from taskcrawler.contract.maps import MapIn, MapOut

router = APIRouter(tags=["map"])


@router.post(
    "/api/v1/map",
    response_model=MapOut,
    responses={422: {"description": "Bad input, or a start URL that cannot be fetched."}},
    summary="A site's URLs, from its sitemaps and its start page's links, without scraping",
)
async def map_site(body: MapIn, services: ServicesDep, caller: CallerDep) -> StreamingResponse:
    mapper = services.mapper
    options: dict[str, Any] = body.model_dump(exclude={"url"})
    map_request = mapper.request(body.url, **options)  # InvalidCrawlSpec: 422 naming the field
    result = await mapper.map(map_request)  # MapRefused: 422
    # MapOut, written a slice at a time: a map may list 100,000 URLs.
    return json_with_list({"warnings": result.warnings}, "links", result.links)


__all__ = ["router"]
