"""Firecrawl's page actions: what a render does to its page, in order, before the page is
taken (wait, click, write, press, scroll, screenshot, scrape, executeJavascript, pdf). Pure:
the API checks a list here, storage keeps it with the job's render options, the renderer runs
it.

Every action is bounded before a browser is touched: at most :data:`MAX_ACTIONS`, selectors,
text, keys and scripts of a bounded length, a wait of at most :data:`MAX_WAIT_MS`. At run time
each action has :data:`ACTION_SECONDS` at most, all of them the render's deadline, and what a
script returns is cut off at :data:`MAX_SCRIPT_RETURN_CHARS`. At most :data:`MAX_CAPTURES`
screenshots and PDFs together, each and all of them within the deployment's body limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any
from uuid import UUID

MAX_ACTIONS = 50
#: One ``wait`` of milliseconds at most (Firecrawl's own bound for all waits is 60 s).
MAX_WAIT_MS = 30_000
#: The longest one action may take (a click waiting for its element, a script): the render's
#: deadline bounds all of them together.
ACTION_SECONDS = 15.0
MAX_SELECTOR_CHARS = 1000
MAX_TEXT_CHARS = 10_000
MAX_KEY_CHARS = 32
MAX_SCRIPT_CHARS = 50_000
#: A script's return value, as JSON, at most: a longer one fails its action.
MAX_SCRIPT_RETURN_CHARS = 64 * 1024
#: Screenshots and PDFs of one job's actions, together: each is stored and served on its own.
MAX_CAPTURES = 10
#: Chromium's paper sizes a ``pdf`` action may ask for (Firecrawl's names).
PDF_FORMATS = ("A0", "A1", "A2", "A3", "A4", "A5", "A6", "Letter", "Legal", "Tabloid", "Ledger")
MIN_PDF_SCALE, MAX_PDF_SCALE = 0.1, 2.0
#: A PDF is printed from its first this many pages, as a screenshot is cut at its height.
MAX_PDF_PAGES = 100
#: The bounds of every viewport a job asks for (its render's, a screenshot action's).
MIN_VIEWPORT, MAX_VIEWPORT = 200, 4096

#: Each action's fields: those it needs, and those it may have (Firecrawl's names).
_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "wait": (frozenset(), frozenset({"milliseconds", "selector"})),
    "click": (frozenset({"selector"}), frozenset({"all"})),
    "write": (frozenset({"text"}), frozenset()),
    "press": (frozenset({"key"}), frozenset()),
    "scroll": (frozenset(), frozenset({"direction", "selector"})),
    "screenshot": (frozenset(), frozenset({"fullPage", "quality", "viewport"})),
    "scrape": (frozenset(), frozenset()),
    "executeJavascript": (frozenset({"script"}), frozenset()),
    "pdf": (frozenset(), frozenset({"format", "landscape", "scale"})),
}
#: The actions whose result is a file (a PNG, a PDF), served by the jobs API.
CAPTURES = frozenset({"screenshot", "pdf"})
ACTION_TYPES = tuple(_FIELDS)


#: The lists of Firecrawl's ``actions`` object that hold the files, by action.
CAPTURE_LISTS = {"screenshot": "screenshots", "pdf": "pdfs"}


def capture_path(job_id: UUID, kind: str, index: int) -> str:
    """Where the jobs API serves a job's ``index``-th file of ``kind`` (screenshot, pdf)."""
    return f"/api/v1/jobs/{job_id}/actions/{CAPTURE_LISTS[kind]}/{index}"


def with_capture_paths(output: dict[str, Any], job_id: UUID) -> dict[str, Any]:
    """The actions' object as the job's result keeps it: each file's index (as the renderer
    lists them) turned into the path the jobs API serves it at."""
    paths = {
        name: [capture_path(job_id, kind, index) for index in output.get(name, ())]
        for kind, name in CAPTURE_LISTS.items()
    }
    return {**output, **paths}


class InvalidAction(ValueError):
    """An action that is refused; ``field`` names it (``actions[2].selector``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class Action:
    """One checked action; only the fields of its ``type`` are set."""

    type: str
    selector: str | None = None
    milliseconds: int | None = None
    text: str | None = None
    key: str | None = None
    direction: str | None = None
    script: str | None = None
    all: bool = False
    #: screenshot: of the whole page (cut as the screenshot format's), not the viewport.
    full_page: bool = False
    #: screenshot: the viewport it is taken at (width, height), the page's own when None.
    viewport: tuple[int, int] | None = None
    #: pdf: its paper size, orientation and scale.
    paper: str | None = None
    landscape: bool = False
    scale: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and v is not False}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Action:
        known = {k: v for k, v in value.items() if k in cls.__dataclass_fields__}
        if known.get("viewport") is not None:
            known["viewport"] = tuple(known["viewport"])
        return cls(**known)

    @property
    def label(self) -> str:
        """How an error names it: its type, and its selector when it has one."""
        return self.type if self.selector is None else f"{self.type} {self.selector!r}"


def parse_actions(value: Any, where: str = "actions") -> tuple[Action, ...]:
    """Firecrawl's ``actions``, checked; :class:`InvalidAction` names the first bad one."""
    if value is None:
        return ()
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise InvalidAction(where, "must be a list of actions")
    if len(value) > MAX_ACTIONS:
        raise InvalidAction(where, f"at most {MAX_ACTIONS} actions")
    actions = tuple(_action(item, f"{where}[{index}]") for index, item in enumerate(value))
    if sum(action.type in CAPTURES for action in actions) > MAX_CAPTURES:
        raise InvalidAction(where, f"at most {MAX_CAPTURES} screenshot and pdf actions together")
    return actions


