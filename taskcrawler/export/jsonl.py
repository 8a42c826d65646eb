"""JSON Lines: one finished job a line, with its texts and the cursor that resumes after it."""

from __future__ import annotations

import orjson

from taskcrawler.domain.exports import ExportedJob
from taskcrawler.domain.views import job_document
from taskcrawler.export.cursor import encode_cursor

#: Characters JSON may carry unescaped that readers splitting as ``str.splitlines`` does (httpx's
#: ``iter_lines``, the Python client's export) take for line ends, escaped (as UTF-8 bytes, which
#: only these characters' own encodings can hold).
_LINE_BREAKS = (
    (b"\xe2\x80\xa8", b"\\u2028"),
    (b"\xe2\x80\xa9", b"\\u2029"),
    (b"\xc2\x85", b"\\u0085"),
)


def jsonl_record(exported: ExportedJob) -> bytes:
    """``{"cursor", "job", "content"}`` and a newline. ``job`` is the API's job document;
    ``content`` the Markdown, text and HTML the job asked for."""
    record = {
        "cursor": encode_cursor(exported.position),
        "job": job_document(exported.job),
        "content": exported.texts,
    }
    line = orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
    for raw, escaped in _LINE_BREAKS:
        if raw in line:
            line = line.replace(raw, escaped)
    return line
