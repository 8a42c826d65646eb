"""What a render is asked to do, and what it gives back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from taskcrawler.domain.actions import MAX_VIEWPORT, MIN_VIEWPORT, Action
from taskcrawler.domain.pages import Capture, Screenshot
from taskcrawler.domain.rendering import MAX_WAIT_SECONDS

#: Resource types a render can be told not to download (Playwright's names).
BLOCKABLE_RESOURCES = frozenset({"image", "font", "media"})
#: The usual choice for text extraction: no images, fonts, audio or video.
TEXT_ONLY = BLOCKABLE_RESOURCES

WaitUntil = Literal["load", "networkidle"]


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """Options of one render; every value is checked here, so a bad one fails before a browser
    is touched.

    * ``wait_until``: ``"load"`` (the load event) or ``"networkidle"`` (also no request for
      500 ms). Waits that do not happen within ``wait_seconds`` are not errors: the page is
      taken as it is, and the result names the wait that timed out.
    * ``wait_for_selector``: a CSS selector to wait for (attached to the DOM), same bound.
    * ``block_resources``: resource types not downloaded (a subset of BLOCKABLE_RESOURCES).
    * ``screenshot``: a PNG of the page, the whole page when ``full_page`` (cut at
      ``render_screenshot_max_height``), else the viewport.
    """

    wait_until: WaitUntil = "load"
    wait_for_selector: str | None = None
    wait_seconds: float = 10.0
    block_resources: frozenset[str] = frozenset()
    viewport_width: int = 1280
    viewport_height: int = 800
    screenshot: bool = False
    full_page: bool = True
    #: The browser's language and time zone (``navigator.language``, Accept-Language, ``Intl``).
    locale: str | None = None
    timezone_id: str | None = None
    #: The page's certificate is not verified (the proxy still vets every address).
    ignore_https_errors: bool = False
    #: Request headers for ``page_url``'s origin only (or its upgrade to https): every other
    #: origin gets none of them.
    page_headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    page_url: str = ""
    #: Requests to ad and tracker servers (EasyList, EasyPrivacy) are refused.
    block_ads: bool = False
    #: A phone: touch, ``isMobile`` (the meta viewport is honoured) and a mobile user agent.
    mobile: bool = False
    #: Actions run in order before the page is taken (checked by ``parse_actions``).
    actions: tuple[Action, ...] = ()

    def __post_init__(self) -> None:
        if self.wait_until not in ("load", "networkidle"):
            raise ValueError(f"wait_until must be 'load' or 'networkidle', not {self.wait_until!r}")
        if not 0 <= self.wait_seconds <= MAX_WAIT_SECONDS:
            raise ValueError(f"wait_seconds must be between 0 and {MAX_WAIT_SECONDS:g}")
        if self.wait_for_selector is not None:
            _check_selector(self.wait_for_selector)
        unknown = set(self.block_resources) - BLOCKABLE_RESOURCES
        if unknown:
            raise ValueError(
                f"block_resources may hold {sorted(BLOCKABLE_RESOURCES)}, not {unknown}"
            )
        for name in ("viewport_width", "viewport_height"):
            value = getattr(self, name)
            if not MIN_VIEWPORT <= value <= MAX_VIEWPORT:
                raise ValueError(f"{name} must be between {MIN_VIEWPORT} and {MAX_VIEWPORT}")


def _check_selector(selector: str) -> None:
    """A CSS selector lexbor can parse (chromium parses what lexbor does), 1000 characters at
    most: refused here rather than failing in the browser."""
    if not 0 < len(selector) <= 1000:
        raise ValueError("wait_for_selector must be a CSS selector of 1 to 1000 characters")
    try:
        LexborHTMLParser("").css_first(selector)
    except SelectolaxError:
        raise ValueError(f"wait_for_selector is not a CSS selector: {selector!r}") from None


@dataclass(frozen=True, slots=True)
class RenderResult:
    """A rendered page. ``html`` is the DOM after the scripts ran, serialized; it goes through
    the same extraction as fetched HTML."""

    url: str  # the URL asked for
    final_url: str  # where the page ended: after redirects and script navigations
    status: int  # HTTP status of the main document
    headers: dict[str, str]  # its response headers, names in lower case
    html: str
    screenshot: Screenshot | None = None
    elapsed_seconds: float = 0.0
    #: Requests and tunnels the page opened through the proxy.
    requests: int = 0
    #: Refused by the address guard (loopback, private, metadata addresses).
    blocked_requests: int = 0
    #: Not downloaded because of ``block_resources``.
    skipped_requests: int = 0
    bytes_received: int = 0
    #: ``render_max_bytes`` was reached: later downloads were cut, the page may be incomplete.
    over_budget: bool = False
    #: The first refused destinations, ``host:port (reason)``.
    blocked: tuple[str, ...] = ()
    #: Waits that did not happen in time: "load", "networkidle", "selector".
    waits_timed_out: tuple[str, ...] = field(default=())
    #: Requests the ad filter lists refused (counted in ``skipped_requests`` too).
    ads_blocked: int = 0
    #: Why ads were not blocked when asked to be (no filter lists here).
    ads_note: str | None = None
    #: What the actions gave, in Firecrawl's shape (``scrapes``, ``javascriptReturns``, …);
    #: None when none were asked.
    actions: dict[str, Any] | None = None
    #: The screenshot and pdf actions' files, in the order they ran (``actions`` holds each
    #: one's index among those of its kind).
    captures: tuple[Capture, ...] = ()
