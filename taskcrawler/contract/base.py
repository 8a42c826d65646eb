"""What every request body refuses, and what the resources share.

PostgreSQL refuses NUL (U+0000) in text and JSON, and no database can encode a lone surrogate
(U+D800-U+DFFF, which a JSON body can spell as ``"\\ud800"``) as UTF-8. Such a value would fail
inside a query or an INSERT as a 500, on one backend and not the other. So every request body is
a :class:`RequestModel`, which checks every string it holds, at any depth, and refuses NaN and
infinities; datetimes are :data:`Instant`: with a time zone, and still a date once converted to
UTC; ids (in a path, a query or a body) are :data:`Id`: one spelling of a UUID, the one the API
writes, so that one object has one URL. Each refusal is a ``422`` naming the field.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, get_args
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

from taskcrawler.domain import InvalidURL, validate_url

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


Format = Literal[
    "metadata",
    "markdown",
    "text",
    "html",
    "clean_html",
    "images",
    "links",
    "screenshot",
    "chunks",
    "json",
    "summary",
]
#: Entries ``formats`` may list, repeats included (they are dropped): each format a few times
#: over is a client's slip; more is not a list of formats.
MAX_FORMATS_LISTED = 4 * len(get_args(Format))
FinishedStatus = Literal["FAILED", "COMPLETED", "CANCELLED"]
FAILED: FinishedStatus = "FAILED"
MAX_BATCH = 1000
#: Largest value of an INTEGER column on every backend; bigger ones are refused, not overflowed.
MAX_INT32 = 2**31 - 1
#: A century: older than any job can be, and still a date (timedelta arithmetic overflows later).
MAX_AGE_SECONDS = 100 * 365 * 24 * 3600


def checked_url(url: str) -> str:
    try:
        return validate_url(url)
    except InvalidURL as exc:
        raise ValueError(str(exc)) from None


class ErrorOut(BaseModel):
    detail: str
    dependency: str | None = None


class Health(BaseModel):
    status: str
    checks: dict[str, str] = Field(default_factory=dict)
