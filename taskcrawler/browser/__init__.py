"""Rendering pages in a headless browser (Debian's chromium, driven by Playwright).

``BrowserRenderer`` is imported lazily: Playwright costs a tenth of a second to import, and only
a worker that renders needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from taskcrawler.browser.availability import Availability, find_chromium, render_availability
from taskcrawler.browser.options import (
    BLOCKABLE_RESOURCES,
    TEXT_ONLY,
    RenderOptions,
    RenderResult,
)
from taskcrawler.domain.pages import Screenshot

if TYPE_CHECKING:
    from taskcrawler.browser.renderer import BrowserRenderer, RendererStats


def __getattr__(name: str) -> Any:
    if name in ("BrowserRenderer", "RendererStats"):
        from taskcrawler.browser import renderer

        return getattr(renderer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BLOCKABLE_RESOURCES",
    "TEXT_ONLY",
    "Availability",
    "BrowserRenderer",
    "RenderOptions",
    "RenderResult",
    "RendererStats",
    "Screenshot",
    "find_chromium",
    "render_availability",
]
