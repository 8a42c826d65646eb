"""Hard limits on what a response may cost us, checked as early as the response allows."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Collection, Mapping

import aiohttp

from taskcrawler.domain import ErrorCode, FetchError

# Read in modest chunks so a body over the limit is refused after at most one chunk more than
# the limit, and a decompressed gzip bomb never sits in memory whole: aiohttp (3.13.3 on)
# inflates each network chunk only up to its read buffer, the rest as the body is read.
READ_CHUNK_BYTES = 64 * 1024
# A hostile or broken Retry-After ("wait 30 years") must not park a job forever.
MAX_RETRY_AFTER_SECONDS = 24 * 3600.0


def mime_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def check_content_type(header: str | None, allowed: Collection[str]) -> None:
    """Refuse a declared type we cannot extract, before any of the body is read.

    A response without a Content-Type is let through: RFC 9110 lets the recipient sniff it, and
    the body limit still bounds what it can cost.
    """
    if header is None:
        return
    kind = mime_type(header)
    if kind not in allowed:
        raise FetchError(
            ErrorCode.UNSUPPORTED_CONTENT_TYPE,
            f"the content type {kind or header!r} is not HTML, XHTML, XML or text",
        )


def check_declared_length(headers: Mapping[str, str], max_bytes: int) -> None:
    """Refuse early when the server declares an uncompressed body over the limit.

    With a Content-Encoding the declared length is the compressed size, which says nothing
    certain about the decoded size, so only the streaming count decides then.
    """
    declared = headers.get("Content-Length")
    if declared is None or headers.get("Content-Encoding", "identity").lower() != "identity":
        return
    if declared.isascii() and declared.isdigit() and _over(declared, max_bytes):
        raise _too_large(max_bytes, f" (Content-Length is {declared.lstrip('0')[:40]})")


def _over(digits: str, limit: int) -> bool:
    """Whether the number ASCII ``digits`` spell is over ``limit``. aiohttp's parser takes any
    number of leading zeros, and int() refuses over 4,300 digits: they are dropped first, and
    a number longer than ``limit`` is over it unread."""
    significant = digits.lstrip("0")
    return len(significant) > len(str(limit)) or int(significant or "0") > limit


async def read_limited(
    stream: aiohttp.StreamReader, max_bytes: int, *, truncate: bool = False
) -> bytes:
    """Read a (decompressed) body, stopping as soon as it passes ``max_bytes``: with
    ``truncate`` the first ``max_bytes`` are returned, otherwise ``too_large`` is raised."""
    if stream.is_eof():
        # The whole body is here already (a small page comes in the packets of its headers):
        # taken in one piece, without the chunk iterator's awaits.
        return _within(stream.read_nowait(), max_bytes, truncate=truncate)
    body = bytearray()
    async for chunk in stream.iter_chunked(READ_CHUNK_BYTES):
        body += chunk
        if len(body) > max_bytes:
            return _within(bytes(body), max_bytes, truncate=truncate)
    return bytes(body)


def _within(body: bytes, max_bytes: int, *, truncate: bool) -> bytes:
    """``body`` if it fits ``max_bytes``; else its first ``max_bytes`` with ``truncate``, or
    ``too_large``."""
    if len(body) <= max_bytes:
        return body
    if truncate:
        return body[:max_bytes]
    raise _too_large(max_bytes, "")


def _too_large(max_bytes: int, detail: str) -> FetchError:
    return FetchError(
        ErrorCode.TOO_LARGE, f"the body is over the limit of {max_bytes} bytes{detail}"
    )


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delay-seconds or an HTTP-date (RFC 9110)."""
    if value is None:
        return None
    value = value.strip()
    # ASCII digits only (RFC 9110's DIGIT): "²" is a digit to isdigit() and no number to
    # float(), whose ValueError made a 503 an internal error of the worker.
    if value.isascii() and value.isdigit():
        seconds = float(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None  # OverflowError: a day, year or zone too big for a date
        if when.tzinfo is None:
            return None  # HTTP-dates are always GMT; a zone-less date is not one
        seconds = when.timestamp() - (time.time() if now is None else now)
    return min(max(0.0, seconds), MAX_RETRY_AFTER_SECONDS)
