"""The storage contract, on SQLite and on PostgreSQL: idempotency, guarded state changes."""

import asyncio
import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa

from taskcrawler.domain import ClaimedJob, ErrorCode, JobStatus, Outcome, StorageUnavailable
from taskcrawler.domain.pages import PageContent
from taskcrawler.storage import JobStore, NewJob, WorkStore
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.jobs import _new_row
from taskcrawler.storage.rows import NEW_JOB_COLUMNS, utcnow
from taskcrawler.storage.tables import job_contents, jobs
from tests.support.stores import Stores
from tests.support.transitions import decided, lost_attempts


async def new_job(store: Stores, url: str = "http://example.com/") -> ClaimedJob:
    [created] = await store.jobs.create_jobs([NewJob(url)], redispatch_after=30)
    [claimed] = await store.work.claim([created.job.id], lease_seconds=30, redispatch_after=30)
    return claimed


async def test_create_is_idempotent_per_normalized_url(store: Stores) -> None:
    results = await store.jobs.create_jobs(
        [
            NewJob("http://Example.com"),
            NewJob("http://example.com:80/#x"),
            NewJob("http://b.test/"),
        ],
        redispatch_after=30,
    )
    assert [r.created for r in results] == [True, False, True]
    assert results[0].job.id == results[1].job.id
    assert results[0].job.url == "http://Example.com"  # stored as sent
    again = await store.jobs.create_jobs([NewJob("HTTP://EXAMPLE.COM/")], redispatch_after=30)
    assert again[0].created is False
    assert again[0].job.id == results[0].job.id


async def test_a_new_job_is_answered_as_it_is_stored(store: Stores) -> None:
    # New jobs are answered from what was inserted, not read back: the two must agree.
    results = await store.jobs.create_jobs(
        [
            NewJob("http://Plain.test/a", owner="o"),
            NewJob(
                "http://opts.test/b",
                owner="o",
                formats=("metadata", "markdown"),
                callback_url="http://hook.test/x",
                max_age=60,
            ),
        ],
        redispatch_after=30,
    )
    for result in results:
        assert result.created
        assert await store.jobs.get_job(result.job.id, owner="o") == result.job
    assert results[0].job.host == "plain.test"
    assert results[1].job.formats == ("metadata", "markdown")


def test_the_postgresql_insert_sets_every_column_a_new_row_has() -> None:
    row = _new_row(NewJob("http://a.test/"), "key", utcnow(), redispatch_after=30)
    assert tuple(row) == NEW_JOB_COLUMNS


async def test_concurrent_creates_of_one_url_make_exactly_one_row(store: Stores) -> None:
    # 50 separate transactions racing, not one batch: the unique index must decide.
    results = await asyncio.gather(
        *(
            store.jobs.create_jobs([NewJob("http://race.test/page")], redispatch_after=30)
            for _ in range(50)
        )
    )
    flat = [r for batch in results for r in batch]
    assert sum(r.created for r in flat) == 1
    assert len({r.job.id for r in flat}) == 1
    async with store.db.engine.connect() as conn:
        count = await conn.scalar(sa.select(sa.func.count()).select_from(jobs))
    assert count == 1


async def test_owners_do_not_share_jobs(store: Stores) -> None:
    a = await store.jobs.create_jobs([NewJob("http://x.test/", owner="a")], redispatch_after=30)
    b = await store.jobs.create_jobs([NewJob("http://x.test/", owner="b")], redispatch_after=30)
    assert a[0].created and b[0].created
    assert await store.jobs.get_job(a[0].job.id, owner="b") is None


async def test_a_job_is_claimed_once(store: Stores) -> None:
    [created] = await store.jobs.create_jobs([NewJob("http://once.test/")], redispatch_after=30)
    first, second = await asyncio.gather(
        store.work.claim([created.job.id], lease_seconds=30, redispatch_after=30),
        store.work.claim([created.job.id], lease_seconds=30, redispatch_after=30),
    )
    assert len(first) + len(second) == 1
    job = await store.jobs.get_job(created.job.id)
    assert job is not None and job.status is JobStatus.PROCESSING and job.started_at is not None


