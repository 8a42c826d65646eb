"""The cursors the service hands out, and the only way one is read back.

A cursor comes back from a client, so it is input like any other: it may be forged, truncated or
built from out-of-range parts (an instant that overflows once converted to UTC, a sequence past
64 bits, an id of the wrong length). Every field is decoded and bounded here, before any query
sees it, and anything this module did not make is :class:`InvalidCursor` (a 422, Firecrawl's 400
on its routes): never an error of the database.

Two kinds:

* a list cursor, ``base64url("<instant>|<uuid>")``: the (created_at, id) of the last row of a
  newest-first page (jobs, crawls, a crawl's jobs, monitors, a monitor's changes);
* an export position, ``base64url("v1.<seq>.<32 hex>")``: the ``since`` of an export.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from taskcrawler.domain.errors import InvalidCursor
from taskcrawler.domain.exports import ExportPosition

#: Longer than any cursor this makes (a list cursor is about 90 characters).
MAX_LIST_CURSOR_CHARS = 200
#: An export position is at most ``v1.`` + 19 digits + ``.`` + 32 hex digits, encoded.
MAX_EXPORT_CURSOR_CHARS = 100
#: The largest export sequence: a signed 64-bit column.
MAX_EXPORT_SEQ = 2**63 - 1

_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_EXPORT_POSITION = re.compile(r"v1\.(0|[1-9][0-9]{0,18})\.([0-9a-f]{32})")
#: An ISO 8601 instant as :meth:`datetime.isoformat` writes one, always with its offset.
_INSTANT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{6})?[+-][0-9]{2}:[0-9]{2}"
)


@dataclass(frozen=True, slots=True)
class ListPosition:
    """Where a newest-first page stops: its last row's instant (aware, in UTC) and id."""

    instant: datetime
    row_id: UUID


def encode_list_cursor(instant: datetime, row_id: UUID) -> str:
    """The cursor after the row (``instant``, ``row_id``) of a newest-first listing."""
    raw = f"{instant.astimezone(UTC).isoformat()}|{row_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_list_cursor(cursor: str, parameter: str = "cursor") -> ListPosition:
    """The position ``cursor`` names; :class:`InvalidCursor` for anything this did not make,
    whatever it holds (``parameter`` names the query parameter in the refusal)."""
    raw = _unwrap(cursor, MAX_LIST_CURSOR_CHARS, parameter)
    instant, bar, row_id = raw.partition("|")
    if not bar or not _INSTANT.fullmatch(instant) or not _CANONICAL_UUID.fullmatch(row_id):
        raise _refused(parameter)
    try:
        # Both parse and conversion can fail: a day 31 in April, or 0001-01-01T00:00+14:00,
        # which is a moment before the first one datetime (and the databases' columns) hold.
        parsed = datetime.fromisoformat(instant).astimezone(UTC)
    except (ValueError, OverflowError):
        raise _refused(parameter) from None
    return ListPosition(parsed, UUID(row_id))


def encode_export_cursor(position: ExportPosition) -> str:
    raw = f"v1.{position.seq}.{position.job_id.hex}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_export_cursor(cursor: str, parameter: str = "since") -> ExportPosition:
    """The export position ``cursor`` names; :class:`InvalidCursor` for anything this did not
    make, a sequence past 64 bits included."""
    raw = _unwrap(cursor, MAX_EXPORT_CURSOR_CHARS, parameter)
    match = _EXPORT_POSITION.fullmatch(raw)
    if match is None or int(match[1]) > MAX_EXPORT_SEQ:
        raise InvalidCursor("not a cursor of this export (pass one it returned)", parameter)
    return ExportPosition(int(match[1]), UUID(hex=match[2]))


def _unwrap(cursor: str, max_chars: int, parameter: str) -> str:
    """The ASCII text inside ``cursor``'s base64url, bounded before anything is decoded."""
    if not cursor or len(cursor) > max_chars or not _BASE64URL.fullmatch(cursor):
        raise _refused(parameter)
    try:
        return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        raise _refused(parameter) from None


def _refused(parameter: str) -> InvalidCursor:
    return InvalidCursor(
        f"invalid {parameter}: not one this service returned (pass the previous page's)",
        parameter,
    )
