"""Firecrawl-compatible ``/v1`` and ``/v2``: scrape, batch scrape, crawl and map in Firecrawl's
request and response shapes, so its SDKs work with a change of base URL
(docs/reference/firecrawl.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request

from taskcrawler.api.deps import CallerDep, ServicesDep
from taskcrawler.api.inputs import (
    FirecrawlBatchIn,
    FirecrawlCrawlIn,
    FirecrawlMapIn,
    FirecrawlScrapeIn,
)
from taskcrawler.api.schemas import (
    FirecrawlBatchStarted,
    FirecrawlBatchStatus,
    FirecrawlCrawlCancelled,
    FirecrawlCrawlStarted,
    FirecrawlCrawlStatus,
    FirecrawlDocument,
    FirecrawlErrorOut,
    FirecrawlLink,
    FirecrawlMapOutV1,
    FirecrawlMapOutV2,
    FirecrawlScrapeOut,
)
from taskcrawler.service.firecrawl import (
    CRAWL_PAGE,
    DEFAULT_TIMEOUT_MS,
    ScrapeSpec,
    Unsupported,
    formats_of,
)

router = APIRouter(tags=["firecrawl"])

#: Firecrawl's default ``maxAge`` in v2 (two days); v1 scrapes afresh unless told otherwise.
V2_DEFAULT_MAX_AGE_MS = 172_800_000
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {
        "model": FirecrawlErrorOut,
        "description": "Bad input, or a field TaskCrawler does not support (named).",
    },
    401: {"model": FirecrawlErrorOut, "description": "Missing or unknown API key."},
    408: {"model": FirecrawlErrorOut, "description": "Not scraped within `timeout`."},
    409: {"model": FirecrawlErrorOut, "description": "The URL's job is not finished."},
    429: {"model": FirecrawlErrorOut, "description": "Rate or pending-jobs limit."},
    500: {"model": FirecrawlErrorOut, "description": "The page could not be fetched."},
    503: {"model": FirecrawlErrorOut, "description": "The database is unavailable."},
}


async def _scrape(
    body: FirecrawlScrapeIn, services: ServicesDep, caller: CallerDep, default_max_age: int | None
) -> FirecrawlScrapeOut:
    spec = ScrapeSpec(
        url=body.url,
        formats=formats_of(body.formats or ["markdown"]),
        max_age_ms=body.maxAge if body.maxAge is not None else default_max_age,
        timeout_ms=body.timeout or DEFAULT_TIMEOUT_MS,
    )
    document = await services.firecrawl.scrape(caller, spec)
    return FirecrawlScrapeOut(data=FirecrawlDocument.model_validate(document))


async def _map(body: FirecrawlMapIn, services: ServicesDep, caller: CallerDep) -> list[str]:
    return await services.firecrawl.map(
        caller,
        body.url,
        limit=body.limit,
        search=body.search,
        sitemap=body.sitemap_mode(),
        allow_subdomains=bool(body.includeSubdomains),
    )


@router.post(
    "/v1/scrape",
    response_model=FirecrawlScrapeOut,
    response_model_exclude_none=True,
    responses=ERRORS,
    summary="Firecrawl v1: scrape a URL",
)
async def scrape_v1(
    body: FirecrawlScrapeIn, services: ServicesDep, caller: CallerDep
) -> FirecrawlScrapeOut:
    return await _scrape(body, services, caller, None)


@router.post(
    "/v2/scrape",
    response_model=FirecrawlScrapeOut,
    response_model_exclude_none=True,
    responses=ERRORS,
    summary="Firecrawl v2: scrape a URL",
)
async def scrape_v2(
    body: FirecrawlScrapeIn, services: ServicesDep, caller: CallerDep
) -> FirecrawlScrapeOut:
    return await _scrape(body, services, caller, V2_DEFAULT_MAX_AGE_MS)


@router.post(
    "/v1/map", response_model=FirecrawlMapOutV1, responses=ERRORS, summary="Firecrawl v1: map"
)
async def map_v1(
    body: FirecrawlMapIn, services: ServicesDep, caller: CallerDep
) -> FirecrawlMapOutV1:
    return FirecrawlMapOutV1(links=await _map(body, services, caller))


@router.post(
    "/v2/map", response_model=FirecrawlMapOutV2, responses=ERRORS, summary="Firecrawl v2: map"
)
async def map_v2(
    body: FirecrawlMapIn, services: ServicesDep, caller: CallerDep
) -> FirecrawlMapOutV2:
    links = await _map(body, services, caller)
    return FirecrawlMapOutV2(links=[FirecrawlLink(url=link) for link in links])


async def _start_batch(
    body: FirecrawlBatchIn, request: Request, services: ServicesDep, caller: CallerDep, version: str
) -> FirecrawlBatchStarted:
    valid = body.valid_urls()
    invalid = [url for url in body.urls if url not in set(valid)]
    if not valid:
        raise Unsupported("urls: none of them can be scraped")
    batch_id = await services.firecrawl.start_batch(
        caller, valid, formats_of(body.formats or ["markdown"]), body.maxAge
    )
    return FirecrawlBatchStarted(
        id=str(batch_id),
        url=f"{request.base_url}{version}/batch/scrape/{batch_id}",
        invalidURLs=invalid if body.ignoreInvalidURLs else None,
    )


async def _batch_status(
    batch_id: UUID, skip: int, request: Request, services: ServicesDep, caller: CallerDep
) -> FirecrawlBatchStatus:
    found = await services.firecrawl.batch_status(caller, batch_id, skip=skip)
    following = None
    if found.next_skip is not None:
        following = str(request.url.include_query_params(skip=found.next_skip))
    return FirecrawlBatchStatus(
        status="completed" if found.status == "completed" else "scraping",
        total=found.total,
        completed=found.completed,
        creditsUsed=found.completed,
        expiresAt=datetime.now(UTC) + timedelta(days=1),
        next=following,
        data=[FirecrawlDocument.model_validate(doc) for doc in found.documents],
    )


Skip = Annotated[int, Query(ge=0, le=1000)]


@router.post(
    "/v1/batch/scrape",
    response_model=FirecrawlBatchStarted,
    response_model_exclude_none=True,
    responses=ERRORS,
    summary="Firecrawl v1: start a batch scrape",
)
async def start_batch_v1(
    body: FirecrawlBatchIn, request: Request, services: ServicesDep, caller: CallerDep
) -> FirecrawlBatchStarted:
    return await _start_batch(body, request, services, caller, "v1")


@router.post(
    "/v2/batch/scrape",
    response_model=FirecrawlBatchStarted,
    response_model_exclude_none=True,
    responses=ERRORS,
    summary="Firecrawl v2: start a batch scrape",
)
async def start_batch_v2(
    body: FirecrawlBatchIn, request: Request, services: ServicesDep, caller: CallerDep
) -> FirecrawlBatchStarted:
    return await _start_batch(body, request, services, caller, "v2")


@router.get(
    "/v1/batch/scrape/{batch_id}",
    response_model=FirecrawlBatchStatus,
    response_model_exclude_none=True,
    responses={404: {"model": FirecrawlErrorOut}, **ERRORS},
    summary="Firecrawl v1: a batch scrape's status and documents",
)
async def batch_status_v1(
    batch_id: UUID, request: Request, services: ServicesDep, caller: CallerDep, skip: Skip = 0
) -> FirecrawlBatchStatus:
    return await _batch_status(batch_id, skip, request, services, caller)


@router.get(
    "/v2/batch/scrape/{batch_id}",
    response_model=FirecrawlBatchStatus,
    response_model_exclude_none=True,
    responses={404: {"model": FirecrawlErrorOut}, **ERRORS},
    summary="Firecrawl v2: a batch scrape's status and documents",
)
async def batch_status_v2(
    batch_id: UUID, request: Request, services: ServicesDep, caller: CallerDep, skip: Skip = 0
) -> FirecrawlBatchStatus:
    return await _batch_status(batch_id, skip, request, services, caller)


# --- crawl ------------------------------------------------------------------------------------


async def _start_crawl(
    body: FirecrawlCrawlIn, request: Request, services: ServicesDep, caller: CallerDep, version: str
) -> FirecrawlCrawlStarted:
    crawl_id = await services.firecrawl.start_crawl(
        caller,
        body.url,
        formats_of(body.formats()),
        limit=body.limit,
        max_depth=body.max_depth(),
        include_paths=body.includePaths,
        exclude_paths=body.excludePaths,
        allow_subdomains=body.allowSubdomains,
        allow_external=body.allowExternalLinks,
        sitemap=body.sitemap_mode(),
        max_age=body.max_age_seconds(),
    )
    return FirecrawlCrawlStarted(
        id=str(crawl_id), url=f"{request.base_url}{version}/crawl/{crawl_id}"
    )


async def _crawl_status(
    crawl_id: UUID,
    cursor: str | None,
    limit: int,
    request: Request,
    services: ServicesDep,
    caller: CallerDep,
) -> FirecrawlCrawlStatus:
    found = await services.firecrawl.crawl_status(caller, crawl_id, cursor=cursor, limit=limit)
    following = None
    if found.next_cursor is not None:
        following = str(request.url.include_query_params(cursor=found.next_cursor))
    return FirecrawlCrawlStatus(
        status=found.status,
        total=found.total,
        completed=found.completed,
        creditsUsed=found.completed,
        expiresAt=datetime.now(UTC) + timedelta(days=1),
        next=following,
        data=[FirecrawlDocument.model_validate(doc) for doc in found.documents],
    )


Cursor = Annotated[str | None, Query(max_length=200)]
PageSize = Annotated[int, Query(ge=1, le=CRAWL_PAGE, description="Documents per page.")]
CRAWL_ERRORS = {404: {"model": FirecrawlErrorOut}, **ERRORS}


@router.post(
    "/v1/crawl",
    response_model=FirecrawlCrawlStarted,
    responses=ERRORS,
    summary="Firecrawl v1: start a crawl",
)
async def start_crawl_v1(
    body: FirecrawlCrawlIn, request: Request, services: ServicesDep, caller: CallerDep
) -> FirecrawlCrawlStarted:
    return await _start_crawl(body, request, services, caller, "v1")


@router.post(
    "/v2/crawl",
    response_model=FirecrawlCrawlStarted,
    responses=ERRORS,
    summary="Firecrawl v2: start a crawl",
)
async def start_crawl_v2(
    body: FirecrawlCrawlIn, request: Request, services: ServicesDep, caller: CallerDep
) -> FirecrawlCrawlStarted:
    return await _start_crawl(body, request, services, caller, "v2")


@router.get(
    "/v1/crawl/{crawl_id}",
    response_model=FirecrawlCrawlStatus,
    response_model_exclude_none=True,
    responses=CRAWL_ERRORS,
    summary="Firecrawl v1: a crawl's status and documents",
)
async def crawl_status_v1(
    crawl_id: UUID,
    request: Request,
    services: ServicesDep,
    caller: CallerDep,
    cursor: Cursor = None,
    limit: PageSize = CRAWL_PAGE,
) -> FirecrawlCrawlStatus:
    return await _crawl_status(crawl_id, cursor, limit, request, services, caller)


@router.get(
    "/v2/crawl/{crawl_id}",
    response_model=FirecrawlCrawlStatus,
    response_model_exclude_none=True,
    responses=CRAWL_ERRORS,
    summary="Firecrawl v2: a crawl's status and documents",
)
async def crawl_status_v2(
    crawl_id: UUID,
    request: Request,
    services: ServicesDep,
    caller: CallerDep,
    cursor: Cursor = None,
    limit: PageSize = CRAWL_PAGE,
) -> FirecrawlCrawlStatus:
    return await _crawl_status(crawl_id, cursor, limit, request, services, caller)


@router.delete(
    "/v1/crawl/{crawl_id}",
    response_model=FirecrawlCrawlCancelled,
    responses=CRAWL_ERRORS,
    summary="Firecrawl v1: cancel a crawl",
)
async def cancel_crawl_v1(
    crawl_id: UUID, services: ServicesDep, caller: CallerDep
) -> FirecrawlCrawlCancelled:
    await services.firecrawl.cancel_crawl(caller, crawl_id)
    return FirecrawlCrawlCancelled()


@router.delete(
    "/v2/crawl/{crawl_id}",
    response_model=FirecrawlCrawlCancelled,
    responses=CRAWL_ERRORS,
    summary="Firecrawl v2: cancel a crawl",
)
async def cancel_crawl_v2(
    crawl_id: UUID, services: ServicesDep, caller: CallerDep
) -> FirecrawlCrawlCancelled:
    await services.firecrawl.cancel_crawl(caller, crawl_id)
    return FirecrawlCrawlCancelled()


__all__ = ["router"]
