"""A crawl's frontier as one worker's writes grow it, on SQLite and on PostgreSQL: what the
process remembers of committed pages (``KnownPages``) spares lookups and never changes what a
crawl admits."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import sqlalchemy as sa

from taskcrawler.domain import ClaimedJob, Outcome
from taskcrawler.domain.crawls import Candidate, CrawlSpec
from taskcrawler.storage import CrawlStore
from taskcrawler.storage.tables import jobs
from tests.support.stores import Stores
from tests.support.transitions import decided

SITE = "http://site.test"


async def start(store: Stores, *, limit: int = 100) -> tuple[UUID, ClaimedJob]:
    crawl, start_id = await CrawlStore(store.db).create(
        "o", CrawlSpec.create(f"{SITE}/", limit=limit), callback_url=None, redispatch_after=30
    )
    [claimed] = await store.work.claim([start_id], lease_seconds=30, redispatch_after=30)
    return crawl.id, claimed


async def finish(store: Stores, page: ClaimedJob, found: Sequence[tuple[str, int]]) -> None:
    """Record ``page`` as fetched, adding ``found`` (path, depth) to its crawl."""
    outcome = Outcome(
        job=page,
        http_status=200,
        result={},
        frontier=tuple(Candidate(f"{SITE}{path}", depth) for path, depth in found),
    )
    await store.work.record_transitions(decided([outcome]))


async def pages(store: Stores, crawl_id: UUID) -> dict[str, tuple[UUID, int | None]]:
    """The crawl's pages by path: their job ids and depths."""
    async with store.db.read() as conn:
        rows = await conn.execute(
            sa.select(jobs.c.url, jobs.c.id, jobs.c.depth).where(jobs.c.crawl_id == crawl_id)
        )
        return {url.removeprefix(SITE): (job_id, depth) for url, job_id, depth in rows}


async def claim(store: Stores, crawl_id: UUID, path: str) -> ClaimedJob:
    job_id, _ = (await pages(store, crawl_id))[path]
    [claimed] = await store.work.claim([job_id], lease_seconds=30, redispatch_after=30)
    return claimed


async def test_a_page_known_at_one_depth_still_takes_a_shorter_path(store: Stores) -> None:
    crawl_id, home = await start(store)
    await finish(store, home, [("/a", 1), ("/b", 1), ("/x", 3)])
    # /x is known to this process at depth 3 and still waiting: found at depth 2 it is looked
    # up, and takes that depth; found at 5, it is known and left as it is.
    await finish(store, await claim(store, crawl_id, "/a"), [("/x", 2)])
    await finish(store, await claim(store, crawl_id, "/b"), [("/x", 5), ("/a", 4)])
    depths = {path: depth for path, (_, depth) in (await pages(store, crawl_id)).items()}
    assert depths == {"/": 0, "/a": 1, "/b": 1, "/x": 2}


async def test_a_page_one_crawl_has_is_new_to_another(store: Stores) -> None:
    first, home = await start(store)
    await finish(store, home, [("/a", 1)])
    second, home_again = await start(store)
    await finish(store, home_again, [("/a", 1), ("/b", 1)])
    assert set(await pages(store, first)) == {"/", "/a"}
    assert set(await pages(store, second)) == {"/", "/a", "/b"}


async def test_known_pages_do_not_use_up_the_limit(store: Stores) -> None:
    crawl_id, home = await start(store, limit=4)
    await finish(store, home, [("/a", 1), ("/b", 1)])
    # Known pages found again count for nothing: /c is the fourth page, then the limit holds.
    await finish(store, await claim(store, crawl_id, "/a"), [("/b", 2), ("/a", 2), ("/c", 2)])
    await finish(store, await claim(store, crawl_id, "/b"), [("/c", 2), ("/d", 2), ("/e", 2)])
    assert set(await pages(store, crawl_id)) == {"/", "/a", "/b", "/c"}
