"""The Firecrawl webhooks' announcer holds a bounded number of bytes of documents per pass: big
pages are announced over several passes, each once, the ending after them all."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, cast
from uuid import UUID

from taskcrawler.domain import JobStatus
from taskcrawler.domain.jobs import Job
from taskcrawler.firecrawl import announcer as announcing
from taskcrawler.firecrawl.announcer import HookAnnouncer
from taskcrawler.firecrawl.hooks import Announcement, FirecrawlHook, HookProgress

#: Characters of Markdown per page: two pages' documents fit the (lowered) bound, three do not.
PAGE_CHARS = 300
BOUND = 1000


def page(index: int) -> Job:
    return Job(
        id=uuid.UUID(int=index + 1),
        url=f"https://site.test/{index}",
        status=JobStatus.COMPLETED,
        retry_count=0,
        created_at=datetime(2026, 12, 7, tzinfo=UTC),
        http_status=200,
        formats=("metadata", "markdown"),
    )


class Texts:
    async def text(self, job_id: UUID, fmt: str) -> str:
        return "m" * PAGE_CHARS


class Hooks:
    """One crawl's hook whose crawl has ended with ``pages``."""

    def __init__(self, hook: FirecrawlHook, pages: list[Job]) -> None:
        self.hook = hook
        self.pages = pages
        self.announced: set[UUID] = set()
        self.recorded: list[Announcement] = []

    async def claim(self, *, limit: int, lease_seconds: float) -> list[FirecrawlHook]:
        return [] if self.recorded and self.recorded[-1].finished else [self.hook]

    async def first_job(self, hook: FirecrawlHook) -> UUID | None:
        return self.pages[0].id

    async def progress(self, hook: FirecrawlHook) -> HookProgress:
        return HookProgress(len(self.pages), len(self.pages), True)

    async def unannounced(self, hook: FirecrawlHook, *, limit: int) -> list[tuple[Job, int]]:
        left = [job for job in self.pages if job.id not in self.announced]
        return [(job, 1) for job in left[:limit]]

    async def record(self, hook: FirecrawlHook, announcement: Announcement) -> bool:
        self.announced |= {job_id for job_id, _ in announcement.pages}
        self.recorded.append(announcement)
        return True


async def test_big_pages_are_announced_over_several_passes(monkeypatch: Any) -> None:
    monkeypatch.setattr(announcing, "PASS_MAX_BYTES", BOUND)
    pages = [page(index) for index in range(3)]
    hook = FirecrawlHook(
        uuid.uuid4(), "", "crawl", uuid.uuid4(), "https://hooks.test/", started=True
    )
    hooks = Hooks(hook, pages)
    announcer = HookAnnouncer(cast(Any, hooks), cast(Any, Texts()))
    for _ in range(5):
        await announcer.announce_due()
    sent = [(event, body) for a in hooks.recorded for event, body, _ in a.events]
    assert [len(a.events) for a in hooks.recorded] == [2, 1, 1]
    urls = [body["data"][0]["metadata"]["sourceURL"] for event, body in sent if event == "page"]
    assert urls == [job.url for job in pages]
    assert [event for event, _ in sent][-1] == "completed"
    assert [a.finished for a in hooks.recorded] == [False, False, True]
