"""The tools, their input schemas (generated from the API's own request models, so an agent is
refused exactly what a client is), and the MCP server that lists and runs them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types
import orjson
from mcp.server import Server, ServerRequestContext
from pydantic import BaseModel, Field, ValidationError

from taskcrawler import __version__
from taskcrawler.client import AsyncTaskCrawler, Job, JobStatus, TaskCrawlerError
from taskcrawler.contract.base import Format, Id, RequestModel
from taskcrawler.contract.crawls import CrawlIn
from taskcrawler.contract.jobs import JobCreate
from taskcrawler.contract.maps import MapIn
from taskcrawler.contract.search import SearchIn

log = logging.getLogger(__name__)

#: The longest a scrape tool call waits for its job: an agent's call should not hang.
MAX_WAIT_SECONDS = 300
TextFormat = Literal["markdown", "text", "html"]
#: The most pages one crawl_status call lists.
MAX_PAGES = 100

#: Gives the tools a client for a request: the stdio server's one client, or one with the
#: HTTP caller's key.
ClientFor = Callable[
    [ServerRequestContext[Any, Any]], AbstractAsyncContextManager[AsyncTaskCrawler]
]


class ScrapeArgs(JobCreate):
    formats: list[Format] | None = Field(
        None,
        description='What to extract; default ["metadata", "markdown"]. The Markdown of the '
        "main content is returned when asked for.",
    )
    wait_seconds: float = Field(
        60,
        ge=0,
        le=MAX_WAIT_SECONDS,
        description="How long to wait for the page; past it the job is returned as it is "
        "(PENDING or PROCESSING): ask get_job for it later.",
    )


class MapArgs(MapIn):
    pass


class GetJobArgs(RequestModel):
    job_id: Id = Field(description="The id a scrape returned.")
    content: TextFormat | None = Field(
        None, description="Also return this text of the page, if the job asked for it."
    )


class CrawlArgs(CrawlIn):
    pass


class CrawlStatusArgs(RequestModel):
    crawl_id: Id = Field(description="The id the crawl tool returned.")
    pages: int = Field(
        20, ge=0, le=MAX_PAGES, description="Also list up to this many of its finished pages."
    )
    cursor: str | None = Field(
        None, max_length=200, description="next_cursor of an earlier call: the following pages."
    )


class SearchArgs(SearchIn):
    pass


def _job(job: Job) -> dict[str, Any]:
    return job.model_dump(mode="json", exclude={"next_attempt_at"})


async def _with_text(tc: AsyncTaskCrawler, job: Job, fmt: TextFormat | None) -> dict[str, Any]:
    found: dict[str, Any] = {"job": _job(job)}
    if fmt is not None and fmt in job.formats and job.status is JobStatus.COMPLETED:
        found[fmt] = await tc.content(job.id, fmt)
    return found


#: The scrape tool's own arguments, not the API's: how long the call waits for its page.
TOOL_ONLY_SCRAPE_ARGS = frozenset({"wait_seconds"})


def _sent(args: BaseModel, *, leave_out: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The request a tool's arguments make, each field of its model by name: every argument
    its schema accepts reaches the API, and a field added to the API's model is sent without
    being listed here."""
    return args.model_dump(exclude={"url", *leave_out})


async def scrape(tc: AsyncTaskCrawler, args: ScrapeArgs) -> dict[str, Any]:
    options = _sent(args, leave_out=TOOL_ONLY_SCRAPE_ARGS)
    options["formats"] = args.formats or ["metadata", "markdown"]
    submitted = await tc.submit(args.url, **options)
    job = submitted.job
    if not job.status.is_final and args.wait_seconds > 0:
        try:
            async with asyncio.timeout(args.wait_seconds):
                job = await tc.wait(job.id, interval=0.2)
        except TimeoutError:
            job = await tc.get_job(job.id)
    # The job's formats: those asked now, and any its URL was asked for before.
    return await _with_text(tc, job, "markdown" if "markdown" in job.formats else None)


async def map_site(tc: AsyncTaskCrawler, args: MapArgs) -> dict[str, Any]:
    found = await tc.map(
        args.url,
        limit=args.limit,
        sitemap=args.sitemap,
        search=args.search,
        allow_subdomains=args.allow_subdomains,
        include_paths=args.include_paths,
        exclude_paths=args.exclude_paths,
    )
    return found.model_dump(mode="json")


async def crawl(tc: AsyncTaskCrawler, args: CrawlArgs) -> dict[str, Any]:
    options = _sent(args)
    started = await tc.start_crawl(args.url, **options)
    return {"crawl": started.model_dump(mode="json")}


