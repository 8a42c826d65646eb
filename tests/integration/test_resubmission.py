"""The storage contract of a URL submitted again, on SQLite and on PostgreSQL: formats that
grow (from the stored copy, or by a new run), a failure that is not kept, ``max_age`` counted
from the page's fetch, and submissions racing to add different formats."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from uuid import UUID

import pytest
import sqlalchemy as sa

from taskcrawler.domain import ClaimedJob, ErrorCode, JobStatus, Outcome
from taskcrawler.domain.pages import FetchedPage, PageContent
from taskcrawler.storage import JobStore, NewJob
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.rows import utcnow
from taskcrawler.storage.tables import jobs
from tests.support.stores import Stores
from tests.support.transitions import decided

URL = "http://formats.test/page"
BODY = b"<html><head><title>Kept</title></head><body><p>Stored copy.</p></body></html>"


async def submit(store: Stores, *formats: str, **options: object) -> tuple[UUID, bool, bool]:
    [created] = await store.jobs.create_jobs(
        [NewJob(URL, formats=formats or ("metadata",), **options)],  # type: ignore[arg-type]
        redispatch_after=30,
    )
    return created.job.id, created.created, created.restarted


async def claim(store: Stores, job_id: UUID) -> ClaimedJob:
    [claimed] = await store.work.claim([job_id], lease_seconds=30, redispatch_after=30)
    return claimed


def page() -> FetchedPage:
    return FetchedPage(URL, URL, 200, {"etag": '"v1"'}, "text/html", "utf-8", BODY)


async def complete(store: Stores, claimed: ClaimedJob, *, archived: bool = True) -> None:
    outcome = Outcome(
        job=claimed,
        http_status=200,
        final_url=URL,
        scraped_title="Kept",
        result={"metadata": {"title": "Kept"}, "render": {"mode": "never"}},
        content=PageContent(archive=page() if archived else None),
        from_archive=claimed.from_archive,
    )
    await store.work.record_transitions(decided([outcome]))


async def completed_job(store: Stores, *, archived: bool = True) -> UUID:
    job_id, created, _ = await submit(store)
    assert created
    await complete(store, await claim(store, job_id), archived=archived)
    return job_id


async def get(store: Stores, job_id: UUID) -> tuple[JobStatus, tuple[str, ...], int]:
    job = await store.jobs.get_job(job_id)
    assert job is not None
    return job.status, job.formats, job.run_count


async def test_formats_asked_later_are_made_from_the_stored_copy(store: Stores) -> None:
    job_id = await completed_job(store)
    first = await store.jobs.get_job(job_id)
    assert first is not None and first.fetched_at is not None

    again, created, restarted = await submit(store, "markdown", "chunks")
    assert (again, created, restarted) == (job_id, False, True)
    assert await get(store, job_id) == (
        JobStatus.PENDING,
        ("metadata", "markdown", "chunks"),
        1,
    )
    claimed = await claim(store, job_id)
    assert claimed.from_archive and claimed.formats == ("metadata", "markdown", "chunks")
    archived = await store.work.archived_copy(job_id)
    assert archived is not None and archived.page.body == BODY
    assert archived.result is not None and archived.result["render"] == {"mode": "never"}

    await complete(store, claimed, archived=False)
    done = await store.jobs.get_job(job_id)
    assert done is not None and done.status is JobStatus.COMPLETED
    # A result made from the stored copy is as old as the copy.
    assert done.fetched_at == first.fetched_at
    assert done.finished_at is not None and done.finished_at > first.fetched_at
    # What is there already is answered as it is: no run for formats the job has.
    assert await submit(store, "markdown") == (job_id, False, False)


async def test_a_job_without_a_stored_copy_fetches_the_formats_it_lacks(store: Stores) -> None:
    job_id = await completed_job(store, archived=False)
    assert (await submit(store, "text"))[2]
    claimed = await claim(store, job_id)
    assert not claimed.from_archive and claimed.formats == ("metadata", "text")
    assert await store.work.archived_copy(job_id) is None


async def test_a_screenshot_is_never_made_from_the_stored_copy(store: Stores) -> None:
    job_id = await completed_job(store)
    assert (await submit(store, "screenshot", render="always"))[2]
    claimed = await claim(store, job_id)
    # Only a browser takes one: the job that did not render now renders, and fetches.
    assert not claimed.from_archive and claimed.render == "always"


async def test_metadata_is_always_made_so_adding_it_starts_no_run(store: Stores) -> None:
    job_id, _, _ = await submit(store, "markdown")
    await complete(store, await claim(store, job_id))
    assert await submit(store, "metadata") == (job_id, False, False)
    assert await get(store, job_id) == (JobStatus.COMPLETED, ("markdown", "metadata"), 0)


async def test_a_waiting_job_takes_the_formats_for_the_run_it_waits_for(store: Stores) -> None:
    job_id, _, _ = await submit(store)
    assert await submit(store, "links") == (job_id, False, False)  # already queued
    assert (await claim(store, job_id)).formats == ("metadata", "links")


async def test_an_attempt_under_way_is_replaced_by_one_with_every_format(store: Stores) -> None:
    job_id, _, _ = await submit(store)
    running = await claim(store, job_id)
    assert (await submit(store, "markdown"))[2]
    assert await get(store, job_id) == (JobStatus.PENDING, ("metadata", "markdown"), 0)
    await complete(store, running)  # the old attempt's write matches nothing now
    assert (await get(store, job_id))[0] is JobStatus.PENDING
    again = await claim(store, job_id)
    assert again.formats == ("metadata", "markdown") and again.lease_token != running.lease_token
    await complete(store, again)
    assert (await get(store, job_id))[0] is JobStatus.COMPLETED


@pytest.mark.parametrize("status", ["FAILED", "CANCELLED"])
async def test_a_failed_or_cancelled_job_submitted_again_runs_again(
    store: Stores, status: str
) -> None:
    job_id, _, _ = await submit(store)
    if status == "FAILED":
        failure = Outcome(
            job=await claim(store, job_id),
            error_code=ErrorCode.BLOCKED_ADDRESS,
            error_message="the address is blocked",
        )
        await store.work.record_transitions(decided([failure]))
    else:
        await store.jobs.cancel(job_id)
    assert (await get(store, job_id))[0] == JobStatus(status)
    assert await submit(store) == (job_id, False, True)
    job = await store.jobs.get_job(job_id)
    assert job is not None
    assert (job.status, job.run_count, job.error_code) == (JobStatus.PENDING, 1, None)
    assert [run.status for run in await store.jobs.runs(job_id, limit=100)] == [status]
    assert not (await claim(store, job_id)).from_archive


async def test_max_age_counts_from_the_fetch_not_from_a_run_made_from_the_copy(
    store: Stores,
) -> None:
    job_id = await completed_job(store)
    two_hours_ago = utcnow() - timedelta(hours=2)
    async with store.db.write() as conn:  # the page was fetched two hours ago
        await conn.execute(jobs.update().values(fetched_at=two_hours_ago))
    assert (await submit(store, "markdown"))[2]
    await complete(store, await claim(store, job_id), archived=False)  # made from the copy
    assert await submit(store, "markdown", max_age=3 * 3600) == (job_id, False, False)
    # An hour is less than the copy's age, though the run finished a moment ago: fetched.
    assert (await submit(store, "markdown", "text", max_age=3600))[2]
    claimed = await claim(store, job_id)
    assert not claimed.from_archive and claimed.formats == ("metadata", "markdown", "text")


async def test_max_age_zero_fetches_again_with_every_format(store: Stores) -> None:
    job_id = await completed_job(store)
    assert (await submit(store, "html", max_age=0))[2]
    claimed = await claim(store, job_id)
    assert not claimed.from_archive and claimed.formats == ("metadata", "html")


# --- races ------------------------------------------------------------------------------------


@pytest.fixture
async def other_stores(database_url: str) -> AsyncIterator[list[JobStore]]:
    """Job stores over databases of their own: submissions racing as API processes would (on
    SQLite, each engine queues for the file's writer lock as another process does)."""
    databases = [open_database(database_url, pool_size=4) for _ in range(3)]
    yield [JobStore(db) for db in databases]
    for db in databases:
        await db.close()


ADDED = ("markdown", "text", "html", "links", "chunks")


async def race(stores: list[JobStore]) -> list[bool]:
    """Every format of ``ADDED`` asked at once, each by a submission of its own."""
    submissions = [
        stores[n % len(stores)].create_jobs([NewJob(URL, formats=(fmt,))], redispatch_after=30)
        for n, fmt in enumerate(ADDED * 2)
    ]
    return [created.restarted for [created] in await asyncio.gather(*submissions)]


async def test_racing_submissions_each_add_their_format_to_a_finished_job(
    store: Stores, other_stores: list[JobStore]
) -> None:
    job_id = await completed_job(store)
    restarted = await race(other_stores)
    status, formats, runs = await get(store, job_id)
    assert set(formats) == {"metadata", *ADDED}
    # One submission started the run that makes them; the others found it waiting.
    assert (status, runs, sum(restarted)) == (JobStatus.PENDING, 1, 1)
    assert (await claim(store, job_id)).from_archive


async def test_racing_submissions_each_add_their_format_to_a_running_job(
    store: Stores, other_stores: list[JobStore]
) -> None:
    job_id, _, _ = await submit(store)
    running = await claim(store, job_id)
    await race(other_stores)
    status, formats, runs = await get(store, job_id)
    assert (status, set(formats), runs) == (JobStatus.PENDING, {"metadata", *ADDED}, 0)
    await complete(store, running)
    async with store.db.read() as conn:
        lease = await conn.scalar(sa.select(jobs.c.lease_token).where(jobs.c.id == job_id))
    assert lease is None and (await get(store, job_id))[0] is JobStatus.PENDING


async def test_a_jobs_runs_are_its_last_ones_oldest_first(store: Stores) -> None:
    """A monitored or often resubmitted page's runs grow by one a run without end: the list
    is its last ``limit``, oldest first."""
    job_id, _, _ = await submit(store)
    for _ in range(4):
        await store.jobs.cancel(job_id)
        assert await submit(store) == (job_id, False, True)
    last = await store.jobs.runs(job_id, limit=2)
    every = await store.jobs.runs(job_id, limit=10)
    assert [run.run for run in every] == [0, 1, 2, 3]
    assert [run.run for run in last] == [2, 3]
