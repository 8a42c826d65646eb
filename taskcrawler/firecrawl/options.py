"""Firecrawl's request options as TaskCrawler's: formats, page options (screenshots, waits,
parsers, JSON and change tracking) and webhooks, checked.

What TaskCrawler cannot do is refused with :class:`Unsupported`, naming the field, never
silently ignored; a field at Firecrawl's default value asks for nothing and is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from taskcrawler.domain.change_tracking import (
    InvalidTracking,
    TrackingRequest,
    tracking_request,
)
from taskcrawler.domain.errors import InvalidURL
from taskcrawler.domain.jobs import JobOptions
from taskcrawler.domain.rendering import (
    DEFAULT_RENDER,
    SCREENSHOT,
    RenderRequest,
    check_viewport,
)
from taskcrawler.domain.scrape_options import (
    DEFAULT_OPTIONS,
    InvalidOption,
    ScrapeOptions,
    check_headers,
)
from taskcrawler.domain.structured import (
    JSON_FORMAT,
    SUMMARY_FORMAT,
    InvalidJsonRequest,
    JsonRequest,
    json_request,
)
from taskcrawler.domain.urls import validate_url
from taskcrawler.firecrawl.hooks import (
    HOOK_EVENTS,
    HookEvent,
)

#: Firecrawl's formats and the TaskCrawler formats that make them.

FORMATS: Mapping[str, str] = {
    "markdown": "markdown",
    "html": "clean_html",
    "rawHtml": "html",
    "links": "links",
    "images": "images",
    "screenshot": SCREENSHOT,
    "json": JSON_FORMAT,
    "summary": SUMMARY_FORMAT,
}
#: The fields of v2's ``{"type": "json", …}`` format and of v1's ``jsonOptions``.
_JSON_FIELDS = frozenset({"type", "schema", "prompt", "systemPrompt"})
#: What the ``pdf`` parser takes: ``mode`` fast or auto (its text), false ``pages``/``blocks``.
_PDF_PARSER_FIELDS = frozenset({"type", "maxPages", "mode", "pages", "blocks"})
#: Our fields, as Firecrawl names them in errors.
_OPTION_FIELDS = {
    "only_main_content": "onlyMainContent",
    "include_tags": "includeTags",
    "exclude_tags": "excludeTags",
    "headers": "headers",
    "languages": "location.languages",
    "country": "location.country",
    "max_pages": "parsers[].maxPages",
    "delay": "delay",
    "max_concurrency": "maxConcurrency",
}
#: Firecrawl's screenshot formats: of the viewport, and (v1's name) of the whole page.
SCREENSHOTS = frozenset({"screenshot", "screenshot@fullPage"})
#: The options of v2's ``{"type": "screenshot", …}`` format that TaskCrawler takes.
_SCREENSHOT_FIELDS = frozenset({"type", "fullPage", "viewport", "quality"})
UNSUPPORTED_FORMATS = frozenset({"branding", "attributes", "content"})
#: Firecrawl's default wait for a scrape (its ``timeout``), in milliseconds.
DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 300_000


#: A webhook's metadata, as JSON, at most (it is sent back in every event).
MAX_WEBHOOK_METADATA_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class WebhookSpec:
    """Firecrawl's ``webhook`` of a crawl or batch scrape, checked."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()
    metadata: Mapping[str, Any] | None = None
    events: tuple[HookEvent, ...] = HOOK_EVENTS


def webhook_spec(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    events: list[str] | None = None,
) -> WebhookSpec:
    """Firecrawl's ``webhook`` (a URL, or ``{url, headers, metadata, events}``);
    :class:`Unsupported` names what is wrong with it."""
    try:
        checked = validate_url(url)
    except InvalidURL as exc:
        raise Unsupported(f"webhook.url: {exc}") from None
    try:
        sent = check_headers(headers or {}, "webhook.headers")
    except InvalidOption as exc:
        raise Unsupported(str(exc)) from None
    if metadata is not None and len(_metadata_json(metadata)) > MAX_WEBHOOK_METADATA_BYTES:
        raise Unsupported(f"webhook.metadata: at most {MAX_WEBHOOK_METADATA_BYTES:,} bytes of JSON")
    wanted = tuple(event for event in HOOK_EVENTS if events is None or event in events)
    if not wanted:
        raise Unsupported("webhook.events: name at least one of " + ", ".join(HOOK_EVENTS))
    return WebhookSpec(checked, sent, metadata, wanted)


def _metadata_json(metadata: Mapping[str, Any]) -> bytes:
    """``metadata`` as the JSON every event carries; what cannot be written (an integer past
    64 bits, nesting past 254 levels) is refused, naming the field."""
    try:
        return orjson.dumps(metadata)
    except orjson.JSONEncodeError:
        raise Unsupported(
            "webhook.metadata: integers of at most 64 bits, nested at most 254 levels"
        ) from None


class Unsupported(ValueError):
    """A field or value TaskCrawler does not do: a 400 naming it."""


