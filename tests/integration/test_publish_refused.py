"""A Redis that answers but refuses writes (a replica after a failover, ``maxmemory`` reached)
is an unavailable queue, as an unreachable one is: the submission is accepted, and the sweeper
publishes its job once Redis takes writes again."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.exceptions import OutOfMemoryError, ReadOnlyError, ResponseError

from taskcrawler.domain.jobs import JobOptions
from taskcrawler.domain.keys import Caller
from taskcrawler.queue.redis import RedisQueue
from taskcrawler.service.jobs import JobPolicy, JobService
from taskcrawler.service.ratelimit import MemoryRateLimiter
from taskcrawler.worker.sweeper import SweepConfig, Sweeper
from tests.support.stores import Stores

REFUSALS = [
    ReadOnlyError("You can't write against a read only replica."),
    OutOfMemoryError("command not allowed when used memory > 'maxmemory'."),
]


@pytest.fixture
async def queue(redis_url: str, redis_prefix: str) -> AsyncIterator[RedisQueue]:
    queue = RedisQueue.from_url(redis_url, prefix=redis_prefix)
    yield queue
    await queue.close()


@pytest.mark.parametrize("refusal", REFUSALS, ids=["read-only", "out-of-memory"])
async def test_a_submission_redis_refuses_to_queue_is_published_by_the_sweeper(
    store: Stores, queue: RedisQueue, refusal: ResponseError, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = JobService(JobPolicy(), store.jobs, queue, MemoryRateLimiter())

    async def refuse(*_: object) -> int:
        raise refusal

    with monkeypatch.context() as refusing:
        refusing.setattr(queue.client, "rpush", refuse)
        created = await service.submit(Caller(owner="o"), "http://refused.test/", JobOptions())
    await Sweeper(SweepConfig(), store.work, queue).sweep()

    assert created.created
    assert await queue.consume(10, wait_seconds=0) == [created.job.id]
