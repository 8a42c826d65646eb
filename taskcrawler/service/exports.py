"""Export the caller's finished jobs as JSON Lines or WARC, resumably.

An export reads a fixed range of the caller's export stream, chosen when it starts: the
positions after ``since`` up to the last one that is final now (or the ``limit``-th). It
streams that range a page at a time, so memory holds one page whatever the export's size, and
hands back the cursor of the range's end, to pass as ``since`` next time. Jobs that finish
meanwhile get later positions and come in the next export: each finish once, none lost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from taskcrawler.domain.exports import START, ExportedJob, ExportFormat, ExportPosition
from taskcrawler.domain.keys import Caller
from taskcrawler.export import WarcWriter, decode_cursor, encode_cursor, jsonl_record
from taskcrawler.storage.ports import ExportRepository

#: Jobs read per query: turning a row into a job costs the event loop tens of microseconds,
#: so a page of 100 holds it for a few milliseconds (500 held it for 20-30).
PAGE = 100
#: Jobs whose texts (JSON Lines) or archived responses (WARC) are read per query: each may
#: be as large as the fetch limit allows.
EXPORT_GROUP = 16
MEDIA_TYPES: Mapping[ExportFormat, str] = {
    "jsonl": "application/x-ndjson",
    "warc": "application/warc",
}


@dataclass(frozen=True, slots=True)
class Export:
    #: The cursor to pass as ``since`` for what finishes after this export.
    next_since: str
    #: How many finished jobs the export holds (a WARC shows those with an archive).
    count: int | None
    chunks: AsyncIterator[bytes]
    media_type: str


class ExportService:
    def __init__(
        self, exports: ExportRepository, *, request_headers: Mapping[str, str], software: str
    ) -> None:
        self.exports = exports
        self.warc = WarcWriter(request_headers, software)

    async def export(
        self,
        caller: Caller,
        fmt: ExportFormat,
        *,
        since: str | None = None,
        limit: int | None = None,
        crawl_id: UUID | None = None,
    ) -> Export:
        """The export after ``since`` (InvalidCursor if it is not one of ours), of one crawl's
        pages if ``crawl_id`` is given (a cursor is a position among all of the caller's jobs,
        so it resumes either export)."""
        after = decode_cursor(since) if since else START
        end = await self.exports.end(caller.owner, after, limit, crawl_id=crawl_id)
        chunks = self._stream(caller.owner, crawl_id, fmt, after, end)
        return Export(encode_cursor(end or after), None, chunks, MEDIA_TYPES[fmt])

    async def _stream(
        self,
        owner: str,
        crawl_id: UUID | None,
        fmt: ExportFormat,
        after: ExportPosition,
        end: ExportPosition | None,
    ) -> AsyncIterator[bytes]:
        if fmt == "warc":
            yield self.warc.warcinfo(datetime.now(UTC))
        async for exported in self._jobs(owner, crawl_id, fmt, after, end):
            yield jsonl_record(exported) if fmt == "jsonl" else self.warc.records(exported)

    async def _jobs(
        self,
        owner: str,
        crawl_id: UUID | None,
        fmt: ExportFormat,
        after: ExportPosition,
        end: ExportPosition | None,
    ) -> AsyncIterator[ExportedJob]:
        while end is not None and after < end:
            page = await self.exports.jobs_between(owner, after, end, limit=PAGE, crawl_id=crawl_id)
            if not page:
                return
            for start in range(0, len(page), EXPORT_GROUP):
                group = page[start : start + EXPORT_GROUP]
                ids = [job.id for _, job in group]
                if fmt == "jsonl":
                    texts = await self.exports.texts(ids)
                    for position, job in group:
                        yield ExportedJob(position, job, texts=texts[job.id])
                else:
                    archives = await self.exports.archives(ids)
                    for position, job in group:
                        yield ExportedJob(position, job, archive=archives.get(job.id))
            after = page[-1][0]
