"""Runs a render's page actions (:mod:`taskcrawler.domain.actions`) in order on its page.

Each action gets :data:`ACTION_SECONDS` at most, and never more than the render has left; the
page's navigations and requests go through the page's proxy, as the page's own do. A
``screenshot`` or ``pdf`` action's file is made by the renderer (its ``capture``), within what
the actions' earlier files left of their byte budget. A failing
action raises ``action_failed`` naming its index, its type and a short reason: never the
text of Playwright's own error, which describes its internals.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from playwright.async_api import TimeoutError as PlaywrightTimeout

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.domain.actions import ACTION_SECONDS, MAX_SCRIPT_RETURN_CHARS, Action
from taskcrawler.domain.pages import Capture

#: Firecrawl's key names (``ENTER``) to the browser's (``Enter``), case aside.
_KEYS = {
    name.lower(): name
    for name in (
        "Enter",
        "Tab",
        "Escape",
        "Backspace",
        "Delete",
        "Insert",
        "Home",
        "End",
        "PageUp",
        "PageDown",
        "ArrowUp",
        "ArrowDown",
        "ArrowLeft",
        "ArrowRight",
        "Shift",
        "Control",
        "Alt",
        "Meta",
        "Space",
    )
} | {
    "esc": "Escape",
    "return": "Enter",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "pgup": "PageUp",
    "pgdn": "PageDown",
}
_SCROLL = """([direction, selector]) => {
  const target = selector ? document.querySelector(selector) : null;
  if (selector && !target) return false;
  const step = (direction === "up" ? -1 : 1) * (target ? target.clientHeight : innerHeight);
  (target || window).scrollBy(0, step);
  return true;
}"""
# A script's value as bounded JSON, read in the page: a huge value never crosses to us.
_RETURNED = """(value, max) => {
  let text;
  try { text = JSON.stringify(value === undefined ? null : value); }
  catch (e) { return {error: "its value cannot be turned into JSON"}; }
  if (text === undefined) text = "null";
  if (text.length > max) return {error: "it returned more than " + max + " characters"};
  return {type: typeof value, json: text};
}"""

Serialize = Callable[[Page], Awaitable[str]]
#: Makes a screenshot's PNG or a PDF of the page, of ``room`` bytes at most (None when over).
Capturer = Callable[[Page, Action, int], Awaitable[bytes | None]]


class ActionFailed(Exception):
    """An action's short reason, for :func:`run_actions` to name the action with."""


@dataclass
class Acted:
    """What a page's actions gave: Firecrawl's ``actions`` object, whose ``screenshots`` and
    ``pdfs`` hold each file's index in ``captures`` (the API serves them under URLs)."""

    output: dict[str, Any] = field(
        default_factory=lambda: {
            "screenshots": [],
            "scrapes": [],
            "javascriptReturns": [],
            "pdfs": [],
        }
    )
    captures: list[Capture] = field(default_factory=list)

    @property
    def captured_bytes(self) -> int:
        return sum(len(capture.data) for capture in self.captures)


async def run_actions(
    page: Page,
    actions: tuple[Action, ...],
    deadline: float,
    serialize: Serialize,
    capture: Capturer,
    max_chars: int,
) -> Acted:
    """Run ``actions`` on ``page`` before ``deadline`` (the loop's clock); what they gave.
    ``serialize`` reads the DOM for a ``scrape`` (bounded as the page's); the scrapes and
    script values together hold ``max_chars`` at most, and so many bytes do the screenshots and
    PDFs ``capture`` makes."""
    acted = Acted()
    loop = asyncio.get_running_loop()
    for index, action in enumerate(actions):
        where = f"actions[{index}] ({action.label})"
        seconds = min(ACTION_SECONDS, deadline - loop.time())
        if seconds <= 0:
            raise _failed(where, "no time was left within the render's deadline")
        try:
            async with asyncio.timeout(seconds):
                await _run(page, action, seconds, acted, serialize, capture, max_chars)
            if _size(acted.output) > max_chars:
                raise ActionFailed(f"the actions gave more than {max_chars:,} characters")
        except (TimeoutError, PlaywrightTimeout):
            raise _failed(where, f"not done within {seconds:.3g} s{_waited_for(action)}") from None
        except ActionFailed as exc:
            raise _failed(where, str(exc)) from None
        except PlaywrightError as exc:
            if _browser_gone(exc):
                raise  # the renderer's: a crash is transient, not the action's fault
            raise _failed(where, _reason(action, exc)) from None
    return acted


