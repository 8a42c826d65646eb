"""The pending-jobs limit under concurrent submissions of one key: single POSTs (grouped into
group commits) and batches, from two API processes at once, never leave more unfinished jobs
than the limit; another tenant's submissions in the same group commits are not held to it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from uuid import UUID

import pytest

from taskcrawler.domain.errors import LimitExceeded
from taskcrawler.domain.jobs import Created, JobOptions, JobQuery, NewJob, Refused
from taskcrawler.domain.keys import ApiKey, Caller
from taskcrawler.queue.memory import MemoryQueue
from taskcrawler.service.crawls import CrawlPolicy, CrawlService
from taskcrawler.service.jobs import JobPolicy, JobService
from taskcrawler.service.ratelimit import MemoryRateLimiter
from taskcrawler.storage import CrawlStore, Database, JobStore
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.postgres import sql
from tests.support.stores import Stores

#: The service's limit, which the limited caller (no key of its own) is held to.
LIMIT = 3
LIMITED = Caller(owner="limited")
#: A key whose own limit is far above what it submits.
ROOMY = Caller(
    owner="roomy",
    key=ApiKey("roomy", "roomy", False, datetime.now(UTC), max_pending_jobs=1_000),
)

Services = tuple[JobService, JobService]


@pytest.fixture
async def databases(database_url: str) -> AsyncIterator[tuple[Database, Database]]:
    """Two API processes' databases: one database, each with its own connections."""
    first, second = (open_database(database_url, pool_size=10) for _ in range(2))
    yield first, second
    for db in (first, second):
        await db.close()


@pytest.fixture
def two_processes(databases: tuple[Database, Database]) -> Services:
    """Two API processes' job services, each with its own group commit."""
    first, second = (
        JobService(
            JobPolicy(max_pending_jobs=LIMIT), JobStore(db), MemoryQueue(), MemoryRateLimiter()
        )
        for db in databases
    )
    return first, second


async def _submit(service: JobService, caller: Caller, urls: list[str]) -> list[Created] | None:
    """The jobs a single POST (one URL) or a batch answered; None when the limit refused it."""
    try:
        if len(urls) == 1:
            return [await service.submit(caller, urls[0], JobOptions())]
        return await service.submit_batch(caller, urls, JobOptions())
    except LimitExceeded:
        return None


def _urls(n: int) -> list[str]:
    """Every fourth submission a batch of two new URLs, the others single POSTs."""
    if n % 4 == 0:
        return [f"http://batch{n}-{i}.test/" for i in range(2)]
    return [f"http://single{n}.test/"]


async def _job_ids(service: JobService, caller: Caller) -> set[UUID]:
    jobs, _ = await service.list_jobs(caller, JobQuery(limit=1_000))
    return {job.id for job in jobs}


async def test_concurrent_submissions_of_one_key_never_pass_its_limit(
    two_processes: Services,
) -> None:
    limited, roomy = [], []
    for n in range(40):
        limited.append(_submit(two_processes[n % 2], LIMITED, _urls(n)))
        roomy.append(_submit(two_processes[(n + 1) % 2], ROOMY, _urls(n)))
    answers = await asyncio.gather(*limited, *roomy)
    accepted = [created for answer in answers[:40] if answer is not None for created in answer]
    assert 1 <= len(accepted) <= LIMIT
    assert await two_processes[0].jobs.count_unfinished(LIMITED.owner) == len(accepted)
    # Every submission answered has its job; none refused has one.
    assert await _job_ids(two_processes[1], LIMITED) == {c.job.id for c in accepted}
    assert all(answer is not None for answer in answers[40:])
    assert len(await _job_ids(two_processes[0], ROOMY)) == 50


async def test_crawl_starts_and_submissions_at_once_never_pass_the_limit(
    databases: tuple[Database, Database], two_processes: Services
) -> None:
    """A crawl's start page is an unfinished job too: counted as a submission's are."""
    crawling = [
        CrawlService(CrawlPolicy(max_pending_jobs=LIMIT), CrawlStore(db), JobStore(db), queue)
        for db, queue in zip(databases, (MemoryQueue(), MemoryQueue()), strict=True)
    ]

    async def start(service: CrawlService, n: int) -> bool:
        try:
            await service.start(LIMITED, service.spec(f"http://crawl{n}.test/"))
        except LimitExceeded:
            return False
        return True

    answers = await asyncio.gather(
        *(start(crawling[n % 2], n) for n in range(12)),
        *(_submit(two_processes[n % 2], LIMITED, [f"http://single{n}.test/"]) for n in range(12)),
    )
    accepted = sum(answer is True for answer in answers[:12]) + sum(
        answer is not None for answer in answers[12:]
    )
    assert 1 <= accepted <= LIMIT
    assert await two_processes[0].jobs.count_unfinished(LIMITED.owner) == accepted


async def test_a_held_owner_holds_up_only_its_own_submissions(pg_url: str) -> None:
    """While one transaction holds an owner, another can take any other owner's lock but not
    that one's (asked with pg_try_advisory_xact_lock: nothing waits)."""
    db = open_database(pg_url, pool_size=2)
    try:
        async with db.write() as holding, db.write() as other:
            await db.backend.hold_owners(holding, ["limited", "also"])

            async def free(owner: str) -> bool:
                taken = await other.exec_driver_sql(
                    "SELECT pg_try_advisory_xact_lock($1::int, $2::int)",
                    (sql.OWNER_LOCKS, sql.owner_lock(owner)),
                )
                return bool(taken.scalar_one())

            assert [await free(owner) for owner in ("roomy", "limited", "also")] == [
                True,
                False,
                False,
            ]
    finally:
        await db.close()


async def test_a_group_commit_refuses_only_the_requests_past_the_limit(store: Stores) -> None:
    """One call, as a group commit makes it: each request is admitted or refused on its own,
    in order, those admitted before it counted; a URL already asked for adds nothing."""
    asked = [_limited("http://a.test/"), _limited("http://b.test/"), _limited("http://c.test/")]
    results = await store.jobs.create_jobs(
        [*asked, _limited("http://A.test/"), NewJob("http://d.test/", owner="limited")],
        redispatch_after=30,
    )
    assert [type(result) for result in results] == [Created, Created, Refused, Created, Created]
    assert results[2] == Refused(limit=2, unfinished=2)
    first, again = results[0], results[3]
    assert isinstance(first, Created) and isinstance(again, Created)
    assert again.job.id == first.job.id


async def test_a_batch_is_refused_as_a_whole(store: Stores) -> None:
    await store.jobs.create_jobs([_limited("http://a.test/")], redispatch_after=30)
    batch = [_limited("http://a.test/"), _limited("http://b.test/"), _limited("http://c.test/")]
    results = await store.jobs.create_jobs(batch, redispatch_after=30, together=True)
    assert results == [Refused(limit=2, unfinished=1)] * 3
    assert await store.jobs.count_unfinished("limited") == 1
    # Its URLs that add an unfinished job fit: admitted, and the known one answers its job.
    fits = await store.jobs.create_jobs(batch[:2], redispatch_after=30, together=True)
    assert [isinstance(r, Created) and r.created for r in fits] == [False, True]


def _limited(url: str) -> NewJob:
    return NewJob(url, owner="limited", pending_limit=2)
