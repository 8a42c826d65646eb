"""A job's options as a request gives them: formats, rendering, scrape options."""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from taskcrawler.contract.base import (
    MAX_AGE_SECONDS,
    MAX_FORMATS_LISTED,
    Format,
    RequestModel,
    checked_url,
)
from taskcrawler.domain.actions import MAX_ACTIONS
from taskcrawler.domain.jobs import JobOptions
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
    # Imported here: the client reads answers with these models and needs no parser.
    from selectolax.lexbor import LexborHTMLParser, SelectolaxError

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


def checked_render(
    render: RenderMode | None, formats: list[Format] | None, options: ScrapeOptionsIn | None
) -> RenderMode | None:
    """The render mode a request's jobs run with, once its formats are known to be readable:
    the json format told what to read, and the render asked fit for the formats and options
    (a screenshot needs a browser)."""
    _check_json_asked(formats, options)
    try:
        asked = options.scrape_options() if options else None
        return effective_mode(render, formats, asked)
    except ValueError as exc:
        raise ValueError(str(exc)) from None


def scrape_options_of(options: ScrapeOptionsIn | None) -> ScrapeOptions | None:
    """The options asked for; None when the request asked for none (a URL's existing job then
    keeps its own)."""
    return None if options is None else options.scrape_options()


class JobOptionFields(RequestModel):
    """A job's options as a request spells them, declared once: a job's submission, a batch, a
    web search's results and a crawl's pages take the same fields, one for each field of the
    domain's :class:`~taskcrawler.domain.jobs.JobOptions`."""

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
        description="Gets a signed POST when the job completes or fails (a crawl: of each "
        "event of webhook_events); default: the API key's callback URL.",
    )
    max_age: float | None = Field(
        None,
        ge=0,
        le=MAX_AGE_SECONDS,
        description="Seconds. A job: if the URL already has a job whose page was fetched "
        "longer ago than this, it is fetched again (same id, a new run, with every format "
        "asked so far); a younger one is returned as it is (with the formats it lacked added). "
        "A crawl: a page this API key scraped (as a job or in a crawl) more recently than this "
        "is reused, read again from its stored copy instead of fetched; default: every page is "
        "fetched. 0: always fetch again.",
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
        description="Headers, TLS, languages, what the Markdown holds, PDFs (a crawl: delay "
        "between its pages' requests). A URL asked for with other options than its job has is "
        "scraped again with them (same job, a new run).",
    )

    def job_options(self) -> JobOptions:
        """What the request asks of its jobs."""
        asked = {name: getattr(self, name) for name in JOB_OPTIONS}
        asked["formats"] = tuple(self.formats) if self.formats else None
        asked["render"] = self.render or "never"
        asked["render_options"] = self.render_options.request() if self.render_options else None
        asked["options"] = scrape_options_of(self.options)
        return JobOptions(**asked)

    @model_validator(mode="after")
    def _formats_readable(self) -> Self:
        self.render = checked_render(self.render, self.formats, self.options)
        return self


#: The names of a job's options, as the domain lists them.
JOB_OPTIONS = tuple(option.name for option in fields(JobOptions))


class JobOptionsIn(JobOptionFields):
    """A job's options as a submission gives them (one URL, a batch, a web search)."""

    @field_validator("callback_url")
    @classmethod
    def _callback_acceptable(cls, url: str | None) -> str | None:
        return None if url is None else checked_url(url)

    @field_validator("formats")
    @classmethod
    def _each_once(cls, formats: list[Format] | None) -> list[Format] | None:
        return None if formats is None else list(dict.fromkeys(formats))
