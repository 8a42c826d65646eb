"""Exports: a finished job's place in its owner's export stream, and what is exported of it."""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal
from uuid import UUID

from taskcrawler.domain.jobs import Job

ExportFormat = Literal["jsonl", "warc"]


@dataclass(frozen=True, slots=True, order=True)
class ExportPosition:
    """Where a finish stands in the stream: ordered by ``seq`` (the database gives it in commit
    order, migration 0008), then by job id among the finishes of one transaction."""

    seq: int
    job_id: UUID


#: Before every finish.
START = ExportPosition(0, UUID(int=0))


@dataclass(frozen=True, slots=True)
class ArchivedResponse:
    """The response a finished job's last fetch got, as the page archive kept it."""

    fetched_at: datetime
    final_url: str
    http_status: int
    headers: dict[str, str]  # names in lower case
    body: bytes  # decoded (no content coding), as the extractor saw it


@dataclass(frozen=True, slots=True)
class GzippedResponse:
    """:class:`ArchivedResponse` as the archive stores it: the body gzipped, as an export
    reads a group of them at once, and inflates each only as it writes it."""

    fetched_at: datetime
    final_url: str
    http_status: int
    headers: dict[str, str]
    body_gz: bytes

    def inflated(self) -> ArchivedResponse:
        """With the body decoded: CPU work (milliseconds a megabyte), for a thread."""
        body = gzip.decompress(self.body_gz)
        return ArchivedResponse(
            self.fetched_at, self.final_url, self.http_status, self.headers, body
        )


@dataclass(frozen=True, slots=True)
class ExportedJob:
    position: ExportPosition
    job: Job
    texts: dict[str, str] = field(default_factory=dict)  # markdown, text, html as asked for
    archive: ArchivedResponse | None = None
