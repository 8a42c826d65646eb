"""The pending-jobs limit under concurrent submissions of one key: single POSTs (grouped into
group commits), batches, crawl starts and retries, from two API processes at once, never leave
more unfinished jobs than the limit; another tenant's submissions in the same group commits are
not held to it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from uuid import UUID

import pytest

from taskcrawler.domain import Job, JobStatus
from taskcrawler.domain.errors import Conflict, LimitExceeded
from taskcrawler.domain.jobs import Created, JobOptions, JobQuery, NewJob, Refused
from taskcrawler.domain.keys import ApiKey, Caller
from taskcrawler.queue.memory import MemoryQueue
from taskcrawler.service.crawls import CrawlPolicy, CrawlService
from taskcrawler.service.jobs import JobPolicy, JobService
from taskcrawler.service.ratelimit import MemoryRateLimiter
from taskcrawler.storage import CrawlStore, Database, JobStore
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.postgres import sql
from taskcrawler.storage.rows import utcnow
from taskcrawler.storage.tables import jobs as jobs_table
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


async def test_retries_and_submissions_at_once_never_pass_the_limit(
    databases: tuple[Database, Database], two_processes: Services
) -> None:
    """A retry makes an unfinished job of a finished one: single and bulk retries are counted
    as submissions are, in the same transaction as their restart."""
    failed = await _failed_jobs(
        databases[0], [f"http://host{n}.test/{page}" for n in range(8) for page in "ab"]
    )

    async def retry(service: JobService, job_id: UUID) -> int:
        try:
            await service.retry(LIMITED, job_id)
        except (LimitExceeded, Conflict):  # Conflict: a bulk retry restarted it first
            return 0
        return 1

    async def retry_host(service: JobService, n: int) -> int:
        try:
            return len(await service.retry_matching(LIMITED, JobQuery(host=f"host{n}.test")))
        except LimitExceeded:
            return 0

    answers = await asyncio.gather(
        *(retry(two_processes[n % 2], job_id) for n, job_id in enumerate(failed)),
        *(retry_host(two_processes[n % 2], n) for n in range(8)),
        *(_submit(two_processes[n % 2], LIMITED, _urls(n)) for n in range(12)),
    )
    accepted = sum(answer for answer in answers if isinstance(answer, int)) + sum(
        len(answer) for answer in answers if isinstance(answer, list)
    )
    assert 1 <= accepted <= LIMIT
    assert await two_processes[0].jobs.count_unfinished(LIMITED.owner) == accepted


async def test_retries_past_the_limit_are_refused_and_change_nothing(store: Stores) -> None:
    """Under the limit a retry runs its job again; past it, a single retry and a bulk retry
    are refused whole, their jobs left as they were; one that restarts nothing is not."""
    a, b, c = await _failed_jobs(store.db, ["http://a.test/", "http://b.test/", "http://c.test/"])
    await store.jobs.create_jobs([_limited("http://pending.test/")], redispatch_after=30)
    every_failed = JobQuery(owner="limited", statuses=(JobStatus.FAILED,))
    bulk = await store.jobs.restart_matching(every_failed, redispatch_after=30, pending_limit=2)
    assert bulk == Refused(limit=2, unfinished=1)
    assert await store.jobs.count_unfinished("limited") == 1
    [restarted] = await _restart(store, a, pending_limit=2)
    assert (restarted.id, restarted.status, restarted.run_count) == (a, JobStatus.PENDING, 1)
    assert await _restart(store, b, pending_limit=2) == Refused(limit=2, unfinished=2)
    # At the limit: retrying a job already unfinished, or a filter matching none, adds nothing.
    assert await _restart(store, a, pending_limit=2) == []
    nothing = JobQuery(owner="limited", statuses=(JobStatus.FAILED,), host="none.test")
    assert await store.jobs.restart_matching(nothing, redispatch_after=30, pending_limit=2) == []
    assert await store.jobs.count_unfinished("limited") == 2
    for job_id in (b, c):
        job = await store.jobs.get_job(job_id, owner="limited")
        assert job is not None and (job.status, job.run_count) == (JobStatus.FAILED, 0)
    # With room for both, the bulk retry restarts them.
    both = await store.jobs.restart_matching(every_failed, redispatch_after=30, pending_limit=4)
    assert isinstance(both, list) and {job.id for job in both} == {b, c}


async def _restart(store: Stores, job_id: UUID, *, pending_limit: int) -> list[Job] | Refused:
    return await store.jobs.restart(
        [job_id], owner="limited", redispatch_after=30, pending_limit=pending_limit
    )


async def _failed_jobs(db: Database, urls: list[str]) -> list[UUID]:
    """The limited owner's jobs of ``urls``, FAILED (no limit held to creating them)."""
    created = await JobStore(db).create_jobs(
        [NewJob(url, owner=LIMITED.owner) for url in urls], redispatch_after=30
    )
    ids = [result.job.id for result in created if isinstance(result, Created)]
    async with db.write() as conn:
        await conn.execute(
            jobs_table.update()
            .where(jobs_table.c.id.in_(ids))
            .values(status="FAILED", error_code="http_404", finished_at=utcnow())
        )
    return ids


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


async def test_a_key_over_its_limit_still_gets_the_jobs_it_has(store: Stores) -> None:
    """A key can be over its limit (the limit lowered, a crawl's pages, a monitor's runs): a
    submission that adds no unfinished job still answers the job it asks for, alone or in a
    batch; one that adds a job is refused."""
    urls = ["http://a.test/", "http://b.test/", "http://c.test/"]
    await store.jobs.create_jobs(
        [NewJob(url, owner="limited") for url in urls], redispatch_after=30
    )
    [again] = await store.jobs.create_jobs([_limited("http://a.test/")], redispatch_after=30)
    batch = await store.jobs.create_jobs(
        [_limited(url) for url in urls[1:]], redispatch_after=30, together=True
    )
    [new] = await store.jobs.create_jobs([_limited("http://d.test/")], redispatch_after=30)
    assert isinstance(again, Created) and not again.created
    assert [isinstance(r, Created) and not r.created for r in batch] == [True, True]
    assert new == Refused(limit=2, unfinished=3)
