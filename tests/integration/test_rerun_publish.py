"""A re-run whose publish fails (Redis down) is left for the sweeper as a new job is: published
at its next sweep, not only once its message counts as lost (``redispatch_after`` later, and
only while the queue has no backlog)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from taskcrawler.domain import JobStatus, QueueUnavailable
from taskcrawler.domain.jobs import JobOptions
from taskcrawler.domain.keys import Caller
from taskcrawler.queue.memory import MemoryQueue
from taskcrawler.service.jobs import JobPolicy, JobService
from taskcrawler.service.ratelimit import MemoryRateLimiter
from taskcrawler.storage.tables import jobs
from taskcrawler.worker.sweeper import SweepConfig, Sweeper
from tests.support.stores import Stores

CALLER = Caller(owner="owner")


class DownQueue(MemoryQueue):
    """A durable queue (as Redis is) that cannot be reached while ``down``."""

    durable = True

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    async def publish(self, job_ids: Sequence[UUID]) -> None:
        if self.down:
            raise QueueUnavailable("redis: connection refused")
        await super().publish(job_ids)


async def _failed_job(service: JobService, store: Stores, queue: DownQueue) -> UUID:
    created = await service.submit(CALLER, "http://rerun.test/", JobOptions())
    await queue.consume(10, 0)  # taken, and its attempt failed
    async with store.db.write() as conn:
        await conn.execute(jobs.update().where(jobs.c.id == created.job.id).values(status="FAILED"))
    return created.job.id


async def test_a_retry_published_while_the_queue_is_down_goes_out_at_the_next_sweep(
    store: Stores,
) -> None:
    queue = DownQueue()
    service = JobService(JobPolicy(), store.jobs, queue, MemoryRateLimiter())
    job_id = await _failed_job(service, store, queue)

    queue.down = True
    retried = await service.retry(CALLER, job_id)
    queue.down = False
    await Sweeper(SweepConfig(), store.work, queue).sweep()

    assert retried.status is JobStatus.PENDING
    assert await queue.consume(10, 0) == [job_id]
