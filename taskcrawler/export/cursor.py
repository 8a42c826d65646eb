"""The ``since`` cursor: an export position, opaque to clients.

``v1.<seq>.<job id hex>`` in URL-safe base64 without padding: short, safe in a query string, and
versioned so that its form may change without old cursors being misread. Made and read (every
field bounded) by :mod:`taskcrawler.domain.cursors`.
"""

from __future__ import annotations

from taskcrawler.domain.cursors import MAX_EXPORT_CURSOR_CHARS as MAX_CURSOR_CHARS
from taskcrawler.domain.cursors import decode_export_cursor as decode_cursor
from taskcrawler.domain.cursors import encode_export_cursor as encode_cursor

__all__ = ["MAX_CURSOR_CHARS", "decode_cursor", "encode_cursor"]
