"""Pieces of the hard limits: Retry-After, content types, declared lengths, reading a body
within its limit, error mapping."""

from __future__ import annotations

import asyncio
from unittest import mock

import pytest
from aiohttp import (
    ClientConnectorDNSError,
    ClientConnectorError,
    ClientError,
    ClientOSError,
    ClientPayloadError,
    ServerDisconnectedError,
    StreamReader,
)
from aiohttp.client_reqrep import ConnectionKey

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.fetch.fetcher import ALLOWED_CONTENT_TYPES, client_error
from taskcrawler.fetch.guard import BlockedSocketError
from taskcrawler.fetch.limits import (
    MAX_RETRY_AFTER_SECONDS,
    check_content_type,
    check_declared_length,
    parse_retry_after,
    read_limited,
)

NOW = 1_445_412_480.0  # Wed, 21 Oct 2015 07:28:00 GMT


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("120", 120.0),
        (" 7 ", 7.0),
        ("0", 0.0),
        ("Wed, 21 Oct 2015 07:28:30 GMT", 30.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # in the past: retry now
        ("Wed, 21 Oct 2015 07:28:30", None),  # not an HTTP-date: no zone
        ("-5", None),
        ("soon", None),
        ("1.5", None),
        ("999999999", MAX_RETRY_AFTER_SECONDS),
        ("\u00b2", None),  # a digit to str.isdigit(), none to float(): it raised ValueError
        ("\u0663", None),  # an Arabic-Indic three: no DIGIT of RFC 9110
        # Numbers too big for a date: they raised OverflowError out of the fetch.
        ("Wed, 21 Oct 99999999999999999999 07:28:30 GMT", None),
        ("Wed, 99999999999 Oct 2015 07:28:30 GMT", None),
        ("Wed, 21 Oct 2015 07:28:30 +99999999999999999999", None),
    ],
)
def test_retry_after(header: str | None, expected: float | None) -> None:
    assert parse_retry_after(header, now=NOW) == expected


@pytest.mark.parametrize(
    "header", [None, "text/html", "TEXT/HTML; charset=utf-8", "application/xhtml+xml", "text/plain"]
)
def test_content_types_we_extract_pass(header: str | None) -> None:
    check_content_type(header, ALLOWED_CONTENT_TYPES)


@pytest.mark.parametrize(
    "header", ["image/png", "application/octet-stream", "application/pdf", "video/mp4", ""]
)
def test_other_content_types_are_refused(header: str) -> None:
    with pytest.raises(FetchError) as caught:
        check_content_type(header, ALLOWED_CONTENT_TYPES)
    assert caught.value.code == ErrorCode.UNSUPPORTED_CONTENT_TYPE
    assert caught.value.transient is False


def test_declared_length_over_the_limit_is_refused_early() -> None:
    with pytest.raises(FetchError) as caught:
        check_declared_length({"Content-Length": "1001"}, 1000)
    assert caught.value.code == ErrorCode.TOO_LARGE
    check_declared_length({"Content-Length": "1000"}, 1000)
    # Compressed: the declared size is not the decoded size, so the stream count decides.
    check_declared_length({"Content-Length": "5000", "Content-Encoding": "gzip"}, 1000)
    check_declared_length({"Content-Length": "junk"}, 1000)


def test_a_declared_length_of_thousands_of_digits_is_read_by_its_value() -> None:
    # aiohttp's parser takes any number of leading zeros; int() refuses over 4,300 digits.
    check_declared_length({"Content-Length": "0" * 5000 + "1000"}, 1000)
    with pytest.raises(FetchError) as caught:
        check_declared_length({"Content-Length": "0" * 5000 + "1001"}, 1000)
    assert caught.value.code == ErrorCode.TOO_LARGE


def test_status_mapping() -> None:
    assert FetchError.for_status(404).code == "http_404"
    assert FetchError.for_status(404).transient is False
    assert FetchError.for_status(410).code == "http_410"
    assert FetchError.for_status(429, retry_after=3).transient is True
    assert FetchError.for_status(503, retry_after=3).retry_after == 3
    assert FetchError.for_status(500).code == ErrorCode.HTTP_5XX


KEY = ConnectionKey("example.com", 80, False, True, None, None, None)


@pytest.mark.parametrize(
    ("exc", "code", "transient"),
    [
        (ClientConnectorDNSError(KEY, OSError(-2, "no name")), ErrorCode.DNS, True),
        (ClientConnectorError(KEY, ConnectionRefusedError(111, "refused")), "connect", True),
        (ClientConnectorError(KEY, BlockedSocketError("no")), ErrorCode.BLOCKED_ADDRESS, False),
        (ServerDisconnectedError(), ErrorCode.CONNECTION_CLOSED, True),
        (ClientPayloadError("truncated"), ErrorCode.CONNECTION_CLOSED, True),
        (ClientOSError(104, "reset"), ErrorCode.CONNECTION_CLOSED, True),
    ],
)
def test_client_errors_map_to_codes(exc: Exception, code: str, transient: bool) -> None:
    assert isinstance(exc, ClientError)
    error = client_error(exc)
    assert error.code == code
    assert error.transient is transient


def _stream(chunks: list[bytes], *, ended: bool) -> StreamReader:
    """A response body as aiohttp hands it over: ``chunks`` received, the end too if
    ``ended`` (a small page arrives whole with its headers), else fed after the read began."""
    stream = StreamReader(mock.Mock(_reading_paused=False), 2**16, loop=asyncio.get_running_loop())
    if ended:
        for chunk in chunks:
            stream.feed_data(chunk)
        stream.feed_eof()
        return stream

    async def arrive() -> None:
        for chunk in chunks:
            await asyncio.sleep(0)
            stream.feed_data(chunk)
        stream.feed_eof()

    task = asyncio.get_running_loop().create_task(arrive())
    _ARRIVALS.add(task)
    task.add_done_callback(_ARRIVALS.discard)
    return stream


_ARRIVALS: set[asyncio.Task[None]] = set()


@pytest.mark.parametrize("ended", [True, False], ids=["whole", "streamed"])
async def test_a_body_within_the_limit_is_read_whole(ended: bool) -> None:
    body = await read_limited(_stream([b"abc", b"def"], ended=ended), 6)
    assert body == b"abcdef"


@pytest.mark.parametrize("ended", [True, False], ids=["whole", "streamed"])
async def test_a_body_over_the_limit_is_refused(ended: bool) -> None:
    with pytest.raises(FetchError) as raised:
        await read_limited(_stream([b"abc", b"defg"], ended=ended), 6)
    assert raised.value.code == ErrorCode.TOO_LARGE


@pytest.mark.parametrize("ended", [True, False], ids=["whole", "streamed"])
async def test_a_body_over_the_limit_is_cut_when_asked(ended: bool) -> None:
    body = await read_limited(_stream([b"abc", b"defg"], ended=ended), 6, truncate=True)
    assert body == b"abcdef"
