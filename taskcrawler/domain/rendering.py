"""What a job asks of the browser: whether to render its page (``render``), and how
(``render_options``). Pure: the worker turns it into a render, the API checks it at the edge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from taskcrawler.domain.actions import MAX_VIEWPORT as MAX_VIEWPORT
from taskcrawler.domain.actions import MIN_VIEWPORT as MIN_VIEWPORT
from taskcrawler.domain.scrape_options import ScrapeOptions

RenderMode = Literal["never", "auto", "always"]
RENDER_MODES: tuple[str, ...] = get_args(RenderMode)
WaitUntil = Literal["load", "networkidle"]
#: Resource types a render can leave out (the browser's names).
BLOCKABLE = ("image", "font", "media")
#: The format that asks for a picture of the rendered page; it needs a browser.
SCREENSHOT = "screenshot"

#: The longest a job may ask to wait for network idle or a selector; the render's own deadline
#: (``render_timeout_seconds``) bounds it further.
MAX_WAIT_SECONDS = 60.0
MAX_SELECTOR_CHARS = 1000
#: The phone a ``mobile`` render emulates (a Pixel 7's screen in CSS pixels, touch, its
#: Chrome's user agent); the deployment's own user agent follows, so the site still sees who
#: is asking.
MOBILE_VIEWPORT = (412, 915)
MOBILE_USER_AGENT = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Mobile Safari/537.36"
)


def mobile_user_agent(operator_agent: str) -> str:
    """The user agent of a mobile render and of its page's fetch: the phone's, then ours."""
    return f"{MOBILE_USER_AGENT} {operator_agent}".strip()


def check_viewport(width: int, height: int) -> None:
    """A viewport a browser is asked for: each side within :data:`MIN_VIEWPORT` and
    :data:`MAX_VIEWPORT` pixels (ValueError otherwise)."""
    if not (MIN_VIEWPORT <= width <= MAX_VIEWPORT and MIN_VIEWPORT <= height <= MAX_VIEWPORT):
        bounds = f"between {MIN_VIEWPORT} and {MAX_VIEWPORT}"
        raise ValueError(f"width and height must be {bounds} pixels")


@dataclass(frozen=True, slots=True)
class RenderRequest:
    """How to render a job's page. Waits that do not happen in time are not errors: the page
    is taken as it is then, and the job's result says which wait timed out."""

    #: ``load``: the load event; ``networkidle`` (the default: most app shells fetch their
    #: content after the load event): also no request for half a second.
    wait_until: WaitUntil = "networkidle"
    #: A CSS selector to wait for (attached to the DOM).
    wait_for: str | None = None
    wait_seconds: float = 10.0
    #: Resource types not downloaded, of :data:`BLOCKABLE`.
    block: tuple[str, ...] = ()
    viewport_width: int = 1280
    viewport_height: int = 800
    #: A screenshot of the whole page (cut at ``render_screenshot_max_height``), or of the
    #: viewport only.
    full_page: bool = True

    def __post_init__(self) -> None:
        check_viewport(self.viewport_width, self.viewport_height)

    def to_json(self) -> dict[str, Any]:
        return {
            "wait_until": self.wait_until,
            "wait_for": self.wait_for,
            "wait_seconds": self.wait_seconds,
            "block": list(self.block),
            "viewport": {"width": self.viewport_width, "height": self.viewport_height},
            "full_page": self.full_page,
        }

    def viewport(self, mobile: bool = False) -> tuple[int, int]:
        """The viewport rendered: as asked, or a phone's (``mobile``) when none was."""
        asked = (self.viewport_width, self.viewport_height)
        default = (DEFAULT_RENDER.viewport_width, DEFAULT_RENDER.viewport_height)
        return MOBILE_VIEWPORT if mobile and asked == default else asked

    @classmethod
    def from_json(cls, value: dict[str, Any] | None) -> RenderRequest:
        """The request :meth:`to_json` stored; ``None`` (nothing stored) is the defaults."""
        if not value:
            return DEFAULT_RENDER
        viewport = value.get("viewport") or {}
        return cls(
            wait_until=value.get("wait_until") or DEFAULT_RENDER.wait_until,
            wait_for=value.get("wait_for"),
            wait_seconds=float(value.get("wait_seconds", DEFAULT_RENDER.wait_seconds)),
            block=tuple(value.get("block") or ()),
            viewport_width=int(viewport.get("width", DEFAULT_RENDER.viewport_width)),
            viewport_height=int(viewport.get("height", DEFAULT_RENDER.viewport_height)),
            full_page=bool(value.get("full_page", DEFAULT_RENDER.full_page)),
        )


DEFAULT_RENDER = RenderRequest()


def effective_mode(
    mode: str | None,
    formats: tuple[str, ...] | list[str] | list[Any] | None,
    options: ScrapeOptions | None = None,
) -> RenderMode:
    """The render mode a job runs with: as asked, or, when not asked, ``always`` for a
    screenshot, a ``mobile`` render or actions (only a browser does them) and ``never``
    otherwise. ``never`` with any of them is refused (ValueError)."""
    needs = browser_need(formats, options)
    if mode is None:
        return "always" if needs else "never"
    if mode not in RENDER_MODES:
        raise ValueError(f"render must be one of {', '.join(RENDER_MODES)}, not {mode!r}")
    if mode == "never" and needs:
        raise ValueError(f'{needs} needs a browser: render "auto" or "always"')
    return cast(RenderMode, mode)


def browser_need(
    formats: tuple[str, ...] | list[str] | list[Any] | None, options: ScrapeOptions | None
) -> str | None:
    """What of a job only a browser does, named for a refusal; None when nothing is."""
    if SCREENSHOT in (formats or ()):
        return "the screenshot format"
    return None if options is None else options.browser_need