async def test_completion_is_guarded_by_the_lease_token(store: Stores) -> None:
    claimed = await new_job(store)
    stale = ClaimedJob(claimed.id, claimed.url, claimed.retry_count, lease_token=claimed.id)
    await store.work.record_transitions(
        decided([Outcome(job=stale, http_status=200, scraped_title="stale")], max_retries=3)
    )
    job = await store.jobs.get_job(claimed.id)
    assert job is not None and job.status is JobStatus.PROCESSING
    await store.work.record_transitions(
        decided(
            [Outcome(job=claimed, http_status=200, scraped_title="Fresh", result={"metadata": {}})],
            max_retries=3,
        )
    )
    job = await store.jobs.get_job(claimed.id)
    assert job is not None
    assert (job.status, job.scraped_title, job.http_status) == (JobStatus.COMPLETED, "Fresh", 200)
    assert job.finished_at is not None and job.result == {"metadata": {}}
    # A late duplicate write after completion changes nothing either.
    await store.work.record_transitions(
        decided(
            [Outcome(job=claimed, error_code="timeout", error_message="late", transient=True)],
            max_retries=3,
        )
    )
    after = await store.jobs.get_job(claimed.id)
    assert after == job


async def test_content_is_written_only_under_the_outcomes_own_lease(store: Stores) -> None:
    # Both jobs leased under one token; the outcome for the first carries another (an attempt
    # that lost its lease), so the batch's tokens include the first job's current one.
    created = await store.jobs.create_jobs(
        [NewJob("http://held.test/a"), NewJob("http://held.test/b")], redispatch_after=30
    )
    a, b = await store.work.claim(
        [c.job.id for c in created], lease_seconds=30, redispatch_after=30
    )
    assert a.lease_token == b.lease_token
    stale = ClaimedJob(a.id, a.url, a.retry_count, lease_token=uuid.uuid4())
    page = PageContent(texts={"text": "page"})
    await store.work.record_transitions(
        decided(
            [
                Outcome(job=stale, http_status=200, content=page),
                Outcome(job=b, http_status=200, content=page),
            ],
            max_retries=3,
        )
    )
    async with store.db.engine.connect() as conn:
        written = set((await conn.execute(sa.select(job_contents.c.job_id))).scalars())
    assert written == {b.id}
    job_a, job_b = await store.jobs.get_job(a.id), await store.jobs.get_job(b.id)
    assert job_a is not None and job_a.status is JobStatus.PROCESSING
    assert job_b is not None and job_b.status is JobStatus.COMPLETED


async def test_a_first_run_writes_content_without_deleting_and_a_rerun_replaces_it(
    store: Stores,
) -> None:
    statements: list[str] = []

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement.lstrip().split(None, 1)[0].upper())

    # Every engine's: SQLite writes outcomes through an engine of their own.
    sa.event.listen(sa.Engine, "before_cursor_execute", record)
    try:
        first = await new_job(store, "http://rerun.test/")
        await store.work.record_transitions(
            decided(
                [Outcome(job=first, http_status=200, content=PageContent(texts={"text": "one"}))],
                max_retries=3,
            )
        )
        assert "DELETE" not in statements  # a first run has nothing to replace
        [restarted] = await store.jobs.restart([first.id], owner=first.owner, redispatch_after=30)
        assert restarted.run_count == 1
        [second] = await store.work.claim([first.id], lease_seconds=30, redispatch_after=30)
        statements.clear()
        await store.work.record_transitions(
            decided(
                [Outcome(job=second, http_status=200, content=PageContent(texts={"text": "two"}))],
                max_retries=3,
            )
        )
    finally:
        sa.event.remove(sa.Engine, "before_cursor_execute", record)
    assert "DELETE" in statements
    async with store.db.engine.connect() as conn:
        bodies = (
            await conn.execute(
                sa.select(job_contents.c.body).where(job_contents.c.job_id == first.id)
            )
        ).scalars()
        assert list(bodies) == ["two"]


async def test_transient_error_schedules_a_retry_that_is_not_claimable_early(
    store: Stores,
) -> None:
    claimed = await new_job(store)
    await store.work.record_transitions(
        decided(
            [
                Outcome(
                    job=claimed, error_code=ErrorCode.TIMEOUT, error_message="slow", transient=True
                )
            ],
            max_retries=3,
            delay=3600.0,
        )
    )
    job = await store.jobs.get_job(claimed.id)
    assert job is not None
    assert (job.status, job.retry_count, job.error_code) == (JobStatus.PENDING, 1, "timeout")
    assert job.error_log is not None and job.error_log.startswith("timeout: slow. Fix: ")
    assert job.next_attempt_at is not None and job.next_attempt_at > utcnow() + timedelta(
        minutes=59
    )
    # A stale message for it must not run it before its time.
    assert await store.work.claim([claimed.id], lease_seconds=30, redispatch_after=30) == []
    assert await store.work.take_due_dispatches(redispatch_after=30) == []


