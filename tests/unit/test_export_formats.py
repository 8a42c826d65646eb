"""The export formats: cursors, JSON Lines, and WARC records read back by warcio."""

from __future__ import annotations

import gzip
import io
import uuid
import zlib
from datetime import UTC, datetime

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from taskcrawler.domain.errors import InvalidCursor
from taskcrawler.domain.exports import ArchivedResponse, ExportedJob, ExportPosition
from taskcrawler.domain.jobs import Job, JobStatus
from taskcrawler.export import WarcWriter, decode_cursor, encode_cursor, jsonl_record

NOW = datetime(2026, 12, 5, 1, 2, 3, 456789, tzinfo=UTC)


def job(url: str = "http://site.test/a?b=1") -> Job:
    return Job(uuid.uuid4(), url, JobStatus.COMPLETED, 0, NOW, http_status=200, finished_at=NOW)


def archived(
    body: bytes, headers: dict[str, str] | None = None, status: int = 200
) -> ArchivedResponse:
    return ArchivedResponse(NOW, "http://site.test/a?b=1", status, headers or {}, body)


@given(st.integers(min_value=0, max_value=2**63 - 1), st.uuids())
def test_a_cursor_names_its_position_again(seq: int, job_id: uuid.UUID) -> None:
    position = ExportPosition(seq, job_id)
    cursor = encode_cursor(position)
    assert decode_cursor(cursor) == position
    assert cursor.isascii() and "=" not in cursor and "/" not in cursor and "+" not in cursor


@given(st.text(max_size=120))
def test_any_other_text_is_an_invalid_cursor_never_a_crash(text: str) -> None:
    try:
        position = decode_cursor(text)
    except InvalidCursor:
        return
    assert encode_cursor(position) == text


def test_a_jsonl_record_is_one_line_with_its_cursor_job_and_texts() -> None:
    exported = ExportedJob(
        ExportPosition(7, uuid.uuid4()), job(), texts={"markdown": "# Hi\nthere"}
    )
    line = jsonl_record(exported)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    record = orjson.loads(line)
    assert decode_cursor(record["cursor"]) == exported.position
    assert record["job"]["id"] == str(exported.job.id) and record["job"]["status"] == "COMPLETED"
    assert record["content"] == {"markdown": "# Hi\nthere"}


def test_a_jsonl_record_stays_one_line_for_readers_that_split_on_unicode_line_breaks() -> None:
    # httpx's iter_lines (the Python client's export) splits as str.splitlines does: on
    # U+2028, U+2029 and U+0085 too, which pages hold and JSON may carry unescaped.
    text = "one\u2028two\u2029three\x85four"
    exported = ExportedJob(ExportPosition(1, uuid.uuid4()), job(), texts={"markdown": text})
    line = jsonl_record(exported)
    assert len(line.decode().splitlines()) == 1
    assert orjson.loads(line)["content"] == {"markdown": text}


def read_back(data: bytes) -> list[tuple[str, dict[str, str], bytes, str | None]]:
    records = []
    for record in ArchiveIterator(io.BytesIO(data), check_digests="raise"):
        headers = dict(record.rec_headers.headers)
        payload = record.content_stream().read()
        http = record.http_headers.get_statuscode() if record.http_headers else None
        records.append((record.rec_type, headers, payload, http))
    return records


def test_warc_records_read_back_with_matching_digests_one_gzip_member_each() -> None:
    writer = WarcWriter({"user-agent": "TaskCrawler/test"}, "TaskCrawler test")
    body = "<html><title>é</title></html>".encode() * 50
    headers = {
        "content-type": "text/html; charset=utf-8",
        "content-encoding": "gzip",  # the archive keeps the body decoded: this must go
        "content-length": "12",
        "x-evil": "a\r\nSet-Cookie: injected",
    }
    exported = ExportedJob(ExportPosition(3, uuid.uuid4()), job(), archive=archived(body, headers))
    data = writer.warcinfo(NOW) + writer.records(exported)

    records = read_back(data)
    assert [kind for kind, *_ in records] == ["warcinfo", "response", "request"]
    _, response, payload, status = records[1]
    assert status == "200" and payload == body
    assert response["WARC-Target-URI"] == "http://site.test/a?b=1"
    assert response["WARC-Date"] == "2026-12-05T01:02:03.456789Z"
    assert response["WARC-Payload-Digest"].startswith("sha1:")
    assert decode_cursor(response["WARC-TaskCrawler-Cursor"]) == exported.position
    _, request, _, _ = records[2]
    assert request["WARC-Concurrent-To"] == response["WARC-Record-ID"]
    assert request["WARC-Target-URI"] == response["WARC-Target-URI"]

    # One gzip member per record: each decompresses alone to exactly one WARC record.
    members = []
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        members.append(inflater.decompress(rest))
        rest = inflater.unused_data
    assert len(members) == 3 and all(m.startswith(b"WARC/1.1\r\n") for m in members)
    http_head = members[1].split(b"\r\n\r\n")[1]
    lines = http_head.split(b"\r\n")
    assert b"content-encoding" not in http_head
    assert not any(line.startswith(b"Set-Cookie") for line in lines)  # not a header of its own
    assert b"content-length: %d" % len(body) in http_head
    assert gzip.decompress(data).count(b"WARC/1.1\r\n") == 3


def test_a_job_without_an_archive_has_no_warc_records_and_odd_statuses_still_read() -> None:
    writer = WarcWriter({}, "t")
    assert writer.records(ExportedJob(ExportPosition(1, uuid.uuid4()), job())) == b""
    odd = ExportedJob(ExportPosition(2, uuid.uuid4()), job(), archive=archived(b"", status=599))
    [(_, _, payload, status), _] = read_back(writer.records(odd))
    assert (payload, status) == (b"", "599")


@pytest.mark.parametrize("body", [b"", b"\x00\xff binary \r\n\r\n", b"x" * 300_000])
def test_any_body_reads_back_byte_for_byte(body: bytes) -> None:
    writer = WarcWriter({}, "t")
    exported = ExportedJob(ExportPosition(1, uuid.uuid4()), job(), archive=archived(body))
    assert read_back(writer.records(exported))[0][2] == body
