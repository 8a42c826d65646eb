"""A database outage in the middle of one job's attempt is no failure of the job: it is put off
without an attempt counted, as an outage while fetching is."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from taskcrawler import bootstrap
from taskcrawler.domain import ErrorCode, StorageUnavailable
from taskcrawler.domain.transitions import TransitionKind, decide
from taskcrawler.fetch import Fetcher, MemoryHostLimiter
from taskcrawler.queue import MemoryQueue
from taskcrawler.settings import Settings
from taskcrawler.storage import NewJob, open_storage
from taskcrawler.worker.worker import Worker


async def test_an_outage_reading_the_stored_copy_defers_the_job(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(_env_file=None, database_url=sqlite_url)
    storage = open_storage(sqlite_url)
    fetcher = Fetcher(settings, limiter=MemoryHostLimiter(4))
    config = bootstrap.worker_config(settings)
    worker = Worker(config, storage.work, MemoryQueue(), fetcher, bootstrap.page_parser(settings))

    async def down(job_id: uuid.UUID) -> None:
        raise StorageUnavailable("the database is unreachable")

    try:
        [created] = await storage.jobs.create_jobs(
            [NewJob("http://copy.test/")], redispatch_after=30
        )
        [claimed] = await storage.work.claim(
            [created.job.id], lease_seconds=30, redispatch_after=30
        )
        # Its last retry: a lease lost on it would FAIL it.
        job = dataclasses.replace(claimed, from_archive=True, retry_count=config.retry.max_retries)
        monkeypatch.setattr(storage.work, "archived_copy", down)
        outcome = await worker._reuse_or_attempt(job)
    finally:
        await fetcher.close()
        await worker.parser.aclose()
        await storage.close()
    assert outcome.error_code == ErrorCode.QUEUE_UNAVAILABLE
    transition = decide(outcome, config.retry, rng=worker.rng)
    assert transition.kind is TransitionKind.DEFERRED
    assert transition.retry_count == config.retry.max_retries