async def test_due_retry_is_dispatched_then_claimable(store: Stores) -> None:
    claimed = await new_job(store)
    await store.work.record_transitions(
        decided(
            [
                Outcome(
                    job=claimed, error_code=ErrorCode.HTTP_5XX, error_message="x", transient=True
                )
            ],
            max_retries=3,
        )
    )
    assert await store.work.take_due_dispatches(redispatch_after=30) == [claimed.id]
    assert await store.work.take_due_dispatches(redispatch_after=30) == []  # not twice
    [again] = await store.work.claim([claimed.id], lease_seconds=30, redispatch_after=30)
    assert again.retry_count == 1


async def test_a_deferred_attempt_is_due_again_without_counting_a_retry(store: Stores) -> None:
    claimed = await new_job(store)
    await store.work.record_transitions(
        decided(
            [
                Outcome(
                    job=claimed,
                    error_code=ErrorCode.HOST_BUSY,
                    error_message="busy",
                    transient=True,
                )
            ],
            # a deferral is not an attempt: no retry limit applies
            max_retries=0,
        )
    )
    job = await store.jobs.get_job(claimed.id)
    assert job is not None and job.status is JobStatus.PENDING
    assert (job.retry_count, job.error_code) == (0, ErrorCode.HOST_BUSY)
    assert await store.work.take_due_dispatches(redispatch_after=30) == [claimed.id]
    [again] = await store.work.claim([claimed.id], lease_seconds=30, redispatch_after=30)
    assert again.retry_count == 0


async def test_a_retry_counted_for_a_lost_worker_keeps_its_cause_when_deferred(
    store: Stores,
) -> None:
    """Recovered from an expired lease (one attempt counted, worker_lost), then deferred (its
    host busy): the job says worker_lost, not host_busy, beside its retry_count of 1."""
    [created] = await store.jobs.create_jobs([NewJob("http://lost.test/")], redispatch_after=30)
    await store.work.claim([created.job.id], lease_seconds=-1, redispatch_after=30)
    assert await _recovered(store) == [created.job.id]
    assert await store.work.take_due_dispatches(redispatch_after=30) == [created.job.id]
    [again] = await store.work.claim([created.job.id], lease_seconds=30, redispatch_after=30)
    busy = Outcome(job=again, error_code=ErrorCode.HOST_BUSY, error_message="busy", transient=True)
    await store.work.record_transitions(decided([busy], max_retries=3))
    job = await store.jobs.get_job(created.job.id)
    assert job is not None and job.status is JobStatus.PENDING
    assert (job.retry_count, job.error_code) == (1, ErrorCode.WORKER_LOST)
    assert job.error_log is not None and "lease" in job.error_log


async def test_one_batch_records_every_kind_of_outcome(store: Stores) -> None:
    created = await store.jobs.create_jobs(
        [NewJob(f"http://kinds.test/{kind}") for kind in range(5)], redispatch_after=30
    )
    done, same, retried, deferred, failed = await store.work.claim(
        [c.job.id for c in created], lease_seconds=30, redispatch_after=30
    )
    await store.work.record_transitions(
        decided(
            [
                Outcome(
                    job=done,
                    http_status=200,
                    scraped_title="Done",
                    result={"metadata": {"title": "Done"}},
                    etag='"v1"',
                    content=PageContent(texts={"text": "done"}),
                ),
                Outcome(job=same, http_status=304, unchanged=True),
                Outcome(
                    job=retried, error_code=ErrorCode.HTTP_5XX, error_message="503", transient=True
                ),
                Outcome(job=deferred, error_code=ErrorCode.HOST_BUSY, error_message="busy"),
                Outcome(
                    job=failed, http_status=404, error_code="http_404", error_message="HTTP 404"
                ),
            ],
            max_retries=3,
        )
    )
    states = {}
    for claimed in (done, same, retried, deferred, failed):
        job = await store.jobs.get_job(claimed.id)
        assert job is not None
        states[claimed.id] = (job.status, job.retry_count, job.error_code)
    assert states == {
        done.id: (JobStatus.COMPLETED, 0, None),
        same.id: (JobStatus.COMPLETED, 0, None),
        retried.id: (JobStatus.PENDING, 1, ErrorCode.HTTP_5XX),
        deferred.id: (JobStatus.PENDING, 0, ErrorCode.HOST_BUSY),
        failed.id: (JobStatus.FAILED, 0, "http_404"),
    }
    async with store.db.engine.connect() as conn:
        rows = await conn.execute(
            sa.select(
                jobs.c.id, jobs.c.scraped_title, jobs.c.result, jobs.c.etag, jobs.c.unchanged
            ).where(jobs.c.id.in_([done.id, same.id]))
        )
        results = {row.id: tuple(row)[1:] for row in rows}
        written = list((await conn.execute(sa.select(job_contents.c.job_id))).scalars())
    assert results == {
        done.id: ("Done", {"metadata": {"title": "Done"}}, '"v1"', False),
        same.id: (None, None, None, True),
    }
    assert written == [done.id]


