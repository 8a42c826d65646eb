"""JSON Lines: one finished job a line, with its texts and the cursor that resumes after it."""

from __future__ import annotations

import orjson

from taskcrawler.domain.exports import ExportedJob
from taskcrawler.domain.views import job_document
from taskcrawler.export.cursor import encode_cursor


def jsonl_record(exported: ExportedJob) -> bytes:
    """``{"cursor", "job", "content"}`` and a newline. ``job`` is the API's job document;
    ``content`` the Markdown, text and HTML the job asked for."""
    record = {
        "cursor": encode_cursor(exported.position),
        "job": job_document(exported.job),
        "content": exported.texts,
    }
    return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
