"""Firecrawl-compatible ``/v1`` and ``/v2``: scrape, batch scrape, crawl and map in Firecrawl's
request and response shapes, so its SDKs work with a change of base URL
(docs/reference/firecrawl.md).

Both versions take the same requests and answer the same shapes but for three things: v2's
scrape reuses a result up to two days old unless told otherwise, its map lists ``{url}``
objects, and each version's status links point into itself. So every route is registered once
per version from one definition (:func:`_register`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request
from fastapi.types import DecoratedCallable
from starlette.responses import StreamingResponse

from taskcrawler.api.deps import CallerDep, ServicesDep
from taskcrawler.api.inputs import (
    FirecrawlBatchIn,
    FirecrawlCrawlIn,
    FirecrawlMapIn,
    FirecrawlScrapeIn,
    FirecrawlScrapeOptions,
)
from taskcrawler.api.schemas import (
    FirecrawlBatchStarted,
    FirecrawlBatchStatus,
    FirecrawlCrawlCancelled,
    FirecrawlCrawlError,
    FirecrawlCrawlErrors,
    FirecrawlCrawlStarted,
    FirecrawlCrawlStatus,
    FirecrawlDocument,
    FirecrawlErrorOut,
    FirecrawlMapOutV1,
    FirecrawlMapOutV2,
    FirecrawlScrapeOut,
)
from taskcrawler.api.streamed import json_with_list
from taskcrawler.service.firecrawl import (
    CRAWL_PAGE,
    DEFAULT_TIMEOUT_MS,
    PageOptions,
    ScrapeSpec,
    ScreenshotURL,
    Unsupported,
    page_options,
)

router = APIRouter(tags=["firecrawl"])

VERSIONS = ("v1", "v2")
#: Firecrawl's default ``maxAge`` in v2 (two days); v1 scrapes afresh unless told otherwise.
V2_DEFAULT_MAX_AGE_MS = 172_800_000
DEFAULT_MAX_AGE_MS: dict[str, int | None] = {"v1": None, "v2": V2_DEFAULT_MAX_AGE_MS}
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {
        "model": FirecrawlErrorOut,
        "description": "Bad input, or a field TaskCrawler does not support (named).",
    },
    401: {"model": FirecrawlErrorOut, "description": "Missing or unknown API key."},
    408: {"model": FirecrawlErrorOut, "description": "Not scraped within `timeout`."},
    409: {"model": FirecrawlErrorOut, "description": "The URL's job is not finished."},
    429: {"model": FirecrawlErrorOut, "description": "Rate or pending-jobs limit."},
    500: {
        "model": FirecrawlErrorOut,
        "description": "The page could not be fetched, or not rendered (render_unavailable).",
    },
    503: {"model": FirecrawlErrorOut, "description": "The database is unavailable."},
}
FOUND_ERRORS = {404: {"model": FirecrawlErrorOut}, **ERRORS}

Skip = Annotated[int, Query(ge=0, le=1000)]
Cursor = Annotated[str | None, Query(max_length=200)]
PageSize = Annotated[int, Query(ge=1, le=CRAWL_PAGE, description="Documents per page.")]


def _page(options: FirecrawlScrapeOptions | None, where: str = "") -> PageOptions:
    """The formats and ``waitFor`` of ``options``; a refusal names the field from ``where``."""
    if options is None:
        return page_options(["markdown"])
    try:
        return page_options(options.formats or ["markdown"], options.waitFor)
    except Unsupported as exc:
        raise Unsupported(f"{where}{exc}") from None


def _screenshot_url(request: Request) -> ScreenshotURL:
    """Screenshots are served by the jobs API, at an absolute URL as Firecrawl gives one."""
    return lambda job_id: str(request.url_for("job_screenshot", job_id=job_id))


def _progress(total: int, completed: int, documents: list[dict[str, Any]]) -> dict[str, Any]:
    """A batch's or a crawl's counts and documents, as Firecrawl's status shows them."""
    return {
        "total": total,
        "completed": completed,
        "creditsUsed": completed,
        "expiresAt": datetime.now(UTC) + timedelta(days=1),
        "data": [FirecrawlDocument.model_validate(doc) for doc in documents],
    }


def _next(request: Request, **where: object) -> str | None:
    """This URL with the query that reads the next page, when there is one."""
    name, value = next(iter(where.items()))
    return None if value is None else str(request.url.include_query_params(**{name: value}))