def _size(output: dict[str, Any]) -> int:
    scrapes = sum(len(scrape["html"]) for scrape in output["scrapes"])
    return scrapes + len(json.dumps(output["javascriptReturns"]))


def _browser_gone(exc: PlaywrightError) -> bool:
    message = str(exc)
    return "Target crashed" in message or "has been closed" in message


async def _run(
    page: Page,
    action: Action,
    seconds: float,
    acted: Acted,
    serialize: Serialize,
    capture: Capturer,
    max_bytes: int,
) -> None:
    timeout = seconds * 1000
    kind = action.type
    output = acted.output
    if kind == "wait" and action.selector is not None:
        await page.wait_for_selector("css=" + action.selector, state="attached", timeout=timeout)
    elif kind == "wait":
        await asyncio.sleep((action.milliseconds or 0) / 1000)
    elif kind == "click":
        await _click(page, action, timeout)
    elif kind == "write":
        await page.keyboard.type(action.text or "")
    elif kind == "press":
        key = action.key or ""
        await page.keyboard.press(_KEYS.get(key.lower(), key))
    elif kind == "scroll":
        if not await page.evaluate(_SCROLL, [action.direction, action.selector]):
            raise ActionFailed(f"no element matches {action.selector!r}")
    elif kind == "scrape":
        output["scrapes"].append({"url": page.url, "html": await serialize(page)})
    elif kind == "executeJavascript":
        output["javascriptReturns"].append(await _script(page, action.script or ""))
    elif kind in ("screenshot", "pdf"):
        await _capture(page, action, acted, capture, max_bytes)


async def _capture(
    page: Page, action: Action, acted: Acted, capture: Capturer, max_bytes: int
) -> None:
    """A screenshot or a PDF, within the bytes the actions' earlier files left."""
    room = max_bytes - acted.captured_bytes
    data = await capture(page, action, room) if room > 0 else None
    if data is None:
        raise ActionFailed(f"its file is over the {max_bytes:,} bytes the actions' files may hold")
    kind: Literal["screenshot", "pdf"] = "pdf" if action.type == "pdf" else "screenshot"
    listed = acted.output["pdfs" if kind == "pdf" else "screenshots"]
    listed.append(len(listed))
    acted.captures.append(Capture(kind, data))


async def _click(page: Page, action: Action, timeout_ms: float) -> None:
    selector = "css=" + (action.selector or "")
    if not action.all:
        await page.click(selector, timeout=timeout_ms)
        return
    await page.wait_for_selector(selector, state="attached", timeout=timeout_ms)
    for element in await page.query_selector_all(selector):
        await element.click(timeout=timeout_ms)


async def _script(page: Page, script: str) -> dict[str, Any]:
    """The script's value (awaited when a promise) as ``{type, value}``, bounded in size."""
    handle = await page.evaluate_handle(script)
    try:
        returned = await handle.evaluate(_RETURNED, MAX_SCRIPT_RETURN_CHARS)
    finally:
        await handle.dispose()
    if "error" in returned:
        raise ActionFailed(str(returned["error"]))
    return {"type": returned["type"], "value": json.loads(returned["json"])}


def _waited_for(action: Action) -> str:
    if action.selector is not None and action.type in ("wait", "click"):
        return f": no element matched {action.selector!r} (or it could not be clicked)"
    return ""


def _reason(action: Action, exc: PlaywrightError) -> str:
    """A short reason: a script's own error (its first line) or what the action could not do."""
    message = str(exc)
    if action.type == "executeJavascript":
        first = message.split("\n", 1)[0]
        first = first.split(": ", 1)[1] if first.startswith("Page.evaluate") else first
        return f"the script threw {first[:200]}"
    if action.type == "press" and "Unknown key" in message:
        return f"unknown key {action.key!r}"
    if "context was destroyed" in message or "navigat" in message:
        return "the page navigated away while it ran"
    return "the browser could not do it"


def _failed(where: str, reason: str) -> FetchError:
    return FetchError(ErrorCode.ACTION_FAILED, f"{where} failed: {reason}", transient=False)