def _action(item: Any, where: str) -> Action:
    if not isinstance(item, Mapping):
        raise InvalidAction(where, "must be an object with a type")
    kind = item.get("type")
    if kind not in _FIELDS:
        raise InvalidAction(f"{where}.type", f"one of {', '.join(ACTION_TYPES)}")
    needed, optional = _FIELDS[kind]
    given = {name for name, v in item.items() if name != "type" and v is not None}
    if unknown := sorted(given - needed - optional):
        raise InvalidAction(f"{where}.{unknown[0]}", f"not a field of a {kind} action")
    if missing := sorted(needed - given):
        raise InvalidAction(f"{where}.{missing[0]}", f"a {kind} action needs it")
    values = {name: item[name] for name in given}
    if kind == "wait" and len(given) != 1:
        raise InvalidAction(where, "a wait action takes milliseconds or a selector (one of them)")
    if "selector" in values:
        values["selector"] = _selector(values["selector"], f"{where}.selector")
    if "milliseconds" in values:
        values["milliseconds"] = _milliseconds(values["milliseconds"], f"{where}.milliseconds")
    for name, bound in (
        ("text", MAX_TEXT_CHARS),
        ("key", MAX_KEY_CHARS),
        ("script", MAX_SCRIPT_CHARS),
    ):
        if name in values:
            _text(values[name], bound, f"{where}.{name}")
    if "direction" in values and values["direction"] not in ("up", "down"):
        raise InvalidAction(f"{where}.direction", "up or down")
    if "all" in values and not isinstance(values["all"], bool):
        raise InvalidAction(f"{where}.all", "true or false")
    if kind == "scroll":
        values.setdefault("direction", "down")
    if kind == "screenshot":
        values = _screenshot(values, where)
    if kind == "pdf":
        values = _pdf(values, where)
    return Action(type=kind, **values)


def _screenshot(values: dict[str, Any], where: str) -> dict[str, Any]:
    """``fullPage`` and ``viewport``; ``quality`` (a JPEG's) is refused: screenshots are PNG."""
    if "quality" in values:
        raise InvalidAction(f"{where}.quality", "TaskCrawler's screenshots are PNG (no quality)")
    full_page = values.pop("fullPage", False)
    if not isinstance(full_page, bool):
        raise InvalidAction(f"{where}.fullPage", "true or false")
    checked: dict[str, Any] = {"full_page": full_page}
    if "viewport" in values:
        checked["viewport"] = _viewport(values["viewport"], f"{where}.viewport")
    return checked


def _viewport(value: Any, where: str) -> tuple[int, int]:
    sides = value if isinstance(value, Mapping) else {}
    width, height = sides.get("width"), sides.get("height")
    if set(sides) != {"width", "height"} or not all(
        isinstance(side, int)
        and not isinstance(side, bool)
        and MIN_VIEWPORT <= side <= MAX_VIEWPORT
        for side in (width, height)
    ):
        raise InvalidAction(
            where, f"{{width, height}}, each {MIN_VIEWPORT} to {MAX_VIEWPORT} pixels"
        )
    return int(width), int(height)  # type: ignore[arg-type]


def _pdf(values: dict[str, Any], where: str) -> dict[str, Any]:
    checked: dict[str, Any] = {}
    paper = values.get("format")
    if paper is not None and paper not in PDF_FORMATS:
        raise InvalidAction(f"{where}.format", f"one of {', '.join(PDF_FORMATS)}")
    checked["paper"] = paper
    landscape = values.get("landscape", False)
    if not isinstance(landscape, bool):
        raise InvalidAction(f"{where}.landscape", "true or false")
    checked["landscape"] = landscape
    scale = values.get("scale")
    if scale is not None and (
        isinstance(scale, bool)
        or not isinstance(scale, int | float)
        or not MIN_PDF_SCALE <= scale <= MAX_PDF_SCALE
    ):
        raise InvalidAction(f"{where}.scale", f"a number from {MIN_PDF_SCALE} to {MAX_PDF_SCALE}")
    checked["scale"] = None if scale is None else float(scale)
    return checked


def _selector(value: Any, where: str) -> str:
    _text(value, MAX_SELECTOR_CHARS, where)
    # Here: the command line's client commands import this module and never check a selector.
    from selectolax.lexbor import LexborHTMLParser, SelectolaxError

    try:
        LexborHTMLParser("").css_first(value)
    except SelectolaxError:
        raise InvalidAction(where, "not a CSS selector") from None
    return str(value)


def _milliseconds(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_WAIT_MS:
        raise InvalidAction(where, f"a whole number of milliseconds, 0 to {MAX_WAIT_MS:,}")
    return value


def _text(value: Any, bound: int, where: str) -> None:
    if not isinstance(value, str) or not 0 < len(value) <= bound:
        raise InvalidAction(where, f"a string of 1 to {bound:,} characters")