def _register(version: str) -> None:
    """Firecrawl's routes under ``/{version}``."""

    def route(
        method: str, path: str, name: str, model: Any, summary: str, *, found: bool = False
    ) -> Callable[[DecoratedCallable], DecoratedCallable]:
        return router.api_route(
            f"/{version}{path}",
            methods=[method],
            name=f"{name}_{version}",
            response_model=model,
            response_model_exclude_none=True,
            responses=FOUND_ERRORS if found else ERRORS,
            summary=f"Firecrawl {version}: {summary}",
        )

    @route("POST", "/scrape", "scrape", FirecrawlScrapeOut, "scrape a URL")
    async def scrape(
        body: FirecrawlScrapeIn, request: Request, services: ServicesDep, caller: CallerDep
    ) -> FirecrawlScrapeOut:
        spec = ScrapeSpec(
            url=body.url,
            page=_page(body),
            max_age_ms=body.maxAge if body.maxAge is not None else DEFAULT_MAX_AGE_MS[version],
            timeout_ms=body.timeout or DEFAULT_TIMEOUT_MS,
        )
        document = await services.firecrawl.scrape(caller, spec, _screenshot_url(request))
        return FirecrawlScrapeOut(data=FirecrawlDocument.model_validate(document))

    @route(
        "POST", "/map", "map", FirecrawlMapOutV1 if version == "v1" else FirecrawlMapOutV2, "map"
    )
    async def map_site(
        body: FirecrawlMapIn, services: ServicesDep, caller: CallerDep
    ) -> StreamingResponse:
        links = await services.firecrawl.map(
            caller,
            body.url,
            limit=body.limit,
            search=body.search,
            sitemap=body.sitemap_mode(),
            allow_subdomains=bool(body.includeSubdomains),
        )
        # The route's model, written a slice at a time: a map may list 100,000 URLs.
        if version == "v1":
            return json_with_list({"success": True}, "links", links)
        return json_with_list({"success": True}, "links", links, item=_link_object)

    @route("POST", "/batch/scrape", "start_batch", FirecrawlBatchStarted, "start a batch scrape")
    async def start_batch(
        body: FirecrawlBatchIn, request: Request, services: ServicesDep, caller: CallerDep
    ) -> FirecrawlBatchStarted:
        valid = body.valid_urls()
        invalid = [url for url in body.urls if url not in set(valid)]
        if not valid:
            raise Unsupported("urls: none of them can be scraped")
        batch_id = await services.firecrawl.start_batch(caller, valid, _page(body), body.maxAge)
        return FirecrawlBatchStarted(
            id=str(batch_id),
            url=f"{request.base_url}{version}/batch/scrape/{batch_id}",
            invalidURLs=invalid if body.ignoreInvalidURLs else None,
        )

    @route(
        "GET",
        "/batch/scrape/{batch_id}",
        "batch_status",
        FirecrawlBatchStatus,
        "a batch scrape's status and documents",
        found=True,
    )
    async def batch_status(
        batch_id: UUID, request: Request, services: ServicesDep, caller: CallerDep, skip: Skip = 0
    ) -> FirecrawlBatchStatus:
        found = await services.firecrawl.batch_status(
            caller, batch_id, _screenshot_url(request), skip=skip
        )
        return FirecrawlBatchStatus(
            status="completed" if found.status == "completed" else "scraping",
            **_progress(found.total, found.completed, found.documents),
            next=_next(request, skip=found.next_skip),
        )

    @route("POST", "/crawl", "start_crawl", FirecrawlCrawlStarted, "start a crawl")
    async def start_crawl(
        body: FirecrawlCrawlIn, request: Request, services: ServicesDep, caller: CallerDep
    ) -> FirecrawlCrawlStarted:
        crawl_id = await services.firecrawl.start_crawl(
            caller,
            body.url,
            _page(body.scrapeOptions, "scrapeOptions."),
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

    @route(
        "GET",
        "/crawl/{crawl_id}",
        "crawl_status",
        FirecrawlCrawlStatus,
        "a crawl's status and documents",
        found=True,
    )
    async def crawl_status(
        crawl_id: UUID,
        request: Request,
        services: ServicesDep,
        caller: CallerDep,
        cursor: Cursor = None,
        limit: PageSize = CRAWL_PAGE,
    ) -> FirecrawlCrawlStatus:
        found = await services.firecrawl.crawl_status(
            caller, crawl_id, _screenshot_url(request), cursor=cursor, limit=limit
        )
        return FirecrawlCrawlStatus(
            status=found.status,
            **_progress(found.total, found.completed, found.documents),
            next=_next(request, cursor=found.next_cursor),
        )

    @route(
        "GET",
        "/crawl/{crawl_id}/errors",
        "crawl_errors",
        FirecrawlCrawlErrors,
        "a crawl's failed pages, and those robots.txt refused",
        found=True,
    )
    async def crawl_errors(
        crawl_id: UUID, services: ServicesDep, caller: CallerDep
    ) -> FirecrawlCrawlErrors:
        found = await services.firecrawl.crawl_errors(caller, crawl_id)
        errors = [
            FirecrawlCrawlError(
                id=str(e.job_id), timestamp=e.finished_at, url=e.url, code=e.code, error=e.error
            )
            for e in found.errors
        ]
        return FirecrawlCrawlErrors(errors=errors, robotsBlocked=found.robots_blocked)

    @route(
        "DELETE",
        "/crawl/{crawl_id}",
        "cancel_crawl",
        FirecrawlCrawlCancelled,
        "cancel a crawl",
        found=True,
    )
    async def cancel_crawl(
        crawl_id: UUID, services: ServicesDep, caller: CallerDep
    ) -> FirecrawlCrawlCancelled:
        await services.firecrawl.cancel_crawl(caller, crawl_id)
        return FirecrawlCrawlCancelled()


for _version in VERSIONS:
    _register(_version)


def _link_object(url: str) -> dict[str, str]:
    """A link of Firecrawl's v2 map (FirecrawlLink)."""
    return {"url": url}


__all__ = ["router"]
