from __future__ import annotations

import logging
from collections.abc import Sequence

from taskcrawler.common.batching import Coalescer
from taskcrawler.domain import QueueUnavailable, ServiceUnavailable
from taskcrawler.domain.jobs import Created, NewJob, Refused
from taskcrawler.queue import JobQueue
from taskcrawler.storage.ports import JobRepository

log = logging.getLogger(__name__)


class Submitter:
    """Creates jobs: the row is committed first, then the id is published.

    Concurrent submissions are grouped into one INSERT and one publish. If the queue is down the
    jobs are still accepted: they stay PENDING and the workers' sweeper publishes them later.
    """

    def __init__(self, jobs: JobRepository, queue: JobQueue, *, redispatch_after: float) -> None:
        self.jobs = jobs
        self.queue = queue
        self.redispatch_after = redispatch_after
        # The group commit inserts one batch at a time: it keeps a connection of its own.
        self._grouped_jobs = jobs.with_pinned_connection()
        # An outage fails the whole group; any other failure only the request it belongs to.
        self._batcher: Coalescer[NewJob, Created | Refused] = Coalescer(
            self._create_grouped, max_batch=500, shared=(ServiceUnavailable,)
        )

    async def submit(self, request: NewJob) -> Created | Refused:
        """One job, grouped with whatever else is being submitted right now; each request of
        the group is held to its own ``pending_limit``."""
        return await self._batcher.submit(request)

    async def create_now(self, requests: Sequence[NewJob]) -> list[Created | Refused]:
        """Many jobs in one round trip of their own (a batch request): all refused, or none."""
        return await self._create(self.jobs, requests, together=True)

    async def _create_grouped(self, requests: Sequence[NewJob]) -> list[Created | Refused]:
        return await self._create(self._grouped_jobs, requests, together=False)

    async def _create(
        self, store: JobRepository, requests: Sequence[NewJob], *, together: bool
    ) -> list[Created | Refused]:
        results = await store.create_jobs(
            requests, redispatch_after=self.redispatch_after, together=together
        )
        fresh = [r.job.id for r in results if isinstance(r, Created) and r.created]
        try:
            await self.queue.publish(fresh)
        except QueueUnavailable as exc:
            log.warning("queue unavailable, %d new jobs left for the sweeper: %s", len(fresh), exc)
            await store.mark_dispatch_due(fresh)
        return results