async def crawl_status(tc: AsyncTaskCrawler, args: CrawlStatusArgs) -> dict[str, Any]:
    found: dict[str, Any] = {"crawl": (await tc.get_crawl(args.crawl_id)).model_dump(mode="json")}
    if args.pages:
        page = await tc.crawl_jobs(
            args.crawl_id,
            statuses=["COMPLETED", "FAILED"],
            limit=args.pages,
            cursor=args.cursor,
        )
        found["pages"] = [
            {"job_id": str(job.id), "url": job.url, "status": job.status.value,
             "http_status": job.http_status, "title": job.scraped_title}
            for job in page.jobs
        ]  # fmt: skip
        found["next_cursor"] = page.next_cursor
    return found


async def search(tc: AsyncTaskCrawler, args: SearchArgs) -> dict[str, Any]:
    options = args.model_dump(exclude={"q"}, exclude_none=True)
    found = await tc.search(args.q, **options)
    return found.model_dump(mode="json")


async def get_job(tc: AsyncTaskCrawler, args: GetJobArgs) -> dict[str, Any]:
    return await _with_text(tc, await tc.get_job(args.job_id), args.content)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    args: type[BaseModel]
    description: str
    run: Callable[[AsyncTaskCrawler, Any], Awaitable[dict[str, Any]]]

    def tool(self, name: str) -> types.Tool:
        return types.Tool(name=name, description=self.description, input_schema=self.schema())

    def schema(self) -> dict[str, Any]:
        return self.args.model_json_schema()


TOOLS: dict[str, ToolSpec] = {
    "scrape": ToolSpec(
        ScrapeArgs,
        "Fetch one web page and return its metadata (title, description, author, dates) and "
        "its main content as Markdown. A URL scraped before returns its stored job, given the "
        "formats it lacked (made from the stored page), unless max_age (seconds) says it is "
        "too old.",
        scrape,
    ),
    "map": ToolSpec(
        MapArgs,
        "List a site's URLs from its sitemaps and its start page's links, without scraping "
        "them; filter with search (words every URL must contain) and path patterns.",
        map_site,
    ),
    "crawl": ToolSpec(
        CrawlArgs,
        "Start crawling a site from url: every page in scope (same host unless allowed, "
        "include_paths/exclude_paths, max_depth link hops, at most limit pages) is scraped "
        "in the background. Returns the crawl; follow it with crawl_status.",
        crawl,
    ),
    "crawl_status": ToolSpec(
        CrawlStatusArgs,
        "A crawl by its id: its status (RUNNING, COMPLETED, CANCELLED), its pages' counts, "
        "and its finished pages (in the order they finished; get_job reads one page's text).",
        crawl_status,
    ),
    "search": ToolSpec(
        SearchArgs,
        "Search the text of the pages already scraped (those asked for with the chunks "
        "format): the k best passages for q, each with what a citation needs (its page's url, "
        "title and fetch time, its heading_path, and start/end: its characters in the page's "
        "Markdown) and job_id; crawl_id, job_id, host, url_prefix, monitor_id, fetched_after "
        "and fetched_before narrow the pages searched.",
        search,
    ),
    "get_job": ToolSpec(
        GetJobArgs,
        "A scrape job by its id: its status, result and error, and one of its texts.",
        get_job,
    ),
}


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _refusal(error: ValidationError) -> str:
    parts = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in item["loc"])
        parts.append(f"{where}: {item['msg']}" if where else item["msg"])
    return "invalid arguments: " + "; ".join(parts)


def build_server(client_for: ClientFor) -> Server[Any]:
    """An MCP server with the tools, each call run with ``client_for(context)``."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[spec.tool(name) for name, spec in TOOLS.items()])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = TOOLS.get(params.name)
        if spec is None:
            return _error(f"no tool named {params.name!r}: use one of {', '.join(TOOLS)}")
        try:
            args = spec.args.model_validate(params.arguments or {})
        except ValidationError as exc:
            return _error(_refusal(exc))
        try:
            async with client_for(ctx) as tc:
                found = await spec.run(tc, args)
        except TaskCrawlerError as exc:
            return _error(str(exc))
        except Exception:
            # The MCP library would answer an escaped exception with its text, which can hold
            # a SQL statement or a path: the log keeps it, the agent gets a plain sentence.
            log.exception("the MCP tool %s failed", params.name)
            return _error(
                f"the {params.name} tool failed on the server's side; try again later "
                "(the server's log has the details)"
            )
        text = orjson.dumps(found, option=orjson.OPT_INDENT_2).decode()
        return types.CallToolResult(
            content=[types.TextContent(text=text)], structured_content=found
        )

    return Server(
        "taskcrawler",
        version=__version__,
        instructions="Scrape web pages to Markdown, map and crawl sites, search what was "
        "scraped, and look up scrape jobs.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
