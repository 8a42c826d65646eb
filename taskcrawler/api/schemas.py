"""The wire format of the HTTP API (v1): what requests may say, and every response's shape.
The first version's field names (``id``, ``url``, ``status``, …) are kept exactly: clients rely
on them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, cast, get_args
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from taskcrawler.api.inputs import Id, Instant, RequestModel
from taskcrawler.domain import InvalidURL, validate_url
from taskcrawler.domain.actions import MAX_ACTIONS
from taskcrawler.domain.chunks import SearchHit, SearchMode, SearchQuery, StoredChunk
from taskcrawler.domain.crawls import DEFAULT_LIMIT, MAX_DEPTH, MAX_PATTERNS, WEBHOOK_EVENTS
from taskcrawler.domain.jobs import DEFAULT_FORMATS, Created
from taskcrawler.domain.monitors import Change, Monitor, change_document
from taskcrawler.domain.pages import StoredLink
from taskcrawler.domain.rendering import (
    BLOCKABLE,
    MAX_SELECTOR_CHARS,
    MAX_VIEWPORT,
    MAX_WAIT_SECONDS,
    MIN_VIEWPORT,
    RenderMode,
    RenderRequest,
    WaitUntil,
    effective_mode,
)
from taskcrawler.domain.scrape_options import (
    MAX_CONCURRENCY as MAX_CRAWL_CONCURRENCY,
)
from taskcrawler.domain.scrape_options import (
    MAX_DELAY_SECONDS,
    MAX_PDF_PAGES,
    InvalidOption,
    ScrapeOptions,
)
from taskcrawler.domain.scrape_options import (
    MAX_HEADERS as MAX_REQUEST_HEADERS,
)
from taskcrawler.domain.structured import (
    MAX_PROMPT_CHARS,
    InvalidJsonRequest,
    JsonRequest,
    json_request,
)
from taskcrawler.domain.urls import MAX_URL_LENGTH
from taskcrawler.domain.views import CrawlView, JobView
from taskcrawler.domain.web_search import DEFAULT_RESULTS as DEFAULT_WEB_RESULTS
from taskcrawler.domain.web_search import MAX_QUERY_CHARS
from taskcrawler.domain.web_search import MAX_RESULTS as MAX_WEB_RESULTS
from taskcrawler.domain.webhooks import DeliveryStatus
from taskcrawler.service.mapping import DEFAULT_MAP_LIMIT, MAX_SEARCH_CHARS
from taskcrawler.service.monitors import RunView

Format = Literal[
    "metadata",
    "markdown",
    "text",
    "html",
    "clean_html",
    "images",
    "links",
    "screenshot",
    "chunks",
    "json",
    "summary",
]
#: Entries ``formats`` may list, repeats included (they are dropped): each format a few times
#: over is a client's slip; more is not a list of formats.
MAX_FORMATS_LISTED = 4 * len(get_args(Format))
FinishedStatus = Literal["FAILED", "COMPLETED", "CANCELLED"]
FAILED: FinishedStatus = "FAILED"
MAX_BATCH = 1000
#: Largest value of an INTEGER column on every backend; bigger ones are refused, not overflowed.
MAX_INT32 = 2**31 - 1
#: A century: older than any job can be, and still a date (timedelta arithmetic overflows later).
MAX_AGE_SECONDS = 100 * 365 * 24 * 3600


def _checked_url(url: str) -> str:
    try:
        return validate_url(url)
    except InvalidURL as exc:
        raise ValueError(str(exc)) from None


#: The resource types of :data:`~taskcrawler.domain.rendering.BLOCKABLE`.
Blockable = Literal["image", "font", "media"]


class ViewportIn(RequestModel):
    width: int = Field(1280, ge=MIN_VIEWPORT, le=MAX_VIEWPORT)
    height: int = Field(800, ge=MIN_VIEWPORT, le=MAX_VIEWPORT)


class RenderOptionsIn(RequestModel):
    """How the browser renders the page (with ``render`` auto or always)."""

    wait_until: WaitUntil = Field(
        "networkidle",
        description="load: the load event; networkidle (default): also no request for 500 ms. "
        "Bounded "
        "by wait_seconds and by the render's deadline; a wait that times out is noted in the "
        "result, not an error.",
    )
    wait_for: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_SELECTOR_CHARS,
        description="A CSS selector to wait for (attached to the DOM), same bound.",
    )
    wait_seconds: float = Field(10.0, ge=0, le=MAX_WAIT_SECONDS)
    block: list[Blockable] = Field(
        default_factory=list,
        max_length=3 * len(BLOCKABLE),
        description="Resource types not downloaded: image, font, media.",
    )
    viewport: ViewportIn = Field(default_factory=ViewportIn)
    full_page: bool = Field(
        True,
        description="A screenshot of the whole page (cut at the deployment's "
        "render_screenshot_max_height), or false: of the viewport only.",
    )

    @field_validator("wait_for")
    @classmethod
    def _a_selector(cls, selector: str | None) -> str | None:
        if selector is not None:
            _check_selector(selector)
        return selector

    def request(self) -> RenderRequest:
        return RenderRequest(
            wait_until=self.wait_until,
            wait_for=self.wait_for,
            wait_seconds=self.wait_seconds,
            block=tuple(dict.fromkeys(self.block)),
            viewport_width=self.viewport.width,
            viewport_height=self.viewport.height,
            full_page=self.full_page,
        )


def _check_selector(selector: str) -> None:
    """A selector lexbor can parse (chromium parses what lexbor does)."""
    try:
        LexborHTMLParser("").css_first(selector)
    except SelectolaxError:
        raise ValueError(f"wait_for is not a CSS selector: {selector!r}") from None


class ScrapeOptionsIn(RequestModel):
    """What a job asks of its page beyond its formats; every field optional."""

    only_main_content: bool = Field(
        True, description="false: the Markdown, text and clean_html hold the whole page."
    )
    include_tags: list[Annotated[str, Field(max_length=200)]] | None = Field(
        None,
        max_length=20,
        description="CSS selectors: only what they match is read (before the main content "
        "is looked for).",
    )
    exclude_tags: list[Annotated[str, Field(max_length=200)]] | None = Field(
        None, max_length=20, description="CSS selectors: what they match is left out."
    )
    keep_base64_images: bool = Field(
        False, description="Inline data: images stay in the Markdown and clean_html."
    )
    headers: dict[str, str] | None = Field(
        None,
        max_length=MAX_REQUEST_HEADERS,
        description="Request headers (cookies too) sent to the page's own host only, never to "
        "another host a redirect leads to; never shown back.",
    )
    skip_tls_verification: bool = Field(
        False, description="The page's certificate is not verified (addresses still are)."
    )
    languages: list[str] | None = Field(
        None, max_length=10, description="Accept-Language, and the browser's locale."
    )
    country: str | None = Field(
        None, max_length=2, description="ISO 3166-1 alpha-2: the browser's time zone."
    )
    block_ads: bool = Field(
        False, description="A rendered page's requests to known ad and tracker hosts fail."
    )
    parse_pdf: bool = Field(True, description="PDFs are read to Markdown and text.")
    pdf_max_pages: int | None = Field(
        None, ge=1, le=MAX_PDF_PAGES, description="A PDF's first pages read at most."
    )
    delay: float | None = Field(
        None,
        ge=0,
        le=MAX_DELAY_SECONDS,
        description="Seconds between the starts of requests to the page's host, at least.",
    )
    max_concurrency: int | None = Field(
        None,
        ge=1,
        le=MAX_CRAWL_CONCURRENCY,
        description="A crawl's pages fetched at once at most, across all workers.",
    )
    mobile: bool = Field(
        False,
        description="Render as a phone: a 412x915 viewport (unless render_options gives one), "
        "touch, and a mobile Chrome user agent (followed by the deployment's) for the page and "
        "its fetch. Needs a browser: render defaults to always.",
    )
    actions: list[dict[str, Any]] | None = Field(
        None,
        max_length=MAX_ACTIONS,
        description="Firecrawl's page actions, run in order on the rendered page before it is "
        "taken: wait (milliseconds or selector), click, write, press, scroll, screenshot "
        "(fullPage, viewport), scrape, executeJavascript, pdf (format, landscape, scale). What "
        "they give is the result's actions: scrapes, javascriptReturns, and screenshots and "
        "pdfs as the paths the files are served at (GET /api/v1/jobs/{id}/actions/screenshots/"
        "{n} and …/pdfs/{n}). Needs a browser: render defaults to always.",
    )
    json_schema: dict[str, Any] | None = Field(
        None,
        description='Format "json": a JSON Schema the answer must be valid against. A schema '
        'whose fields carry a "selector" (and an "attribute") is read from the page without a '
        "model; any other needs TASKCRAWLER_LLM_URL.",
    )
    json_prompt: str | None = Field(
        None,
        max_length=MAX_PROMPT_CHARS,
        description='Format "json": what the model is asked to read from the page.',
    )

    @model_validator(mode="after")
    def _checked(self) -> ScrapeOptionsIn:
        self.scrape_options()
        return self

    def scrape_options(self) -> ScrapeOptions:
        try:
            return ScrapeOptions.create(
                only_main_content=self.only_main_content,
                include_tags=self.include_tags,
                exclude_tags=self.exclude_tags,
                keep_base64_images=self.keep_base64_images,
                headers=self.headers,
                skip_tls_verification=self.skip_tls_verification,
                languages=self.languages,
                country=self.country,
                block_ads=self.block_ads,
                parse_pdf=self.parse_pdf,
                max_pages=self.pdf_max_pages,
                delay=self.delay,
                max_concurrency=self.max_concurrency,
                json=self._json(),
                mobile=self.mobile,
                actions=self.actions,
                names={"max_pages": "pdf_max_pages"},
            )
        except InvalidOption as exc:
            raise ValueError(str(exc)) from None

    def _json(self) -> JsonRequest | None:
        if self.json_schema is None and self.json_prompt is None:
            return None
        try:
            return json_request(self.json_schema, self.json_prompt, "options.json")
        except InvalidJsonRequest as exc:
            raise ValueError(str(exc).replace("options.json.", "json_", 1)) from None


def _check_json_asked(formats: list[Format] | None, options: ScrapeOptionsIn | None) -> None:
    """The json format needs to know what to read: a schema, a prompt, or both."""
    asked = options is not None and (
        options.json_schema is not None or options.json_prompt is not None
    )
    if formats and "json" in formats and not asked:
        raise ValueError("formats: json needs options.json_schema, options.json_prompt or both")


def scrape_options_of(options: ScrapeOptionsIn | None) -> ScrapeOptions | None:
    """The options asked for; None when the request asked for none (a URL's existing job then
    keeps its own)."""
    return None if options is None else options.scrape_options()


class JobOptionsIn(RequestModel):
    formats: list[Format] | None = Field(
        None,
        max_length=MAX_FORMATS_LISTED,
        description='What to extract; default ["metadata", "markdown"]. Markdown, text, html '
        "and links are kept for GET /api/v1/jobs/{id}/content and /links. If the URL already "
        "has a job, the formats it lacks are added to it: made from its stored page when there "
        "is one (no fetch), else by a new run; the job then runs again (PENDING) and keeps "
        "every format asked so far.",
    )
    callback_url: str | None = Field(
        None,
        max_length=MAX_URL_LENGTH,
        description="Gets a signed POST when the job completes or fails.",
    )
    max_age: float | None = Field(
        None,
        ge=0,
        le=MAX_AGE_SECONDS,
        description="Seconds. If the URL already has a job whose page was fetched longer ago "
        "than this, it is fetched again (same id, a new run, with every format asked so far); "
        "a younger one is returned as it is (with the formats it lacked added). 0: always "
        "fetch again.",
    )

    render: RenderMode | None = Field(
        None,
        description="never: fetch only; auto: render in a headless browser when the fetched "
        "HTML is an app shell (little text, a mount point, scripts); always: render every "
        "time. Default never, or always when formats has screenshot.",
    )
    render_options: RenderOptionsIn | None = Field(
        None, description="How to render: waits, blocked resource types, viewport."
    )
    options: ScrapeOptionsIn | None = Field(
        None,
        description="Headers, TLS, languages, what the Markdown holds, PDFs. A URL asked for "
        "with other options than its job has is scraped again with them (same job, a new run).",
    )

    @field_validator("callback_url")
    @classmethod
    def _callback_acceptable(cls, url: str | None) -> str | None:
        return None if url is None else _checked_url(url)

    @model_validator(mode="after")
    def _json_asked_with_what_to_read(self) -> JobOptionsIn:
        _check_json_asked(self.formats, self.options)
        return self

    @model_validator(mode="after")
    def _render_fits_formats(self) -> JobOptionsIn:
        try:
            asked = self.options.scrape_options() if self.options else None
            self.render = effective_mode(self.render, self.formats, asked)
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        return self

    @field_validator("formats")
    @classmethod
    def _each_once(cls, formats: list[Format] | None) -> list[Format] | None:
        return None if formats is None else list(dict.fromkeys(formats))


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


class JobCreate(JobOptionsIn):
    url: str = Field(
        max_length=MAX_URL_LENGTH,
        description="An http(s) URL. Submitting a URL that already has a job returns that job.",
        examples=["https://example.com"],
    )

    @field_validator("url")
    @classmethod
    def _acceptable(cls, url: str) -> str:
        return _checked_url(url)


class BatchCreate(JobOptionsIn):
    urls: list[str] = Field(min_length=1, max_length=MAX_BATCH, description="Up to 1,000 URLs.")

    @field_validator("urls")
    @classmethod
    def _all_acceptable(cls, urls: list[str]) -> list[str]:
        problems = []
        for index, url in enumerate(urls):
            try:
                validate_url(url)
            except InvalidURL as exc:
                problems.append(f"urls[{index}]: {exc}")
        if problems:
            raise ValueError("; ".join(problems[:20]))
        return urls


class JobOut(JobView):
    """A job, as every endpoint and webhook shows it."""


class BatchItem(JobOut):
    created: bool = Field(description="False when the URL already had a job.")

    @classmethod
    def of_created(cls, created: Created) -> BatchItem:
        # Constructed from values the job's view has just validated.
        return cls.model_construct(**dict(JobOut.of(created.job)), created=created.created)


class BatchOut(BaseModel):
    jobs: list[BatchItem]
    created: int
    existing: int


class JobPage(BaseModel):
    jobs: list[JobOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page.")


class RetryFilter(RequestModel):
    status: list[FinishedStatus] = Field(default_factory=lambda: [FAILED])
    host: str | None = Field(None, max_length=255)
    error_code: str | None = Field(None, max_length=64)
    created_after: Instant | None = None
    created_before: Instant | None = None


class RetryOut(BaseModel):
    restarted: int
    ids: list[UUID]


CancellableStatus = Literal["PENDING", "PROCESSING"]


class CancelFilter(RequestModel):
    """Which jobs a bulk cancel stops: those matching every field given (at least one)."""

    ids: list[UUID] = Field(default_factory=list, max_length=MAX_BATCH)
    batch_id: UUID | None = Field(None, description="A batch scrape's jobs (/v1/batch/scrape).")
    crawl_id: UUID | None = Field(None, description="A crawl's pages.")
    status: list[CancellableStatus] = Field(
        default_factory=list, max_length=2, description="Default: PENDING and PROCESSING."
    )
    host: str | None = Field(None, max_length=255)
    created_after: Instant | None = None
    created_before: Instant | None = None


class CancelOut(BaseModel):
    cancelled: int
    ids: list[UUID] = Field(description="The jobs this call cancelled, oldest first.")
    more: bool = Field(
        description="More jobs matched than one call cancels (10,000): call it again."
    )


class RunOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    run: int
    status: str
    retry_count: int
    http_status: int | None
    scraped_title: str | None
    error_code: str | None
    error_log: str | None
    content_hash: str | None
    started_at: datetime | None
    finished_at: datetime | None


class KeyCreate(RequestModel):
    name: str = Field(min_length=1, max_length=200)
    is_admin: bool = False
    requests_per_minute: int | None = Field(None, ge=1, le=MAX_INT32)
    max_pending_jobs: int | None = Field(None, ge=1, le=MAX_INT32)
    callback_url: str | None = Field(None, max_length=MAX_URL_LENGTH)

    @field_validator("callback_url")
    @classmethod
    def _callback_acceptable(cls, url: str | None) -> str | None:
        return None if url is None else _checked_url(url)


class KeyOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    is_admin: bool
    requests_per_minute: int | None
    max_pending_jobs: int | None
    callback_url: str | None
    created_at: datetime
    revoked_at: datetime | None


class KeyWithSecret(KeyOut):
    webhook_secret: str = Field(
        description="HMAC-SHA256 key that signs this key's webhooks. Shown once; store it now."
    )


class KeyCreated(KeyWithSecret):
    key: str = Field(description="The secret token. Shown once; store it now.")


class ErrorOut(BaseModel):
    detail: str
    dependency: str | None = None


class Health(BaseModel):
    status: str
    checks: dict[str, str] = Field(default_factory=dict)


class LinkOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    job_id: UUID
    url: str
    text: str | None
    rel: list[str]
    internal: bool
    nofollow: bool
    source_url: str | None = None


class LinkPage(BaseModel):
    links: list[LinkOut]
    next_cursor: int | None

    @classmethod
    def of(cls, links: list[StoredLink], limit: int) -> LinkPage:
        """A page of ``limit`` links; a full page may have a next one."""
        more = len(links) == limit
        return cls(
            links=[LinkOut.model_validate(link) for link in links],
            next_cursor=links[-1].id if more else None,
        )


class DeliveryOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: UUID = Field(description="Sent as X-TaskCrawler-Delivery; the same on every retry.")
    job_id: UUID
    event: str = Field(description="job.completed or job.failed")
    url: str = Field(description="The callback URL.")
    status: DeliveryStatus = Field(
        description="PENDING (due or in flight), DELIVERED, FAILED, or BLOCKED: never sent, "
        "because the callback URL was refused before connecting (a blocked address, or a URL "
        "no request can be made to; last_error says which)."
    )
    attempts: int = Field(
        description="POSTs sent so far, the one in flight included; a refused one is not one."
    )
    last_status_code: int | None = Field(description="The receiver's last HTTP status.")
    last_error: str | None = Field(description="The last failure: its code, then a message.")
    created_at: datetime
    next_attempt_at: datetime | None = Field(description="When a PENDING delivery is due.")
    delivered_at: datetime | None


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


# --- chunks and search ---------------------------------------------------------------------------


_START = (
    "Where the chunk starts in the page's Markdown (the job's `markdown` content), in characters."
)
_END = "Where it ends there (exclusive): `markdown[start:end]` is the passage it was cut from."


class ChunkOut(BaseModel):
    index: int
    text: str
    heading_path: list[str]
    token_count: int
    start: int | None = Field(
        None, description=_START + " None for chunks made before offsets were kept."
    )
    end: int | None = Field(None, description=_END)

    @classmethod
    def of(cls, chunk: StoredChunk) -> ChunkOut:
        return cls(
            index=chunk.index,
            text=chunk.text,
            heading_path=list(chunk.heading_path),
            token_count=chunk.token_count,
            start=chunk.start,
            end=chunk.end,
        )


class ChunkList(BaseModel):
    chunks: list[ChunkOut]
    model: str | None = Field(None, description="The model that embedded them.")


class SearchResult(BaseModel):
    """A chunk found, with what a RAG pipeline needs to cite it."""

    job_id: UUID
    url: str
    title: str | None
    chunk_index: int
    text: str
    score: float = Field(
        description="Higher is better: cosine similarity (semantic), the share of the query's "
        "weight the chunk matches by BM25, 0 to 1 (keyword), the fusion of both (hybrid), or "
        "the reranker's relevance (when one re-scored the results); comparable within one "
        "answer."
    )
    heading_path: list[str] = Field(description="The headings the chunk sits under.")
    start: int | None = Field(description=_START)
    end: int | None = Field(description=_END)
    fetched_at: datetime | None = Field(description="When the page was fetched (UTC).")

    @classmethod
    def of(cls, hit: SearchHit) -> SearchResult:
        return cls(
            job_id=hit.job_id,
            url=hit.url,
            title=hit.title,
            chunk_index=hit.chunk_index,
            text=hit.text,
            score=hit.score,
            heading_path=list(hit.heading_path),
            start=hit.start,
            end=hit.end,
            fetched_at=hit.fetched_at,
        )


class SearchResults(BaseModel):
    results: list[SearchResult]


#: The most chunks one search returns, and the longest query.
MAX_K = 100
MAX_QUERY_CHARS = 1000


class SearchIn(RequestModel):
    """What ``GET /api/v1/search`` takes (as query parameters)."""

    q: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for.")
    k: int = Field(10, ge=1, le=MAX_K, description="How many chunks, the best first.")
    mode: Literal["hybrid", "semantic", "keyword"] = Field(
        "hybrid",
        description="semantic (embeddings), keyword (BM25) or hybrid (both, each weighed by "
        "how much it knows of the query).",
    )
    crawl_id: Id | None = Field(None, description="Only the pages of this crawl.")
    job_id: Id | None = Field(None, description="Only this page.")
    host: str | None = Field(
        None, min_length=1, max_length=255, description="Only the pages of this host."
    )
    url_prefix: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_URL_LENGTH,
        description="Only the pages whose URL starts with this.",
    )
    monitor_id: Id | None = Field(None, description="Only the pages this monitor watches.")
    fetched_after: Instant | None = Field(None, description="Only pages fetched at or after.")
    fetched_before: Instant | None = Field(None, description="Only pages fetched before.")
    rerank: bool = Field(
        True,
        description="Re-score the best results with the configured reranker "
        "(TASKCRAWLER_RERANK_URL); without one, nothing changes.",
    )

    def query(self, owner: str) -> SearchQuery:
        return SearchQuery(
            owner,
            self.q,
            k=self.k,
            mode=SearchMode(self.mode),
            crawl_id=self.crawl_id,
            job_id=self.job_id,
            host=self.host,
            url_prefix=self.url_prefix,
            monitor_id=self.monitor_id,
            fetched_after=self.fetched_after,
            fetched_before=self.fetched_before,
            rerank=self.rerank,
        )


# --- crawls ---------------------------------------------------------------------------------


def _default_formats() -> list[Format]:
    return cast(list[Format], list(DEFAULT_FORMATS))


CrawlEvent = Literal["crawl.page", "crawl.completed"]


def _default_events() -> list[CrawlEvent]:
    return ["crawl.completed"]


class CrawlIn(RequestModel):
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
    sitemap: Literal["include", "skip", "only"] = Field(
        "include",
        description="include: sitemaps and links; skip: links only; only: sitemap pages only.",
    )
    formats: list[Format] = Field(
        default_factory=_default_formats,
        min_length=1,
        max_length=MAX_FORMATS_LISTED,
        description='What to extract of every page, as for a job; default ["metadata", '
        '"markdown"].',
    )
    callback_url: str | None = Field(
        None,
        max_length=MAX_URL_LENGTH,
        description="Gets a signed POST of each event of webhook_events; default: the API "
        "key's callback URL.",
    )
    webhook_events: list[CrawlEvent] = Field(
        default_factory=_default_events,
        max_length=len(WEBHOOK_EVENTS),
        description="crawl.page: every page of the crawl once it is completed or failed (its "
        "job); crawl.completed: the crawl once nothing of it is left. Default: "
        "crawl.completed only.",
    )
    max_age: float | None = Field(
        None,
        ge=0,
        le=MAX_AGE_SECONDS,
        description="Seconds. A page this API key scraped (as a job or in a crawl) more "
        "recently than this is reused, read again from its stored copy instead of fetched; "
        "default: every page is fetched.",
    )
    render: RenderMode | None = Field(
        None,
        description="For every page, as for a job: never, auto or always. Default never, or "
        "always when formats has screenshot.",
    )
    render_options: RenderOptionsIn | None = Field(
        None, description="How to render every page, as for a job."
    )
    options: ScrapeOptionsIn | None = Field(
        None, description="For every page, as for a job (delay: between its pages' requests)."
    )

    @model_validator(mode="after")
    def _json_asked_with_what_to_read(self) -> CrawlIn:
        _check_json_asked(self.formats, self.options)
        return self

    @model_validator(mode="after")
    def _render_fits_formats(self) -> CrawlIn:
        try:
            asked = self.options.scrape_options() if self.options else None
            self.render = effective_mode(self.render, self.formats, asked)
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        return self


class CrawlOut(CrawlView):
    """A crawl, as every endpoint and its webhook show it."""


class CrawlList(BaseModel):
    crawls: list[CrawlOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page.")


# --- monitors ---------------------------------------------------------------------------------


class MonitorPageOut(BaseModel):
    url: str
    job_id: UUID = Field(description="The page's job: its runs are the monitor's rounds.")


class MonitorOut(BaseModel):
    id: UUID
    status: Literal["ACTIVE", "PAUSED"]
    urls: list[str]
    crawl: dict[str, Any] | None = Field(
        None, description="A crawl monitor's crawl, as each round runs it (null for pages)."
    )
    interval_seconds: float
    formats: list[str]
    ignore_selectors: list[str]
    callback_url: str | None
    pages: list[MonitorPageOut]
    rounds: int = Field(description="Scheduled runs fired so far.")
    last_run_at: datetime | None = Field(description="The scheduled time of the last run.")
    next_run_at: datetime | None = Field(description="When the next run is due (unless paused).")
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, monitor: Monitor) -> MonitorOut:
        spec = monitor.spec
        return cls(
            id=monitor.id,
            status="PAUSED" if monitor.paused else "ACTIVE",
            urls=list(spec.urls),
            crawl=spec.crawl.to_dict() if spec.crawl is not None else None,
            interval_seconds=spec.interval_seconds,
            formats=list(spec.formats),
            ignore_selectors=list(spec.selectors),
            callback_url=spec.callback_url,
            pages=[MonitorPageOut(url=page.url, job_id=page.job_id) for page in monitor.pages],
            rounds=monitor.rounds,
            last_run_at=monitor.last_slot_at,
            next_run_at=None if monitor.paused else monitor.next_due_at,
            created_at=monitor.created_at,
            updated_at=monitor.updated_at,
        )


class MonitorList(BaseModel):
    monitors: list[MonitorOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page.")


class ChangeOut(BaseModel):
    id: UUID
    monitor_id: UUID
    kind: Literal["changed", "added", "removed"]
    url: str
    job_id: UUID
    detected_at: datetime
    run: int | None = Field(description="The job's run that found the change.")
    previous_run: int | None = Field(description="The run it was compared with.")
    previous_job_id: UUID | None = Field(
        description="The job of previous_run: job_id for a URL monitor's page, the last "
        "round's job for a crawl monitor's page; null for pages added and removed."
    )
    diff: str | None = Field(description="Unified diff of the two runs' Markdown.")
    diff_complete: bool | None = Field(description="False when the diff was cut at its limit.")
    metadata: dict[str, dict[str, Any]] = Field(
        description='Metadata fields that changed: {"title": {"old": …, "new": …}}.'
    )

    @classmethod
    def of(cls, change: Change) -> ChangeOut:
        return cls.model_validate(change_document(change))


class ChangeList(BaseModel):
    changes: list[ChangeOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page.")


class RunContentOut(BaseModel):
    job_id: UUID
    run: int
    status: str
    http_status: int | None
    fetched_at: datetime
    content_run: int | None = Field(
        description="The run whose content this one read (an earlier one after a 304)."
    )
    metadata: dict[str, Any]
    markdown: str = Field(description="The Markdown, read through the monitor's selectors.")
    text: str

    @classmethod
    def of(cls, view: RunView) -> RunContentOut:
        record = view.record
        return cls(
            job_id=record.job_id,
            run=record.run,
            status=record.status,
            http_status=record.http_status,
            fetched_at=record.fetched_at,
            content_run=record.content_run,
            metadata=dict(record.metadata),
            markdown=view.content.markdown,
            text=view.content.text,
        )


class RunDiffOut(BaseModel):
    job_id: UUID
    from_run: int = Field(alias="from")
    to_run: int = Field(alias="to")
    diff: str = Field(description="Unified diff of the Markdown; empty when it is the same.")
    complete: bool
    coarse: bool
    added_lines: int
    removed_lines: int
    metadata: dict[str, dict[str, Any]]

    model_config = ConfigDict(populate_by_name=True)


# --- Firecrawl-compatible answers (/v1, /v2) ---------------------------------------------------


class FirecrawlDocument(BaseModel):
    """A scraped page as Firecrawl shows it: the formats asked for, and its metadata."""

    model_config = ConfigDict(extra="allow")

    markdown: str | None = None
    html: str | None = None
    rawHtml: str | None = None
    links: list[str] | None = None
    screenshot: str | None = Field(
        None,
        description="Where the PNG is served (GET /api/v1/jobs/{id}/screenshot, with the "
        "same API key).",
    )
    warning: str | None = Field(None, description="What the document lacks, and why.")
    summary: str | None = Field(None, description="The model's summary of the page.")
    # ``json`` (what the model or the schema's selectors read) is an extra field: a field of
    # that name would shadow BaseModel.json.
    metadata: dict[str, Any]


class FirecrawlScrapeOut(BaseModel):
    success: bool = True
    data: FirecrawlDocument


class FirecrawlLink(BaseModel):
    url: str


class FirecrawlMapOutV1(BaseModel):
    success: bool = True
    links: list[str]


class FirecrawlMapOutV2(BaseModel):
    success: bool = True
    links: list[FirecrawlLink]


class FirecrawlErrorOut(BaseModel):
    success: Literal[False] = False
    error: str = Field(description="What was refused, naming the field when one was.")
    details: list[Any] | None = Field(None, description="Validation errors, when any.")


class FirecrawlSearchOutV1(BaseModel):
    success: bool = True
    data: list[dict[str, Any]] = Field(
        description="The results: url, title, description; with scrapeOptions, each also "
        "the formats of its document and its metadata."
    )
    warning: str | None = None


class FirecrawlSearchData(BaseModel):
    web: list[dict[str, Any]] | None = None
    news: list[dict[str, Any]] | None = None
    images: list[dict[str, Any]] | None = None


class FirecrawlSearchOutV2(BaseModel):
    success: bool = True
    data: FirecrawlSearchData
    warning: str | None = None


class FirecrawlExtractStarted(BaseModel):
    success: bool = True
    id: str
    url: str = Field(description="Where to read the extract's status.")
    invalidURLs: list[str] | None = None


class FirecrawlExtractStatus(BaseModel):
    success: bool = True
    status: Literal["processing", "completed", "failed"]
    data: Any = Field(None, description="The pages' answers, merged into one.")
    error: str | None = None
    warning: str | None = None
    sources: dict[str, list[str]] | None = Field(
        None, description='{"urls": the pages the answer was read from}.'
    )
    expiresAt: datetime


class FirecrawlBatchStarted(BaseModel):
    success: bool = True
    id: str
    url: str = Field(description="Where to read the batch's status.")
    invalidURLs: list[str] | None = None


class FirecrawlBatchStatus(BaseModel):
    success: bool = True
    status: Literal["scraping", "completed"]
    total: int
    completed: int
    creditsUsed: int
    expiresAt: datetime
    next: str | None = Field(None, description="The next page of documents, if any.")
    data: list[FirecrawlDocument]


class FirecrawlCrawlStarted(BaseModel):
    success: bool = True
    id: str
    url: str = Field(description="Where to read the crawl's status.")


class FirecrawlCrawlStatus(BaseModel):
    success: bool = True
    status: Literal["scraping", "completed", "cancelled"]
    total: int = Field(description="Pages discovered so far.")
    completed: int = Field(description="Pages fetched (whatever their HTTP status).")
    creditsUsed: int
    expiresAt: datetime
    next: str | None = Field(None, description="The next page of documents, if any.")
    data: list[FirecrawlDocument]


class FirecrawlCrawlError(BaseModel):
    id: str = Field(description="The failed page's job.")
    timestamp: datetime | None = Field(description="When it failed.")
    url: str
    code: str | None = Field(description="The job's error code.")
    error: str


class FirecrawlCrawlErrors(BaseModel):
    errors: list[FirecrawlCrawlError] = Field(
        description="The crawl's failed pages, newest first (1,000 at most)."
    )
    robotsBlocked: list[str] = Field(description="Pages robots.txt kept the crawl from.")


class FirecrawlCrawlCancelled(BaseModel):
    success: bool = True
    status: Literal["cancelled"] = "cancelled"


class FirecrawlActiveCrawl(BaseModel):
    id: str
    teamId: str = Field(description="The API key's tenant.")
    url: str
    options: dict[str, Any] | None = Field(None, description="The crawl's TaskCrawler spec.")


class FirecrawlActiveCrawls(BaseModel):
    success: bool = True
    crawls: list[FirecrawlActiveCrawl] = Field(description="The key's running crawls.")


#: What a self-hosted TaskCrawler answers for credits and tokens: it counts none.
UNMETERED = 99_999_999


class FirecrawlCreditsV2(BaseModel):
    remainingCredits: int = UNMETERED
    planCredits: int | None = None
    billingPeriodStart: str | None = None
    billingPeriodEnd: str | None = None


class FirecrawlCreditsV1(BaseModel):
    remaining_credits: int = UNMETERED
    plan_credits: int | None = None
    billing_period_start: str | None = None
    billing_period_end: str | None = None


class FirecrawlTokensV2(BaseModel):
    remainingTokens: int = UNMETERED
    planTokens: int | None = None
    billingPeriodStart: str | None = None
    billingPeriodEnd: str | None = None


class FirecrawlTokensV1(BaseModel):
    remaining_tokens: int = UNMETERED
    plan_tokens: int | None = None
    billing_period_start: str | None = None
    billing_period_end: str | None = None


class FirecrawlUsage(BaseModel):
    """Credit or token usage: TaskCrawler meters neither, so there is always plenty left."""

    success: bool = True
    data: FirecrawlCreditsV2 | FirecrawlCreditsV1 | FirecrawlTokensV2 | FirecrawlTokensV1


class FirecrawlUsageHistory(BaseModel):
    success: bool = True
    periods: list[dict[str, Any]] = Field(
        default_factory=list, description="Always empty: TaskCrawler meters no usage."
    )


class FirecrawlConcurrency(BaseModel):
    success: bool = True
    concurrency: int = Field(description="The key's jobs being fetched now.")
    maxConcurrency: int = Field(
        description="The key's pending-jobs limit, else the deployment's, else the workers' "
        "concurrency."
    )


class FirecrawlQueueStatus(BaseModel):
    success: bool = True
    jobsInQueue: int = Field(description="The key's jobs not finished yet.")
    activeJobsInQueue: int = Field(description="Of those, the ones being fetched.")
    waitingJobsInQueue: int = Field(description="Of those, the ones waiting.")
    maxConcurrency: int
    mostRecentSuccess: datetime | None = Field(
        default=None, description="When a job of the key last completed; absent before the first."
    )