async def test_transient_error_past_the_limit_fails(store: Stores) -> None:
    claimed = await new_job(store)
    exhausted = ClaimedJob(claimed.id, claimed.url, 3, claimed.lease_token)
    await store.work.record_transitions(
        decided(
            [
                Outcome(
                    job=exhausted,
                    error_code=ErrorCode.CONNECT,
                    error_message="refused",
                    transient=True,
                )
            ],
            max_retries=3,
        )
    )
    job = await store.jobs.get_job(claimed.id)
    assert job is not None and job.status is JobStatus.FAILED
    assert job.error_log == (
        "connect: refused. Fix: check the URL's host and port; the server may be down."
    )
    assert job.finished_at is not None


async def test_permanent_error_fails_at_once(store: Stores) -> None:
    claimed = await new_job(store)
    await store.work.record_transitions(
        decided(
            [
                Outcome(
                    job=claimed, http_status=404, error_code="http_404", error_message="HTTP 404"
                )
            ],
            max_retries=3,
        )
    )
    job = await store.jobs.get_job(claimed.id)
    assert job is not None
    assert (job.status, job.retry_count, job.http_status) == (JobStatus.FAILED, 0, 404)


async def _recovered(store: Stores, *, max_retries: int = 3, delay: float = 0.0) -> list[uuid.UUID]:
    """The jobs the sweeper gives up on as lost, by its decision (retried after ``delay``)."""
    lost = await store.work.recover_expired_leases(
        lost_attempts(max_retries=max_retries, delay=delay)
    )
    return [transition.job.id for transition in lost]


async def test_expired_lease_is_recovered_and_counted(store: Stores) -> None:
    claimed = await new_job(store)
    assert await _recovered(store) == []
    await _expire_leases(store)
    assert await _recovered(store, delay=60) == [claimed.id]
    job = await store.jobs.get_job(claimed.id)
    assert job is not None
    assert (job.status, job.retry_count, job.error_code) == (JobStatus.PENDING, 1, "worker_lost")
    # Retried as a failed attempt is: after the policy's backoff, not at once.
    assert job.next_attempt_at is not None
    assert job.next_attempt_at > utcnow() + timedelta(seconds=50)
    assert await store.work.take_due_dispatches(redispatch_after=30) == []
    # The lost worker's late write is refused: its token is gone.
    await store.work.record_transitions(
        decided([Outcome(job=claimed, http_status=200, scraped_title="late")], max_retries=3)
    )
    job = await store.jobs.get_job(claimed.id)
    assert job is not None and job.status is JobStatus.PENDING


async def test_expired_lease_past_the_limit_fails_as_worker_lost(store: Stores) -> None:
    claimed = await new_job(store)
    await _expire_leases(store, retry_count=3)
    assert await _recovered(store) == [claimed.id]
    job = await store.jobs.get_job(claimed.id)
    assert job is not None and job.status is JobStatus.FAILED
    assert job.error_log is not None and job.error_log.startswith("worker_lost:")


async def test_heartbeat_keeps_a_lease_alive(store: Stores) -> None:
    claimed = await new_job(store)
    await _expire_leases(store)
    assert await store.work.renew_leases([claimed.lease_token], lease_seconds=30) == 1
    assert await _recovered(store) == []


async def test_released_job_is_due_again_without_counting_an_attempt(store: Stores) -> None:
    claimed = await new_job(store)
    assert await store.work.release([claimed]) == [claimed.id]
    job = await store.jobs.get_job(claimed.id)
    assert job is not None and (job.status, job.retry_count) == (JobStatus.PENDING, 0)
    assert await store.work.take_due_dispatches(redispatch_after=30) == [claimed.id]