@dataclass(frozen=True, slots=True)
class ScreenshotSpec:
    """What a Firecrawl screenshot format asks for."""

    full_page: bool = False
    viewport: tuple[int, int] | None = None  # width, height


@dataclass(frozen=True, slots=True)
class PageOptions:
    """What Firecrawl's scrape options ask of each page: its formats (Firecrawl's names, a
    screenshot as ``screenshot``), the screenshot's shape, and ``waitFor``."""

    formats: tuple[str, ...] = ("markdown",)
    screenshot: ScreenshotSpec | None = None
    wait_for_ms: int | None = None
    options: ScrapeOptions = DEFAULT_OPTIONS
    #: ``changeTracking``: the document compared with this key's previous scrape of the page.
    tracking: TrackingRequest | None = None

    def render(self) -> tuple[str, RenderRequest | None]:
        """The render mode and options of the pages' jobs. A screenshot, a wait, ``mobile``
        and actions need the browser: ``always``. ``waitFor`` bounds the wait for network
        idle (Firecrawl waits that long after the load; a page is taken here once its network
        is quiet, or then)."""
        shot, wait_ms = self.screenshot, self.wait_for_ms
        if shot is None and not wait_ms and self.options.browser_need is None:
            return "never", None
        width, height = (shot and shot.viewport) or (
            DEFAULT_RENDER.viewport_width,
            DEFAULT_RENDER.viewport_height,
        )
        request = RenderRequest(
            wait_seconds=wait_ms / 1000 if wait_ms else DEFAULT_RENDER.wait_seconds,
            viewport_width=width,
            viewport_height=height,
            full_page=shot.full_page if shot else DEFAULT_RENDER.full_page,
        )
        return "always", request

    def job_options(self, max_age_ms: int | None) -> JobOptions:
        render, render_options = self.render()
        return JobOptions(
            formats=_our_formats(self.formats),
            max_age=None if max_age_ms is None else max_age_ms / 1000,
            render=render,
            render_options=render_options,
            options=self.options,
        )


@dataclass(frozen=True, slots=True)
class ScrapeSpec:
    url: str
    page: PageOptions
    max_age_ms: int | None
    timeout_ms: int


def page_options(
    requested: list[Any],
    wait_for_ms: int | None = None,
    options: ScrapeOptions = DEFAULT_OPTIONS,
    tracking_options: Mapping[str, Any] | None = None,
    json_options: Mapping[str, Any] | None = None,
) -> PageOptions:
    """Firecrawl's ``formats`` (strings, or ``{"type": …}`` objects in v2), ``waitFor``,
    and v1's ``changeTrackingOptions`` and ``jsonOptions``,
    checked."""
    names: list[str] = []
    screenshot: ScreenshotSpec | None = None
    tracking: TrackingRequest | None = None
    json: JsonRequest | None = None
    for index, item in enumerate(requested):
        name = item.get("type") if isinstance(item, Mapping) else item
        if not isinstance(name, str):
            raise Unsupported(f"formats[{index}]: not a format")
        if name in ("json", "extract"):  # v1's older name for it
            asked = item if isinstance(item, Mapping) else (json_options or {})
            where = f"formats[{index}]" if isinstance(item, Mapping) else "jsonOptions"
            json = json_format(asked, where)
            names.append("json")
            continue
        if name == "changeTracking":
            asked = item if isinstance(item, Mapping) else (tracking_options or {})
            where = f"formats[{index}]" if isinstance(item, Mapping) else "changeTrackingOptions"
            try:
                tracking = tracking_request(asked, where)
            except InvalidTracking as exc:
                raise Unsupported(str(exc)) from None
            names.append("markdown")  # what is compared
            continue
        if name in SCREENSHOTS:
            if screenshot is not None:
                raise Unsupported(f"formats[{index}]: one screenshot per request")
            screenshot = _screenshot_of(index, name, item)
            name = "screenshot"
        elif name in UNSUPPORTED_FORMATS:
            raise Unsupported(f"formats[{index}]: {name!r} is not supported by TaskCrawler yet")
        elif name not in FORMATS:
            raise Unsupported(f"formats[{index}]: unknown format {name!r}")
        names.append(name)
    if tracking_options is not None and tracking is None:
        raise Unsupported("changeTrackingOptions: needs changeTracking in formats")
    if json_options is not None and json is None:
        raise Unsupported("jsonOptions: needs json in formats")
    if json is not None:
        options = replace(options, json_schema=json.schema_json, json_prompt=json.prompt)
    formats = tuple(dict.fromkeys(names)) or ("markdown",)
    return PageOptions(formats, screenshot, wait_for_ms or None, options, tracking)


def json_format(asked: Mapping[str, Any], where: str) -> JsonRequest:
    """v2's ``{"type": "json", "schema", "prompt"}`` or v1's ``jsonOptions`` (with its
    ``systemPrompt``, which goes before the prompt)."""
    if unknown := sorted(set(asked) - _JSON_FIELDS):
        raise Unsupported(f"{where}.{unknown[0]}: not an option of the json format")
    prompt = asked.get("prompt")
    system = asked.get("systemPrompt")
    if isinstance(system, str) and system.strip():
        prompt = f"{system.strip()}\n\n{prompt}" if isinstance(prompt, str) else system
    try:
        return json_request(asked.get("schema"), prompt, where)
    except InvalidJsonRequest as exc:
        raise Unsupported(str(exc)) from None


