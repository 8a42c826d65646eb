"""What the API refuses at its edge, for every endpoint: text no database can store, numbers that
are not numbers, instants without a time zone.

PostgreSQL refuses NUL (U+0000) in text and JSON, and no database can encode a lone surrogate
(U+D800-U+DFFF, which a JSON body can spell as ``"\\ud800"``) as UTF-8. Such a value would fail
inside a query or an INSERT as a 500, on one backend and not the other. So:

* every request body is a :class:`RequestModel`, which checks every string it holds, at any
  depth, and refuses NaN and infinities;
* :class:`EdgeGuard` checks the path, the query string and the headers of every request before
  routing (those are decoded by the server with replacement, so only NUL can reach them);
* datetimes are :data:`Instant`: with a time zone, and still a date once converted to UTC;
* ids (in a path, a query or a body) are :data:`Id`: one spelling of a UUID, the one the API
  writes, so that one object has one URL.

Each refusal is a ``422`` naming the field, in FastAPI's usual shape.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl
from uuid import UUID

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
)
from pydantic_core import PydanticCustomError
from pydantic_core.core_schema import ValidationInfo
from starlette.types import ASGIApp, Receive, Scope, Send

from taskcrawler.api.errors import send_json

_SURROGATE = re.compile("[\ud800-\udfff]")
#: The ``type`` of the 422 error item, wherever the text was.
UNSTORABLE = "unstorable_text"


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored (a NUL or a lone surrogate), or None when it can."""
    if "\x00" in text:
        return "a NUL character (U+0000)"
    if not text.isascii() and (found := _SURROGATE.search(text)):
        return f"a lone surrogate (U+{ord(found.group()):04X})"
    return None


def _check_storable(value: Any, where: str) -> None:
    if isinstance(value, str):
        if reason := unstorable(value):
            raise PydanticCustomError(
                UNSTORABLE,
                "{where} holds {reason}, which cannot be stored",
                {"where": where, "reason": reason},
            )
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_storable(item, f"{where}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_storable(key, f"{where} (a key)")
            _check_storable(item, f"{where}[{key!r}]")


class RequestModel(BaseModel):
    """The base of every request body: unknown fields, unstorable text, NaN and infinities are
    refused, whatever the field."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, value: Any, info: ValidationInfo) -> Any:
        _check_storable(value, info.field_name or "the value")
        return value


def _in_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("the date is out of range once converted to UTC") from None


#: A point in time: a time zone is required (a naive date could mean any of 27 hours), and it is
#: converted to UTC here, where an overflow is still a 422 rather than an error in the query.
Instant = Annotated[AwareDatetime, AfterValidator(_in_utc)]


#: A UUID as the API writes it: 36 characters, 8-4-4-4-12 hexadecimal digits and hyphens (hex
#: digits in either case, RFC 9562). Python's UUID also reads ``{…}``, ``urn:uuid:…`` and 32 bare
#: digits; each would be a second URL for one object, so they are refused.
_CANONICAL_ID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


def is_canonical_id(text: str) -> bool:
    """``text`` is a UUID spelled as the API writes one."""
    return _CANONICAL_ID.fullmatch(text) is not None


def _one_spelling(value: Any) -> Any:
    if isinstance(value, str) and not is_canonical_id(value):
        raise PydanticCustomError(
            "uuid_spelling",
            "an id is written as the API writes it: 36 characters, 8-4-4-4-12 hexadecimal "
            "digits separated by hyphens",
        )
    return value


#: An id in a path, a query or a body: a UUID in its one spelling.
Id = Annotated[UUID, BeforeValidator(_one_spelling)]


class EdgeGuard:
    """A pure ASGI middleware: a NUL in the path, the query string or a header gets a 422 before
    any route sees it (routes take ids, cursors, hosts and keys from there into queries)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (error := _nul_in(scope)) is not None:
            await send_json(send, 422, {"detail": [error]})
            return
        await self.app(scope, receive, send)


def _nul_in(scope: Scope) -> dict[str, Any] | None:
    """The validation error for the first NUL in the request line or headers, if any."""
    path: str = scope["path"]
    if "\x00" in path:
        return _error(("path",), "the path", path)
    query: bytes = scope["query_string"]
    if b"%00" in query or b"\x00" in query:
        for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            if "\x00" in name or "\x00" in value:
                return _error(("query", name), f"the query parameter {name!r}", value)
    for raw_name, raw_value in scope["headers"]:
        if b"\x00" in raw_name or b"\x00" in raw_value:
            name = raw_name.decode("latin-1")
            return _error(("header", name), f"the header {name!r}", raw_value.decode("latin-1"))
    return None


def _error(loc: tuple[str, ...], where: str, value: str) -> dict[str, Any]:
    return {
        "type": UNSTORABLE,
        "loc": loc,
        "msg": f"{where} holds a NUL character (U+0000), which cannot be stored",
        "input": value,
    }


# --- monitors ---------------------------------------------------------------------------------

#: What a monitor's jobs may keep (as for any job).
MonitorFormat = Literal["metadata", "markdown", "text", "html", "links"]
_URL_CHARS = 2048
_MAX_MONITOR_URLS = 1000


class MonitorCreate(RequestModel):
    """``POST /api/v1/monitors``: exactly one of ``url``, ``urls`` and ``crawl``."""

    url: str | None = Field(None, max_length=_URL_CHARS, description="One page to watch.")
    urls: list[Annotated[str, Field(max_length=_URL_CHARS)]] | None = Field(
        None, max_length=_MAX_MONITOR_URLS, description="Pages to watch (up to 1,000)."
    )
    crawl: dict[str, Any] | None = Field(
        None,
        description="A site to watch: a crawl's fields (url, limit, max_depth, include_paths, "
        "…). Each round crawls it; pages added and removed since the last round are reported.",
    )
    interval_seconds: float = Field(
        description="Seconds between runs; at least the deployment's minimum (default 60)."
    )
    formats: list[MonitorFormat] | None = Field(
        None,
        max_length=20,
        description='What each run\'s jobs keep; default ["metadata", "markdown"].',
    )
    ignore_selectors: list[Annotated[str, Field(max_length=200)]] | None = Field(
        None,
        max_length=20,
        description="CSS selectors of the parts of a page that change on every load (dates, "
        "counters, ads): left out before a run is compared with the last.",
    )
    callback_url: str | None = Field(
        None,
        max_length=_URL_CHARS,
        description="Gets a signed page.changed POST for each change (default: the key's).",
    )


class MonitorPatch(RequestModel):
    """``PATCH /api/v1/monitors/{id}``: pause, resume, a new interval, or formats to add."""

    paused: bool | None = Field(None, description="true pauses the monitor, false resumes it.")
    interval_seconds: float | None = Field(
        None, description="A new interval; the next run comes one new interval from now."
    )
    formats: list[MonitorFormat] | None = Field(
        None,
        max_length=20,
        description="Formats to add: the monitor's pages make them from their next run on (a "
        "monitor's formats only grow, as a job's do).",
    )
