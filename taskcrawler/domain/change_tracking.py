"""Firecrawl's ``changeTracking``: a page scraped now against this key's previous scrape of it,
from the run history monitors keep (:mod:`taskcrawler.domain.runs`). Pure.

``changeStatus`` is ``new`` (no earlier scrape kept), ``same`` (the Markdown is exactly the
previous scrape's), ``changed``, or ``removed`` (the page answers 404 or 410 where it had
content); ``previousScrapeAt`` is when the previous scrape was fetched. The ``git-diff`` mode
adds ``diff``: the unified diff of the Markdown (``text``, bounded as
:func:`~taskcrawler.domain.diffs.unified_diff` bounds it) and the same parsed into files, chunks
and changes (``json``), as Firecrawl gives it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from taskcrawler.domain.diffs import unified_diff
from taskcrawler.domain.runs import RunContent

#: The modes TaskCrawler does: ``git-diff``. ``json`` (Firecrawl's LLM comparison) it does not.
MODES = ("git-diff",)
_GONE = frozenset({404, 410})
ChangeStatus = Literal["new", "same", "changed", "removed"]


class InvalidTracking(ValueError):
    """A ``changeTracking`` request that is refused; ``field`` names the option."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True, slots=True)
class TrackingRequest:
    """What a request's ``changeTracking`` asks for."""

    git_diff: bool = False


def tracking_request(options: Mapping[str, Any], where: str) -> TrackingRequest:
    """Firecrawl's ``{"modes", "schema", "prompt", "tag"}``, checked."""
    if unknown := sorted(set(options) - {"type", "modes", "schema", "prompt", "tag"}):
        raise InvalidTracking(f"{where}.{unknown[0]}", "not an option of changeTracking")
    modes = options.get("modes") or []
    if not isinstance(modes, list) or not all(isinstance(mode, str) for mode in modes):
        raise InvalidTracking(f"{where}.modes", "must be a list of modes")
    for index, mode in enumerate(modes):
        if mode == "json":
            raise InvalidTracking(
                f"{where}.modes[{index}]", "json needs an LLM, which TaskCrawler does not run"
            )
        if mode not in MODES:
            raise InvalidTracking(f"{where}.modes[{index}]", f"unknown mode {mode!r}: git-diff")
    for unused in ("schema", "prompt"):
        if options.get(unused) is not None:
            raise InvalidTracking(f"{where}.{unused}", "only the json mode takes it")
    if options.get("tag") is not None:
        raise InvalidTracking(f"{where}.tag", "TaskCrawler keeps one history per URL and key")
    return TrackingRequest(git_diff="git-diff" in modes)


@dataclass(frozen=True, slots=True)
class Previous:
    """The previous scrape: when it was fetched and what it read."""

    fetched_at: datetime
    content: RunContent


def change_tracking(
    request: TrackingRequest,
    previous: Previous | None,
    markdown: str,
    http_status: int | None,
) -> dict[str, Any]:
    """The document's ``changeTracking``."""
    status = _status(previous, markdown, http_status)
    tracked: dict[str, Any] = {
        "previousScrapeAt": previous.fetched_at.isoformat() if previous else None,
        "changeStatus": status,
        "visibility": "visible",
    }
    if request.git_diff and previous is not None and status != "same":
        diff = unified_diff(previous.content.markdown, markdown)
        tracked["diff"] = {"text": diff.text, "json": {"files": _files(diff.text)}}
    return tracked


def _status(previous: Previous | None, markdown: str, http_status: int | None) -> ChangeStatus:
    if previous is None:
        return "new"
    if http_status in _GONE:
        return "removed"
    return "same" if previous.content.markdown == markdown else "changed"


def _files(text: str) -> list[dict[str, Any]]:
    """A unified diff as parse-diff reads it: its file, its chunks, each chunk's changes."""
    if not text:
        return []
    lines = text.split("\n")
    chunks: list[dict[str, Any]] = []
    for line in lines[2:]:
        if line.startswith("@@"):
            chunks.append({"content": line, "changes": []})
        elif chunks and line and not line.startswith("\\"):
            kind = {"+": "add", "-": "del"}.get(line[0], "normal")
            chunks[-1]["changes"].append({"type": kind, "content": line})
    return [{"from": "previous", "to": "current", "chunks": chunks}]


def changed_lines(tracked: Mapping[str, Any]) -> Sequence[str]:
    """The added and removed lines of a tracked document's diff (for tests and logs)."""
    files = (tracked.get("diff") or {}).get("json", {}).get("files", [])
    return [
        change["content"]
        for file in files
        for chunk in file["chunks"]
        for change in chunk["changes"]
        if change["type"] != "normal"
    ]


__all__ = [
    "MODES",
    "InvalidTracking",
    "Previous",
    "TrackingRequest",
    "change_tracking",
    "tracking_request",
]