def scrape_options(
    *,
    only_main_content: bool | None = None,
    include_tags: list[str] | None = None,
    exclude_tags: list[str] | None = None,
    headers: Mapping[str, str] | None = None,
    skip_tls_verification: bool | None = None,
    country: str | None = None,
    languages: list[str] | None = None,
    remove_base64_images: bool | None = None,
    block_ads: bool | None = None,
    parsers: list[Any] | None = None,
    delay: float | None = None,
    max_concurrency: int | None = None,
    mobile: bool | None = None,
    actions: list[Any] | None = None,
) -> ScrapeOptions:
    """Firecrawl's scrape options as TaskCrawler's; :class:`Unsupported` names the field by
    Firecrawl's name. Firecrawl's defaults: the main content, base64 images removed, PDFs
    parsed."""
    parse_pdf, max_pages = _parsers(parsers)
    try:
        return ScrapeOptions.create(
            only_main_content=only_main_content is not False,
            include_tags=include_tags,
            exclude_tags=exclude_tags,
            keep_base64_images=remove_base64_images is False,
            headers=headers,
            skip_tls_verification=bool(skip_tls_verification),
            languages=languages,
            country=country,
            block_ads=bool(block_ads),
            parse_pdf=parse_pdf,
            max_pages=max_pages,
            delay=delay,
            max_concurrency=max_concurrency,
            mobile=bool(mobile),
            actions=actions,
            names=_OPTION_FIELDS,
        )
    except InvalidOption as exc:
        raise Unsupported(str(exc)) from None


def _parsers(parsers: list[Any] | None) -> tuple[bool, int | None]:
    """``parsers``: ``["pdf"]`` or ``[{"type": "pdf", "maxPages": n}]`` (the default: PDFs
    read); ``[]``: PDFs are not read (refused as a content type)."""
    if parsers is None:
        return True, None
    max_pages: int | None = None
    for index, parser in enumerate(parsers):
        where = f"parsers[{index}]"
        kind = parser.get("type") if isinstance(parser, Mapping) else parser
        if kind != "pdf":
            raise Unsupported(f'{where}: TaskCrawler parses PDFs only ("pdf"), not {kind!r}')
        if isinstance(parser, Mapping):
            if unknown := sorted(set(parser) - _PDF_PARSER_FIELDS):
                raise Unsupported(f"{where}.{unknown[0]}: not an option of the pdf parser")
            if parser.get("mode") not in (None, "fast", "auto"):
                raise Unsupported(f"{where}.mode: TaskCrawler reads a PDF's text (no OCR)")
            for asked in ("pages", "blocks"):
                if parser.get(asked):
                    raise Unsupported(f"{where}.{asked}: not supported by TaskCrawler")
            pages = parser.get("maxPages")
            if pages is not None and (isinstance(pages, bool) or not isinstance(pages, int)):
                raise Unsupported(f"{where}.maxPages: must be a whole number of pages")
            max_pages = pages
    return bool(parsers), max_pages


def _screenshot_of(index: int, name: str, item: Any) -> ScreenshotSpec:
    """``screenshot`` (the viewport), ``screenshot@fullPage``, or v2's object with
    ``fullPage`` and ``viewport``; ``quality`` (a JPEG's) is refused: screenshots are PNG."""
    where = f"formats[{index}]"
    if not isinstance(item, Mapping):
        return ScreenshotSpec(full_page=name == "screenshot@fullPage")
    if unknown := sorted(set(item) - _SCREENSHOT_FIELDS):
        raise Unsupported(f"{where}.{unknown[0]}: not an option of the screenshot format")
    if item.get("quality") is not None:
        raise Unsupported(f"{where}.quality: TaskCrawler's screenshots are PNG (no quality)")
    full_page = item.get("fullPage")
    if full_page is not None and not isinstance(full_page, bool):
        raise Unsupported(f"{where}.fullPage: must be true or false")
    return ScreenshotSpec(
        full_page=bool(full_page) or name == "screenshot@fullPage",
        viewport=_viewport_of(f"{where}.viewport", item.get("viewport")),
    )


def _viewport_of(where: str, value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"width", "height"}:
        raise Unsupported(f"{where}: must be {{width, height}}")
    width, height = value["width"], value["height"]
    for side in (width, height):
        if isinstance(side, bool) or not isinstance(side, int):
            raise Unsupported(f"{where}: width and height must be whole numbers of pixels")
    try:
        check_viewport(width, height)
    except ValueError as error:
        raise Unsupported(f"{where}: {error}") from None
    return width, height


def crawl_formats(formats: tuple[str, ...]) -> tuple[str, ...]:
    """TaskCrawler's formats for a crawl whose pages give these Firecrawl formats."""
    return _our_formats(formats)


def _our_formats(formats: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(["metadata", *(FORMATS[f] for f in formats)]))
