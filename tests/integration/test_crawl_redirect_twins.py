"""A crawl holds each page once through redirects, on both databases: a page whose redirect
leads to another of the crawl's pages still waiting makes that one not fetched, and one that
leads to a page the crawl does not have yet adds it as had, so a link to it later adds
nothing. Both are CANCELLED as ``duplicate``, counted; the crawl's counts add up."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from taskcrawler.domain import Outcome
from taskcrawler.domain.crawls import Crawl, CrawlSpec
from taskcrawler.domain.pages import Candidate
from taskcrawler.storage import Database, WorkStore
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.crawls import CrawlStore, frontier_key
from taskcrawler.storage.rows import utcnow
from taskcrawler.storage.tables import crawls, jobs
from tests.support.transitions import decided

OWNER = "tenant"
SITE = "http://site.test/"


async def add_pages(db: Database, crawl_id: uuid.UUID, *paths: str) -> list[uuid.UUID]:
    ids = [uuid.uuid4() for _ in paths]
    rows: list[dict[str, Any]] = [
        {
            "id": job_id,
            "owner": OWNER,
            "url": SITE + path,
            "url_key": frontier_key(crawl_id, SITE + path),
            "host": "site.test",
            "status": "PENDING",
            "retry_count": 0,
            "created_at": utcnow(),
            "crawl_id": crawl_id,
            "depth": 1,
        }
        for job_id, path in zip(ids, paths, strict=True)
    ]
    async with db.write() as conn:
        await conn.execute(jobs.insert(), rows)
        await conn.execute(
            crawls.update()
            .where(crawls.c.id == crawl_id)
            .values(discovered=crawls.c.discovered + len(rows))
        )
    return ids


async def fetch(db: Database, job_id: uuid.UUID, final_path: str, *links: str) -> list[uuid.UUID]:
    """The page fetched (redirected to ``final_path``), finding ``links``: the pages added."""
    work = WorkStore(db)
    [claimed] = await work.claim([job_id], lease_seconds=30, redispatch_after=30)
    frontier = tuple(Candidate(SITE + link, 2) for link in links)
    outcome = Outcome(job=claimed, http_status=200, final_url=SITE + final_path, frontier=frontier)
    return await work.record_transitions(decided([outcome]))


async def pages_of(db: Database, crawl_id: uuid.UUID) -> dict[str, tuple[str, str | None]]:
    async with db.read() as conn:
        rows = await conn.execute(
            sa.select(jobs.c.url, jobs.c.status, jobs.c.error_code).where(
                jobs.c.crawl_id == crawl_id
            )
        )
        return {url.removeprefix(SITE): (status, code) for url, status, code in rows}


async def new_crawl(store: CrawlStore) -> Crawl:
    created = await store.create(
        OWNER, CrawlSpec(url=SITE, limit=10), callback_url=None, redispatch_after=30
    )
    assert isinstance(created, tuple)
    return created[0]


async def test_a_redirect_target_is_held_once(database_url: str) -> None:
    db = open_database(database_url)
    try:
        store = CrawlStore(db)
        crawl = await new_crawl(store)
        a, _, c = await add_pages(db, crawl.id, "a", "b", "c")

        # /a leads to /b, still waiting: /b is not fetched.
        await fetch(db, a, "b")
        # /c leads to /d, which the crawl has not found: a link to /d later adds nothing.
        await fetch(db, c, "d")
        [e] = await add_pages(db, crawl.id, "e")
        added = await fetch(db, e, "e", "d", "f")

        found = await pages_of(db, crawl.id)
        assert found["a"] == ("COMPLETED", None) and found["c"] == ("COMPLETED", None)
        assert found["b"] == ("CANCELLED", "duplicate")
        assert found["d"] == ("CANCELLED", "duplicate")
        assert len(added) == 1 and found["f"] == ("PENDING", None)
        assert await store.holds(crawl.id, owner=OWNER, url=SITE + "d")
        assert not await store.holds(crawl.id, owner=OWNER, url=SITE + "f")
        got = await store.get(crawl.id, owner=OWNER)
        assert got is not None and got.counts.cancelled == 2
        async with db.read() as conn:
            discovered = await conn.scalar(
                sa.select(crawls.c.discovered).where(crawls.c.id == crawl.id)
            )
        assert discovered == got.counts.discovered == len(found)
    finally:
        await db.close()


async def test_a_page_the_crawl_has_no_copy_of_is_not_held(database_url: str) -> None:
    """A page that failed (its site answered 503 every attempt), or was cancelled with its
    crawl, gave the crawl no copy: a page redirected there and fetched is that copy, not a
    duplicate of it. Before, it failed as ``duplicate`` and the crawl kept neither."""
    db = open_database(database_url)
    try:
        store = CrawlStore(db)
        crawl = await new_crawl(store)
        failed, cancelled, kept = await add_pages(db, crawl.id, "failed", "cancelled", "kept")
        now = utcnow()
        async with db.write() as conn:
            for job_id, status, code in (
                (failed, "FAILED", "http_5xx"),
                (cancelled, "CANCELLED", None),
                (kept, "COMPLETED", None),
            ):
                await conn.execute(
                    jobs.update()
                    .where(jobs.c.id == job_id)
                    .values(status=status, error_code=code, finished_at=now)
                )

        assert not await store.holds(crawl.id, owner=OWNER, url=SITE + "failed")
        assert not await store.holds(crawl.id, owner=OWNER, url=SITE + "cancelled")
        assert await store.holds(crawl.id, owner=OWNER, url=SITE + "kept")
    finally:
        await db.close()
