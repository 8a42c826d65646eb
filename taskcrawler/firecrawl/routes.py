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

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.routing import APIRoute
from fastapi.types import DecoratedCallable
from starlette.responses import StreamingResponse
from starlette.routing import Match

from taskcrawler.api.deps import ForeignCallerDep as CallerDep
from taskcrawler.api.streamed import json_with_list
from taskcrawler.contract.base import Id
from taskcrawler.domain.errors import NotFound
from taskcrawler.domain.web_search import SOURCES, TBS_RANGES, web_query
from taskcrawler.firecrawl.answers import (
    FirecrawlActiveCrawl,
    FirecrawlActiveCrawls,
    FirecrawlBatchStarted,
    FirecrawlBatchStatus,
    FirecrawlConcurrency,
    FirecrawlCrawlCancelled,
    FirecrawlCrawlError,
    FirecrawlCrawlErrors,
    FirecrawlCrawlStarted,
    FirecrawlCrawlStatus,
    FirecrawlCreditsV1,
    FirecrawlCreditsV2,
    FirecrawlDocument,
    FirecrawlErrorOut,
    FirecrawlExtractStarted,
    FirecrawlExtractStatus,
    FirecrawlMapOutV1,
    FirecrawlMapOutV2,
    FirecrawlQueueStatus,
    FirecrawlScrapeOut,
    FirecrawlSearchData,
    FirecrawlSearchOutV1,
    FirecrawlSearchOutV2,
    FirecrawlTokensV1,
    FirecrawlTokensV2,
    FirecrawlUsage,
    FirecrawlUsageHistory,
)
from taskcrawler.firecrawl.documents import ScreenshotURL
from taskcrawler.firecrawl.inputs import (
    FirecrawlBatchIn,
    FirecrawlCrawlIn,
    FirecrawlExtractIn,
    FirecrawlMapIn,
    FirecrawlScrapeIn,
    FirecrawlScrapeOptions,
    FirecrawlSearchIn,
    FirecrawlWebhook,
)
from taskcrawler.firecrawl.options import (
    DEFAULT_TIMEOUT_MS,
    PageOptions,
    ScrapeSpec,
    Unsupported,
    WebhookSpec,
    json_format,
    page_options,
    scrape_options,
    webhook_spec,
)
from taskcrawler.firecrawl.service import CRAWL_PAGE, CrawlErrors, FirecrawlService, SearchAnswer

router = APIRouter(tags=["firecrawl"])


async def get_firecrawl(request: Request) -> FirecrawlService:
    """The service the lifespan built beside the others (``app.state.firecrawl``)."""
    firecrawl: FirecrawlService = request.app.state.firecrawl
    return firecrawl


FirecrawlDep = Annotated[FirecrawlService, Depends(get_firecrawl)]

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


def _page(
    options: FirecrawlScrapeOptions | None,
    where: str = "",
    delay: float | None = None,
    max_concurrency: int | None = None,
) -> PageOptions:
    """The formats, ``waitFor`` and page options of ``options``; a refusal names the field
    from ``where``."""
    if options is None:
        options = FirecrawlScrapeOptions()
    location = options.location
    try:
        chosen = scrape_options(
            only_main_content=options.onlyMainContent,
            include_tags=options.includeTags,
            exclude_tags=options.excludeTags,
            headers=options.headers,
            skip_tls_verification=options.skipTlsVerification,
            country=location.country if location else None,
            languages=location.languages if location else None,
            remove_base64_images=options.removeBase64Images,
            block_ads=options.blockAds,
            parsers=options.parsers,
            delay=delay,
            max_concurrency=max_concurrency,
            mobile=options.mobile,
            actions=options.actions,
        )
        return page_options(
            options.formats or ["markdown"],
            options.waitFor,
            chosen,
            options.changeTrackingOptions,
            options.jsonOptions,
        )
    except Unsupported as exc:
        raise Unsupported(f"{where}{exc}") from None


