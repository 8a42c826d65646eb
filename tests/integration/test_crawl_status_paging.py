"""A crawl's status pages followed by their ``next`` while the crawl runs, on both databases:
every page that finishes is shown exactly once, whenever it finishes (before, between or after
the pages the client has read). Listed newest first by creation, a page created after the
client's cursor but finished later was never shown."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from types import SimpleNamespace
from typing import Any, cast

import sqlalchemy as sa

from taskcrawler.api.routes import crawls as crawl_routes
from taskcrawler.domain import JobStatus
from taskcrawler.domain.crawls import CrawlSpec
from taskcrawler.domain.keys import Caller
from taskcrawler.firecrawl.service import FirecrawlService
from taskcrawler.queue.memory import MemoryQueue
from taskcrawler.service.content import ContentService
from taskcrawler.service.crawls import CrawlPolicy, CrawlService
from taskcrawler.storage import Database, JobStore
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.content import ContentStore
from taskcrawler.storage.crawls import CrawlStore, frontier_key
from taskcrawler.storage.rows import utcnow
from taskcrawler.storage.tables import jobs

CALLER = Caller(owner="tenant")
PAGES = 6


async def crawl_with_pages(db: Database) -> tuple[uuid.UUID, list[uuid.UUID]]:
    """A running crawl and ``PAGES`` pages of it, PENDING, each created after the previous."""
    created = await CrawlStore(db).create(
        CALLER.owner, CrawlSpec(url="http://site.test/"), callback_url=None, redispatch_after=30
    )
    assert not isinstance(created, type(None)) and isinstance(created, tuple)
    crawl, _ = created
    start = utcnow()
    ids = [uuid.uuid4() for _ in range(PAGES)]
    rows: list[dict[str, Any]] = [
        {
            "id": job_id,
            "owner": CALLER.owner,
            "url": f"http://site.test/{index}",
            "url_key": frontier_key(crawl.id, f"http://site.test/{index}"),
            "host": "site.test",
            "status": "PENDING",
            "retry_count": 0,
            "created_at": start + timedelta(seconds=index + 1),
            "crawl_id": crawl.id,
            "depth": 1,
        }
        for index, job_id in enumerate(ids)
    ]
    async with db.write() as conn:
        await conn.execute(jobs.insert(), rows)
    return crawl.id, ids


async def finish(db: Database, job_ids: list[uuid.UUID]) -> None:
    async with db.write() as conn:
        await conn.execute(
            jobs.update()
            .where(jobs.c.id.in_(job_ids))
            .values(status="COMPLETED", http_status=200, finished_at=sa.func.now())
        )


def firecrawl(db: Database) -> FirecrawlService:
    crawls = CrawlService(CrawlPolicy(), CrawlStore(db), JobStore(db), MemoryQueue())
    content = ContentService(cast(Any, None), ContentStore(db))
    none = cast(Any, None)
    return FirecrawlService(none, content, none, none, crawls, none, none)


def screenshot_url(job_id: uuid.UUID) -> str:
    return f"https://api.test/{job_id}"


async def follow(
    fc: FirecrawlService,
    crawl_id: uuid.UUID,
    *,
    expect: int,
    between: Callable[[int], Awaitable[None]],
) -> list[str]:
    """The pages' URLs a client sees following ``next`` (one document a page) to the end, or
    until it has seen ``expect`` (on a shared PostgreSQL a finish is shown once the
    transactions running when it committed have ended); ``between`` runs after each page."""
    seen: list[str] = []
    cursor: str | None = None
    for step in range(400):
        page = await fc.crawl_status(CALLER, crawl_id, screenshot_url, cursor=cursor, limit=1)
        seen += [doc["metadata"]["sourceURL"] for doc in page.documents]
        await between(step)
        if page.next_cursor is None:
            if len(seen) >= expect:
                return seen
        else:
            cursor = page.next_cursor
        if not page.documents:
            await asyncio.sleep(0.05)
    raise AssertionError(f"{seen} after 400 pages")


async def test_following_next_shows_every_page_finishing_meanwhile_once(
    database_url: str,
) -> None:
    db = open_database(database_url)
    try:
        crawl_id, ids = await crawl_with_pages(db)
        await finish(db, ids[:2])  # the oldest two, before the client starts

        async def meanwhile(step: int) -> None:
            # The newest pages finish once the client has passed the ones before them.
            if step == 0:
                await finish(db, [ids[5]])
            elif step == 1:
                await finish(db, [ids[2], ids[4]])

        seen = await follow(firecrawl(db), crawl_id, expect=5, between=meanwhile)
        finished = [f"http://site.test/{index}" for index in (0, 1, 2, 4, 5)]
        assert sorted(seen) == finished  # each once, none skipped
    finally:
        await db.close()


async def test_the_crawl_pages_listing_of_finished_pages_shows_each_once(
    database_url: str,
) -> None:
    """``GET /api/v1/crawls/{id}/jobs?status=COMPLETED`` followed by its ``next_cursor``."""
    db = open_database(database_url)
    try:
        crawl_id, ids = await crawl_with_pages(db)
        await finish(db, ids[:2])
        crawls = CrawlService(CrawlPolicy(), CrawlStore(db), JobStore(db), MemoryQueue())
        services = cast(Any, SimpleNamespace(crawls=crawls))
        seen: list[str] = []
        cursor: str | None = None
        for step in range(400):
            page = await crawl_routes.crawl_jobs(
                crawl_id, services, CALLER, [JobStatus.COMPLETED], 1, cursor
            )
            seen += [job.url for job in page.jobs]
            if step == 0:
                await finish(db, [ids[5]])
            elif step == 1:
                await finish(db, [ids[2], ids[4]])
            # Read on once past the fifth: a page shown twice would show then.
            if len(seen) >= 5 and (page.next_cursor is None or not page.jobs):
                break
            cursor = page.next_cursor or cursor
            if not page.jobs:
                await asyncio.sleep(0.05)
        assert sorted(seen) == [f"http://site.test/{index}" for index in (0, 1, 2, 4, 5)]
    finally:
        await db.close()


async def test_a_client_caught_up_with_a_running_crawl_reads_on_from_there(
    database_url: str,
) -> None:
    """Once it has read every page finished so far, the listing still gives a ``next_cursor``
    while the crawl runs: the one that shows the pages finishing later, and only them. Without
    one, the client could only start again from the first page."""
    db = open_database(database_url)
    try:
        crawl_id, ids = await crawl_with_pages(db)
        await finish(db, ids[:2])
        crawls = CrawlService(CrawlPolicy(), CrawlStore(db), JobStore(db), MemoryQueue())
        services = cast(Any, SimpleNamespace(crawls=crawls))

        async def read_on(cursor: str | None, until: int) -> tuple[list[str], str | None]:
            seen: list[str] = []
            for _ in range(400):
                page = await crawl_routes.crawl_jobs(
                    crawl_id, services, CALLER, [JobStatus.COMPLETED], 50, cursor
                )
                seen += [job.url for job in page.jobs]
                cursor = page.next_cursor
                if len(seen) >= until or cursor is None:
                    return seen, cursor
                await asyncio.sleep(0.05)
            raise AssertionError(f"{seen} after 400 pages")

        first, cursor = await read_on(None, 2)
        assert sorted(first) == ["http://site.test/0", "http://site.test/1"]
        assert cursor is not None
        await finish(db, [ids[3]])
        later, _ = await read_on(cursor, 1)
        assert later == ["http://site.test/3"]
    finally:
        await db.close()
