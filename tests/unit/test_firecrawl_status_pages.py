"""A batch's and a crawl's status pages are bounded in bytes as Firecrawl's are: big documents end
a page early, its ``next`` reading on from the first document left out."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast
from uuid import UUID

from taskcrawler.domain import JobStatus
from taskcrawler.domain.crawls import Crawl, CrawlCounts, CrawlSpec, CrawlStatus
from taskcrawler.domain.cursors import decode_export_cursor, encode_export_cursor
from taskcrawler.domain.exports import ExportPosition
from taskcrawler.domain.jobs import Job
from taskcrawler.domain.keys import Caller
from taskcrawler.firecrawl import service as firecrawl_service
from taskcrawler.firecrawl.service import FirecrawlService

#: Characters of Markdown per page: two pages' documents fit the (lowered) bound, three do not.
PAGE_CHARS = 300
BOUND = 1000
NOW = datetime(2026, 12, 7, tzinfo=UTC)


def finished(index: int) -> Job:
    return Job(
        id=uuid.UUID(int=index + 1),
        url=f"https://site.test/{index}",
        status=JobStatus.COMPLETED,
        retry_count=0,
        created_at=NOW - timedelta(seconds=index),  # newest first, as a crawl lists them
        http_status=200,
        formats=("metadata", "markdown"),
    )


class Texts:
    async def text(self, job_id: UUID, fmt: str) -> str:
        return "m" * PAGE_CHARS

    async def texts_of(self, job_ids: list[UUID], formats: list[str]) -> dict[UUID, dict[str, str]]:
        return {job_id: {fmt: "m" * PAGE_CHARS for fmt in formats} for job_id in job_ids}


class Content:
    content = Texts()


class Batches:
    def __init__(self, jobs: list[Job]) -> None:
        self.jobs = jobs

    async def jobs_of(self, owner: str, batch_id: UUID) -> list[Job]:
        return self.jobs


class Crawls:
    def __init__(self, jobs: list[Job]) -> None:
        self.jobs = jobs

    async def get(self, caller: Caller, crawl_id: UUID) -> Crawl:
        spec = CrawlSpec(url="https://site.test/")
        counts = CrawlCounts(completed=len(self.jobs))
        return Crawl(crawl_id, "", spec, CrawlStatus.COMPLETED, NOW, counts=counts)

    async def finished_pages(
        self, caller: Caller, crawl_id: UUID, *, statuses: Any, limit: int, cursor: str | None
    ) -> tuple[list[tuple[Job, str]], str | None]:
        pages = [(job, position(job)) for job in self.jobs[:limit]]
        return pages, "the storage's cursor after the whole page"


def position(job: Job) -> str:
    return encode_export_cursor(ExportPosition(job.id.int, job.id))


def service(**parts: Any) -> FirecrawlService:
    return FirecrawlService(
        cast(Any, None),
        cast(Any, Content()),
        cast(Any, None),
        parts.get("batches", cast(Any, None)),
        parts.get("crawls", cast(Any, None)),
        cast(Any, None),
        cast(Any, None),
    )


def screenshot_url(job_id: UUID) -> str:
    return f"https://api.test/{job_id}"


async def test_a_batch_status_page_ends_at_its_byte_bound(monkeypatch: Any) -> None:
    monkeypatch.setattr(firecrawl_service, "STATUS_PAGE_MAX_BYTES", BOUND)
    jobs = [finished(index) for index in range(5)]
    fc = service(batches=Batches(jobs))
    first = await fc.batch_status(Caller(), uuid.uuid4(), screenshot_url, skip=0)
    assert [doc["metadata"]["sourceURL"] for doc in first.documents] == [
        jobs[0].url,
        jobs[1].url,
    ]
    assert first.next_skip == 2
    rest = await fc.batch_status(Caller(), uuid.uuid4(), screenshot_url, skip=4)
    assert len(rest.documents) == 1 and rest.next_skip is None


async def test_a_crawl_status_page_ends_at_its_byte_bound(monkeypatch: Any) -> None:
    monkeypatch.setattr(firecrawl_service, "STATUS_PAGE_MAX_BYTES", BOUND)
    jobs = [finished(index) for index in range(5)]
    fc = service(crawls=Crawls(jobs))
    found = await fc.crawl_status(Caller(), uuid.uuid4(), screenshot_url, cursor=None)
    assert len(found.documents) == 2
    # The next page reads on after the last document shown, not after the storage's page.
    assert found.next_cursor is not None
    assert decode_export_cursor(found.next_cursor).job_id == jobs[1].id


async def test_one_document_past_the_bound_is_a_page_of_its_own(monkeypatch: Any) -> None:
    monkeypatch.setattr(firecrawl_service, "STATUS_PAGE_MAX_BYTES", 10)
    jobs = [finished(index) for index in range(2)]
    fc = service(batches=Batches(jobs))
    first = await fc.batch_status(Caller(), uuid.uuid4(), screenshot_url, skip=0)
    assert len(first.documents) == 1 and first.next_skip == 1
    last = await fc.batch_status(Caller(), uuid.uuid4(), screenshot_url, skip=1)
    assert len(last.documents) == 1 and last.next_skip is None
