"""The client's one exception: what the API said (status and detail), or that it said nothing."""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any


class TaskCrawlerError(Exception):
    """The API refused a call, or could not be reached.

    ``status`` is the HTTP status (None when there was no answer: connection refused, timeout),
    ``detail`` what the API said about it, ``retry_after`` its Retry-After in seconds if any.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        detail: str = "",
        retry_after: float | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail
        self.retry_after = retry_after
        self.body = body

    @property
    def transient(self) -> bool:
        """Worth asking again later: no answer, rate-limited, or the service briefly down."""
        return self.status is None or self.status in (429, 502, 503, 504)


def detail_of(body: Any) -> str:
    """FastAPI's ``detail``: a string, or a list of validation errors made one line."""
    detail = body.get("detail") if isinstance(body, Mapping) else None
    if isinstance(detail, list):
        parts = []
        for item in detail:
            if not isinstance(item, Mapping):
                parts.append(str(item))
                continue
            where = ".".join(
                str(p) for p in item.get("loc", ()) if p not in ("body", "query", "path")
            )
            parts.append(f"{where}: {item.get('msg')}" if where else str(item.get("msg")))
        return "; ".join(parts)
    return str(detail) if detail else ""


def retry_after_of(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def refused(status: int, body: Any, retry_after: float | None, url: str) -> TaskCrawlerError:
    """The error for an answer of ``status`` >= 400: one line a person can act on."""
    detail = detail_of(body)
    if not detail:
        detail = "not found" if status == 404 else "no details"
        if status == 404 and body is None:
            detail = f"{url} does not exist: is this the address of a TaskCrawler API?"
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "error"
    message = f"{status} {reason}: {detail}"
    if status in (429, 503) and retry_after is not None:
        message += f"; try again in {retry_after:g} s"
    return TaskCrawlerError(
        message, status=status, detail=detail, retry_after=retry_after, body=body
    )