def _left_out(urls: list[str], kept: list[str]) -> list[str]:
    """``urls`` that are not in ``kept``, in order (a batch holds up to 1,000: one set)."""
    kept_once = set(kept)
    return [url for url in urls if url not in kept_once]


def _webhook(webhook: FirecrawlWebhook | str | None) -> WebhookSpec | None:
    """Firecrawl's ``webhook``: a URL, or ``{url, headers, metadata, events}``."""
    if webhook is None:
        return None
    if isinstance(webhook, str):
        return webhook_spec(webhook)
    return webhook_spec(
        webhook.url,
        headers=webhook.headers,
        metadata=webhook.metadata,
        events=list(webhook.events) if webhook.events is not None else None,
    )


def _max_age_ms(asked: int | None, version: str, *, tracked: bool) -> int | None:
    """A scrape's ``maxAge``: 0 when it tracks changes (a change is only seen by scraping
    again, and the SDKs send a ``maxAge`` of their own by default), else as asked, else the
    version's default."""
    if tracked:
        return 0
    return asked if asked is not None else DEFAULT_MAX_AGE_MS[version]


def _untracked(page: PageOptions, where: str) -> PageOptions:
    """Batches and crawls do not track changes: refused, naming the field."""
    if page.tracking is not None:
        raise Unsupported(f"{where}formats: changeTracking is supported by scrape only")
    return page


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


