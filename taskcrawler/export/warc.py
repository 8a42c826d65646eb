"""WARC 1.1 (ISO 28500:2017): each archived response as a request and a response record, each
record its own gzip member, so any record can be read (or the file cut) at a member boundary.

The response record holds the status line, the headers and the body the archive kept. The body
is kept decoded (the fetcher undoes gzip or brotli content coding), so the headers that
described the coding on the wire (``Content-Encoding``, ``Transfer-Encoding``,
``Content-Length``) are replaced by a ``Content-Length`` of the body as stored: the record is a
consistent HTTP message, and its payload digest is the digest of that body. The request record
is rebuilt from the URL and the fetcher's fixed headers: requests are not archived.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from urllib.parse import urlsplit

from isal import igzip

from taskcrawler.domain.exports import ArchivedResponse, ExportedJob
from taskcrawler.export.cursor import encode_cursor

#: Names of the ids of records: the same job and finish always get the same record ids.
_NAMESPACE = uuid.UUID("5b0c7f0e-55b5-4f53-9e0a-2f3f8b7d8c61")
_DROPPED = frozenset({"content-encoding", "transfer-encoding", "content-length"})
GZIP_LEVEL = 1  # the archive's bodies are compressed fast too (storage/content.py)


def _digest(data: bytes) -> str:
    return (
        "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()
    )  # WARC convention; not for security


def _clean(text: str) -> str:
    """A header value or target on one line: a CR or LF would start another header."""
    return text.replace("\r", " ").replace("\n", " ")


def _date(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _record(fields: Mapping[str, str], block: bytes) -> bytes:
    head = "WARC/1.1\r\n" + "".join(
        f"{name}: {_clean(value)}\r\n" for name, value in fields.items()
    )
    head += f"Content-Length: {len(block)}\r\n\r\n"
    return igzip.compress(head.encode() + block + b"\r\n\r\n", compresslevel=GZIP_LEVEL)


def _http_response(archive: ArchivedResponse) -> bytes:
    try:
        reason = HTTPStatus(archive.http_status).phrase
    except ValueError:
        reason = ""
    lines = [f"HTTP/1.1 {archive.http_status} {reason}".rstrip()]
    lines += [
        f"{_clean(name)}: {_clean(value)}"
        for name, value in archive.headers.items()
        if name.lower() not in _DROPPED
    ]
    lines.append(f"content-length: {len(archive.body)}")
    head = "\r\n".join(lines) + "\r\n\r\n"
    return head.encode("utf-8", "surrogateescape") + archive.body


def _http_request(url: str, headers: Mapping[str, str]) -> bytes:
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [f"GET {_clean(target)} HTTP/1.1", f"host: {_clean(parts.netloc)}"]
    lines += [f"{_clean(name)}: {_clean(value)}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape")


class WarcWriter:
    """Turns exported jobs into gzipped WARC records. ``request_headers`` are the headers the
    fetcher sends with every request (its User-Agent), shown in the request records."""

    def __init__(self, request_headers: Mapping[str, str], software: str) -> None:
        self.request_headers = dict(request_headers)
        self.software = software

    def warcinfo(self, now: datetime) -> bytes:
        """The first record of an export: what wrote it."""
        block = (
            f"software: {self.software}\r\nformat: WARC File Format 1.1\r\n"
            "conformsTo: https://iipc.github.io/warc-specifications/specifications/"
            "warc-format/warc-1.1/\r\n"
        ).encode()
        fields = {
            "WARC-Type": "warcinfo",
            "WARC-Record-ID": f"<urn:uuid:{uuid.uuid4()}>",
            "WARC-Date": _date(now),
            "Content-Type": "application/warc-fields",
            "WARC-Block-Digest": _digest(block),
        }
        return _record(fields, block)

    def records(self, exported: ExportedJob) -> bytes:
        """The job's response and request records (two gzip members); b"" without an archive."""
        archive = exported.archive
        if archive is None:
            return b""
        name = f"{exported.job.id}/{exported.position.seq}"
        response_id = f"<urn:uuid:{uuid.uuid5(_NAMESPACE, name + '/response')}>"
        request_id = f"<urn:uuid:{uuid.uuid5(_NAMESPACE, name + '/request')}>"
        common = {
            "WARC-Date": _date(archive.fetched_at),
            "WARC-Target-URI": archive.final_url,
        }
        response = _http_response(archive)
        request = _http_request(archive.final_url, self.request_headers)
        return _record(
            {
                "WARC-Type": "response",
                "WARC-Record-ID": response_id,
                **common,
                "Content-Type": "application/http;msgtype=response",
                "WARC-Payload-Digest": _digest(archive.body),
                "WARC-Block-Digest": _digest(response),
                # Where this record stands in the export: pass it as ?since= to resume after it.
                "WARC-TaskCrawler-Cursor": encode_cursor(exported.position),
                "WARC-TaskCrawler-Job-Id": str(exported.job.id),
            },
            response,
        ) + _record(
            {
                "WARC-Type": "request",
                "WARC-Record-ID": request_id,
                **common,
                "WARC-Concurrent-To": response_id,
                "Content-Type": "application/http;msgtype=request",
                "WARC-Block-Digest": _digest(request),
            },
            request,
        )