async def test_lost_publish_is_redispatched_after_the_delay(store: Stores) -> None:
    [created] = await store.jobs.create_jobs([NewJob("http://lost.test/")], redispatch_after=30)
    assert await store.work.take_due_dispatches(redispatch_after=30) == []
    assert await store.work.take_due_dispatches(redispatch_after=30, include_undispatched=True) == [
        created.job.id
    ]
    await store.work.mark_dispatch_due([created.job.id])
    assert await store.work.take_due_dispatches(redispatch_after=30) == [created.job.id]


async def test_a_lost_publish_of_a_whole_sitemap_is_marked_due(store: Stores) -> None:
    """A crawl's start page may add a sitemap's 100,000 pages in one write; when their
    publish is lost they are all marked due at once, past the 32,767 values a PostgreSQL
    statement may bind one by one."""
    [created] = await store.jobs.create_jobs([NewJob("http://lost.test/")], redispatch_after=30)
    others = [uuid.uuid4() for _ in range(40_000)]
    await store.work.mark_dispatch_due([*others, created.job.id])
    assert await store.work.take_due_dispatches(redispatch_after=30) == [created.job.id]


async def test_unreachable_database_is_storage_unavailable() -> None:
    db = open_database("postgresql+asyncpg://postgres@127.0.0.1:1/none")
    with pytest.raises(StorageUnavailable):
        await JobStore(db).get_job(uuid.uuid4())
    with pytest.raises(StorageUnavailable):
        await JobStore(db).create_jobs([NewJob("http://x.test/")], redispatch_after=30)
    with pytest.raises(StorageUnavailable):
        await WorkStore(db).claim([uuid.uuid4()], lease_seconds=1, redispatch_after=1)
    await db.close()


async def _expire_leases(store: Stores, *, retry_count: int | None = None) -> None:
    values: dict[str, object] = {"lease_expires_at": utcnow() - timedelta(seconds=1)}
    if retry_count is not None:
        values["retry_count"] = retry_count
    async with store.db.engine.begin() as conn:
        await conn.execute(jobs.update().values(**values))


async def test_published_jobs_are_redispatched_only_when_asked(store: Stores) -> None:
    [created] = await store.jobs.create_jobs([NewJob("http://sent.test/")], redispatch_after=0)
    claimed = await new_job(store, "http://retry.test/")
    await store.work.record_transitions(
        decided(
            [Outcome(job=claimed, error_code=ErrorCode.TIMEOUT, error_message="x", transient=True)],
            max_retries=3,
        )
    )
    # With a backlog, only the retry (never published) is taken, not the published job.
    taken = await store.work.take_due_dispatches(redispatch_after=30, include_published=False)
    assert taken == [claimed.id]
    again = await store.work.take_due_dispatches(redispatch_after=30, include_published=True)
    assert again == [created.job.id]


async def test_released_job_is_not_claimable_before_it_is_published(store: Stores) -> None:
    claimed = await new_job(store)
    await store.work.release([claimed])
    assert await store.work.claim([claimed.id], lease_seconds=30, redispatch_after=30) == []
    assert await store.work.take_due_dispatches(redispatch_after=30, include_published=False) == [
        claimed.id
    ]
    assert len(await store.work.claim([claimed.id], lease_seconds=30, redispatch_after=30)) == 1


async def test_a_renewal_skips_a_job_whose_outcome_is_being_written(pg_url: str) -> None:
    """An outcome batch locks its jobs in an order of its own: a renewal waiting for one of
    them while holding others would deadlock with it. It renews the rest and leaves that one
    (its lease ends with the outcome). PostgreSQL only: SQLite has one writer at a time and no
    row locks."""
    db = open_database(pg_url, pool_size=5)
    try:
        await _renewal_skips_the_locked_job(Stores(db, JobStore(db), WorkStore(db)))
    finally:
        await db.close()


async def _renewal_skips_the_locked_job(store: Stores) -> None:
    created = await store.jobs.create_jobs(
        [NewJob("http://a.test/"), NewJob("http://b.test/")], redispatch_after=30
    )
    claimed = await store.work.claim(
        [c.job.id for c in created], lease_seconds=30, redispatch_after=30
    )
    assert len({job.lease_token for job in claimed}) == 1
    await _expire_leases(store)
    writing = claimed[0]
    async with store.db.engine.connect() as conn, conn.begin():
        await conn.execute(sa.select(jobs.c.id).where(jobs.c.id == writing.id).with_for_update())
        renewed = await asyncio.wait_for(
            store.work.renew_leases([writing.lease_token], lease_seconds=30), timeout=10
        )
    assert renewed == 1
    assert await _recovered(store) == [writing.id]
