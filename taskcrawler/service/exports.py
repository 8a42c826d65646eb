"""Export the caller's finished jobs as JSON Lines or WARC, resumably.

An export reads a fixed range of the caller's export stream, chosen when it starts: the
positions after ``since`` up to the last one that is final now (or the ``limit``-th). It
streams that range a page at a time, so memory holds one page whatever the export's size, and
hands back the cursor of the range's end, to pass as ``since`` next time. Jobs that finish
meanwhile get later positions and come in the next export: each finish once, none lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from taskcrawler.domain.exports import (
    START,
    ExportedJob,
    ExportFormat,
    ExportPosition,
    GzippedResponse,
)
from taskcrawler.domain.jobs import Job
from taskcrawler.domain.keys import Caller
from taskcrawler.export import WarcWriter, decode_cursor, encode_cursor, jsonl_record
from taskcrawler.storage.ports import ExportRepository

#: Jobs read per query: turning a row into a job costs the event loop tens of microseconds,
#: so a page of 100 holds it for a few milliseconds (500 held it for 20-30).
PAGE = 100
#: Jobs whose texts (JSON Lines) or archived responses (WARC) are read per query: each may
#: be as large as the fetch limit allows. Archived bodies are read gzipped, and each is
#: decoded only as its records are written: an export holds one decoded body at a time.
EXPORT_GROUP = 16
#: Where archived bodies are decoded and their WARC records written (gzip both ways, SHA-1):
#: off the event loop, which went on serving requests for none of the time it took (tens of
#: milliseconds a large page); and few threads, so that exports at once hold few bodies.
_WARC_THREADS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="warc-export")
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
        if fmt == "jsonl":
            async for exported in self._jobs(owner, crawl_id, after, end):
                yield jsonl_record(exported)
            return
        yield self.warc.warcinfo(datetime.now(UTC))
        loop = asyncio.get_running_loop()
        async for position, job, stored in self._archived(owner, crawl_id, after, end):
            if stored is not None:
                yield await loop.run_in_executor(
                    _WARC_THREADS, self._warc_records, position, job, stored
                )

    def _warc_records(self, position: ExportPosition, job: Job, stored: GzippedResponse) -> bytes:
        """In a thread: the body decoded, and the job's records."""
        return self.warc.records(ExportedJob(position, job, archive=stored.inflated()))

    async def _pages(
        self,
        owner: str,
        crawl_id: UUID | None,
        after: ExportPosition,
        end: ExportPosition | None,
    ) -> AsyncIterator[list[tuple[ExportPosition, Job]]]:
        """The range's jobs, :data:`EXPORT_GROUP` at a time."""
        while end is not None and after < end:
            page = await self.exports.jobs_between(owner, after, end, limit=PAGE, crawl_id=crawl_id)
            if not page:
                return
            for start in range(0, len(page), EXPORT_GROUP):
                yield page[start : start + EXPORT_GROUP]
            after = page[-1][0]

    async def _jobs(
        self,
        owner: str,
        crawl_id: UUID | None,
        after: ExportPosition,
        end: ExportPosition | None,
    ) -> AsyncIterator[ExportedJob]:
        async for group in self._pages(owner, crawl_id, after, end):
            texts = await self.exports.texts([job.id for _, job in group])
            for position, job in group:
                yield ExportedJob(position, job, texts=texts[job.id])

    async def _archived(
        self,
        owner: str,
        crawl_id: UUID | None,
        after: ExportPosition,
        end: ExportPosition | None,
    ) -> AsyncIterator[tuple[ExportPosition, Job, GzippedResponse | None]]:
        async for group in self._pages(owner, crawl_id, after, end):
            archives = await self.exports.archives([job.id for _, job in group])
            for position, job in group:
                yield position, job, archives.pop(job.id, None)
