"""The ``since`` cursor: an export position, opaque to clients.

``v1.<seq>.<job id hex>`` in URL-safe base64 without padding: short, safe in a query string, and
versioned so that its form may change without old cursors being misread.
"""

from __future__ import annotations

import base64
import binascii
from uuid import UUID

from taskcrawler.domain.errors import InvalidCursor
from taskcrawler.domain.exports import ExportPosition

MAX_CURSOR_CHARS = 100


def encode_cursor(position: ExportPosition) -> str:
    raw = f"v1.{position.seq}.{position.job_id.hex}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> ExportPosition:
    """The position ``cursor`` names; :class:`InvalidCursor` for anything this did not make."""
    refused = InvalidCursor("not a cursor of this export (pass one it returned)", "since")
    if not cursor or len(cursor) > MAX_CURSOR_CHARS:
        raise refused
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        version, seq, job_id = raw.split(".")
        position = ExportPosition(int(seq), UUID(hex=job_id))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise refused from None
    if version != "v1" or position.seq < 0 or len(job_id) != 32 or not seq.isdigit():
        raise refused
    return position