def _errors_out(found: CrawlErrors) -> FirecrawlCrawlErrors:
    errors = [
        FirecrawlCrawlError(
            id=str(e.job_id), timestamp=e.finished_at, url=e.url, code=e.code, error=e.error
        )
        for e in found.errors
    ]
    return FirecrawlCrawlErrors(errors=errors, robotsBlocked=found.robots_blocked)


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
        body: FirecrawlScrapeIn, request: Request, firecrawl: FirecrawlDep, caller: CallerDep
    ) -> FirecrawlScrapeOut:
        page = _page(body)
        spec = ScrapeSpec(
            url=body.url,
            page=page,
            max_age_ms=_max_age_ms(body.maxAge, version, tracked=page.tracking is not None),
            timeout_ms=body.timeout or DEFAULT_TIMEOUT_MS,
        )
        document = await firecrawl.scrape(
            caller, spec, _screenshot_url(request), request.is_disconnected
        )
        return FirecrawlScrapeOut(data=FirecrawlDocument.model_validate(document))

    @route(
        "POST", "/map", "map", FirecrawlMapOutV1 if version == "v1" else FirecrawlMapOutV2, "map"
    )
    async def map_site(
        body: FirecrawlMapIn, firecrawl: FirecrawlDep, caller: CallerDep
    ) -> StreamingResponse:
        links = await firecrawl.map(
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
        body: FirecrawlBatchIn, request: Request, firecrawl: FirecrawlDep, caller: CallerDep
    ) -> FirecrawlBatchStarted:
        valid = body.valid_urls()
        invalid = _left_out(body.urls, valid)
        if not valid:
            raise Unsupported("urls: none of them can be scraped")
        batch_id = await firecrawl.start_batch(
            caller,
            valid,
            _untracked(_page(body), ""),
            body.maxAge,
            webhook=_webhook(body.webhook),
            api_url=str(request.base_url),
        )
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
        batch_id: Id, request: Request, firecrawl: FirecrawlDep, caller: CallerDep, skip: Skip = 0
    ) -> FirecrawlBatchStatus:
        found = await firecrawl.batch_status(caller, batch_id, _screenshot_url(request), skip=skip)
        return FirecrawlBatchStatus(
            status="completed" if found.status == "completed" else "scraping",
            **_progress(found.total, found.completed, found.documents),
            next=_next(request, skip=found.next_skip),
        )

    @route("POST", "/crawl", "start_crawl", FirecrawlCrawlStarted, "start a crawl")
    async def start_crawl(
        body: FirecrawlCrawlIn, request: Request, firecrawl: FirecrawlDep, caller: CallerDep
    ) -> FirecrawlCrawlStarted:
        crawl_id = await firecrawl.start_crawl(
            caller,
            body.url,
            _untracked(
                _page(
                    body.scrapeOptions,
                    "scrapeOptions.",
                    delay=body.delay,
                    max_concurrency=body.maxConcurrency,
                ),
                "scrapeOptions.",
            ),
            webhook=_webhook(body.webhook),
            api_url=str(request.base_url),
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

    @route("GET", "/crawl/active", "active_crawls", FirecrawlActiveCrawls, "the running crawls")
    async def active_crawls(firecrawl: FirecrawlDep, caller: CallerDep) -> FirecrawlActiveCrawls:
        crawls = await firecrawl.active_crawls(caller)
        return FirecrawlActiveCrawls(
            crawls=[
                FirecrawlActiveCrawl(
                    id=str(crawl.id),
                    teamId=crawl.owner or "anonymous",
                    url=crawl.url,
                    options=crawl.spec.public_dict(),
                )
                for crawl in crawls
            ]
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
        crawl_id: Id,
        request: Request,
        firecrawl: FirecrawlDep,
        caller: CallerDep,
        cursor: Cursor = None,
        limit: PageSize = CRAWL_PAGE,
    ) -> FirecrawlCrawlStatus:
        found = await firecrawl.crawl_status(
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
        crawl_id: Id, firecrawl: FirecrawlDep, caller: CallerDep
    ) -> FirecrawlCrawlErrors:
        return _errors_out(await firecrawl.crawl_errors(caller, crawl_id))

    @route(
        "GET",
        "/batch/scrape/{batch_id}/errors",
        "batch_errors",
        FirecrawlCrawlErrors,
        "a batch scrape's failed pages, and those robots.txt refused",
        found=True,
    )
    async def batch_errors(
        batch_id: Id, firecrawl: FirecrawlDep, caller: CallerDep
    ) -> FirecrawlCrawlErrors:
        return _errors_out(await firecrawl.batch_errors(caller, batch_id))

    @route("GET", "/team/credit-usage", "credit_usage", FirecrawlUsage, "credits left (unmetered)")
    async def credit_usage(caller: CallerDep) -> FirecrawlUsage:
        return FirecrawlUsage(
            data=FirecrawlCreditsV1() if version == "v1" else FirecrawlCreditsV2()
        )

    @route("GET", "/team/token-usage", "token_usage", FirecrawlUsage, "tokens left (unmetered)")
    async def token_usage(caller: CallerDep) -> FirecrawlUsage:
        return FirecrawlUsage(data=FirecrawlTokensV1() if version == "v1" else FirecrawlTokensV2())

    for kind in ("credit", "token"):

        @route(
            "GET",
            f"/team/{kind}-usage/historical",
            f"{kind}_usage_historical",
            FirecrawlUsageHistory,
            f"{kind} usage by period (none: unmetered)",
        )
        async def usage_history(caller: CallerDep, byApiKey: bool = False) -> FirecrawlUsageHistory:
            return FirecrawlUsageHistory()

    @route(
        "GET",
        "/team/queue-status",
        "queue_status",
        FirecrawlQueueStatus,
        "the key's jobs waiting and under way",
    )
    async def queue_status(firecrawl: FirecrawlDep, caller: CallerDep) -> FirecrawlQueueStatus:
        counts = await firecrawl.queue(caller)
        return FirecrawlQueueStatus(
            jobsInQueue=counts.pending + counts.processing,
            activeJobsInQueue=counts.processing,
            waitingJobsInQueue=counts.pending,
            maxConcurrency=firecrawl.max_concurrency(caller),
            mostRecentSuccess=counts.last_completed_at,
        )

    @route(
        "GET",
        "/concurrency-check",
        "concurrency_check",
        FirecrawlConcurrency,
        "the key's jobs under way, and how many may be",
    )
    async def concurrency_check(firecrawl: FirecrawlDep, caller: CallerDep) -> FirecrawlConcurrency:
        counts = await firecrawl.queue(caller)
        return FirecrawlConcurrency(
            concurrency=counts.processing,
            maxConcurrency=firecrawl.max_concurrency(caller),
        )

    @route(
        "POST",
        "/search",
        "search",
        FirecrawlSearchOutV1 if version == "v1" else FirecrawlSearchOutV2,
        "search the web (TASKCRAWLER_SEARXNG_URL), each result scraped with scrapeOptions",
    )
    async def search(
        body: FirecrawlSearchIn, request: Request, firecrawl: FirecrawlDep, caller: CallerDep
    ) -> FirecrawlSearchOutV1 | FirecrawlSearchOutV2:
        page = _scraped(body.scrapeOptions)
        sources = _sources(body.sources) if version == "v2" else ("web",)
        queries = {
            source: web_query(
                body.query,
                limit=body.limit,
                source=source,
                language=_language(body.lang, body.country),
                time_range=_time_range(body.tbs),
                include_domains=body.includeDomains,
                exclude_domains=body.excludeDomains,
            )
            for source in sources
        }
        answers = await firecrawl.search_sources(
            caller,
            queries,
            page,
            timeout_ms=body.timeout or DEFAULT_TIMEOUT_MS,
            screenshot_url=_screenshot_url(request),
            gone=request.is_disconnected,
        )
        warning = "; ".join(a.warning for a in answers.values() if a.warning) or None
        if version == "v1":
            return FirecrawlSearchOutV1(data=_search_items(answers["web"], "web"), warning=warning)
        data = FirecrawlSearchData(
            **{source: _search_items(answer, source) for source, answer in answers.items()}
        )
        return FirecrawlSearchOutV2(data=data, warning=warning)

    @route(
        "POST",
        "/extract",
        "start_extract",
        FirecrawlExtractStarted,
        "read one schema or prompt from several pages (TASKCRAWLER_LLM_URL)",
    )
    async def start_extract(
        body: FirecrawlExtractIn, request: Request, firecrawl: FirecrawlDep, caller: CallerDep
    ) -> FirecrawlExtractStarted:
        valid = body.valid_urls()
        if not valid:
            raise Unsupported("urls: none of them can be scraped")
        asked = {
            "schema": body.json_schema,
            "prompt": body.prompt,
            "systemPrompt": body.systemPrompt,
        }
        json = json_format({k: v for k, v in asked.items() if v is not None}, "extract")
        page = _page(body.scrapeOptions, "scrapeOptions.")
        extract_id = await firecrawl.start_extract(caller, valid, json, page)
        # Not those left out of ``valid``: it holds each URL normalised, once.
        invalid = body.invalid_urls()
        return FirecrawlExtractStarted(
            id=str(extract_id),
            url=f"{request.base_url}{version}/extract/{extract_id}",
            invalidURLs=invalid if body.ignoreInvalidURLs else None,
        )

    @route(
        "GET",
        "/extract/{extract_id}",
        "extract_status",
        FirecrawlExtractStatus,
        "an extract's status and answer",
        found=True,
    )
    async def extract_status(
        extract_id: Id, firecrawl: FirecrawlDep, caller: CallerDep
    ) -> FirecrawlExtractStatus:
        found = await firecrawl.extract_status(caller, extract_id)
        return FirecrawlExtractStatus(
            status=found.status,
            data=found.data,
            error=found.error,
            warning=found.warning,
            sources={"urls": found.sources} if found.sources is not None else None,
            expiresAt=datetime.now(UTC) + timedelta(days=1),
        )

    @route(
        "DELETE",
        "/crawl/{crawl_id}",
        "cancel_crawl",
        FirecrawlCrawlCancelled,
        "cancel a crawl",
        found=True,
    )
    async def cancel_crawl(
        crawl_id: Id, firecrawl: FirecrawlDep, caller: CallerDep
    ) -> FirecrawlCrawlCancelled:
        await firecrawl.cancel_crawl(caller, crawl_id)
        return FirecrawlCrawlCancelled()


for _version in VERSIONS:
    _register(_version)


def _not_offered(version: str) -> None:
    @router.api_route(
        f"/{version}/{{rest:path}}",
        methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        include_in_schema=False,
    )
    async def not_offered(rest: str, request: Request) -> None:
        """Firecrawl's other routes (agent, browser, deep research, …): a Firecrawl error
        body saying so, rather than a bare 404. Registered after every route of its version.
        A route offered with another method (``GET /v2/scrape``) is a 405 naming those."""
        if allowed := _methods_offered(request):
            raise HTTPException(
                405,
                f"/{version}/{rest[:100]} takes {', '.join(allowed)}",
                headers={"Allow": ", ".join(allowed)},
            )
        raise NotFound(f"/{version}/{rest[:100]} is a Firecrawl route TaskCrawler does not offer")


for _version in VERSIONS:
    _not_offered(_version)


def _methods_offered(request: Request) -> list[str]:
    """The methods of this version's routes whose path is the request's, but this catch-all's."""
    path_only = {**request.scope, "method": ""}
    allowed: set[str] = set()
    for candidate in router.routes:
        if (
            isinstance(candidate, APIRoute)
            and not candidate.path.endswith("{rest:path}")
            and candidate.matches(path_only)[0] is not Match.NONE
        ):
            allowed |= candidate.methods or set()
    return sorted(allowed)


def _scraped(options: FirecrawlScrapeOptions | None) -> PageOptions | None:
    """A search's ``scrapeOptions``: None (results only) unless it asks for formats."""
    if options is None or not options.formats:
        return None
    return _page(options, "scrapeOptions.")


def _sources(asked: list[str | dict[str, Any]] | None) -> tuple[str, ...]:
    """v2's ``sources`` (names or ``{"type": …}``), each once; default the web."""
    names = [item.get("type") if isinstance(item, dict) else item for item in asked or ["web"]]
    for index, name in enumerate(names):
        if name not in SOURCES:
            raise Unsupported(f"sources[{index}]: {name!r} is not one of {', '.join(SOURCES)}")
    return tuple(dict.fromkeys(str(name) for name in names))


def _language(lang: str | None, country: str | None) -> str | None:
    """v1's ``lang`` and ``country`` as one language tag (en-US) for the search engine."""
    if not lang:
        return None
    return f"{lang}-{country.upper()}" if country and "-" not in lang else lang


def _time_range(tbs: str | None) -> str | None:
    """Google's ``tbs`` (qdr:d, qdr:w, qdr:m, qdr:y) as a time range; others are refused."""
    if not tbs:
        return None
    if tbs not in TBS_RANGES:
        raise Unsupported(f"tbs: {tbs[:40]!r}: TaskCrawler takes {', '.join(TBS_RANGES)}")
    return TBS_RANGES[tbs]


def _search_items(answer: SearchAnswer, source: str) -> list[dict[str, Any]]:
    """A search's results as Firecrawl lists them: the result's fields, and with
    ``scrapeOptions`` its document's."""
    items = []
    for result, document in answer.results:
        item: dict[str, Any] = {"url": result.url, "title": result.title}
        if source == "images":
            item |= {"imageUrl": result.image_url, "position": result.position}
        elif source == "news":
            item |= {"snippet": result.description, "date": result.published}
            item["position"] = result.position
        else:
            item |= {"description": result.description, "position": result.position}
        if document is not None:
            item |= FirecrawlDocument.model_validate(document).model_dump(exclude_none=True)
        items.append({key: value for key, value in item.items() if value is not None})
    return items


def _link_object(url: str) -> dict[str, str]:
    """A link of Firecrawl's v2 map (FirecrawlLink)."""
    return {"url": url}


__all__ = ["router"]
