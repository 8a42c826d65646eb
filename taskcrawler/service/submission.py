from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from uuid import UUID

from taskcrawler.common.batching import Coalescer
from taskcrawler.domain import QueueUnavailable, StorageUnavailable
from taskcrawler.queue import JobQueue
from taskcrawler.storage import Created, JobStore, NewJob, WorkStore

log = logging.getLogger(__name__)


class Submitter:
    """Creates jobs: the row is committed first, then the id is published.

    Concurrent submissions are grouped into one INSERT. The ids are published after the callers
    have their answer, grouped again: the committed row is the job, the queue only a hint, so no
    request waits for a Redis round trip. If the queue is down, or this process dies before it
    publishes, the jobs stay PENDING and the workers' sweeper publishes them later.
    """

    def __init__(
        self, jobs: JobStore, work: WorkStore, queue: JobQueue, *, redispatch_after: float
    ) -> None:
        self.jobs = jobs
        self.work = work
        self.queue = queue
        self.redispatch_after = redispatch_after
        # The group commit inserts one batch at a time: it keeps a connection of its own.
        self._grouped_jobs = jobs.with_pinned_connection()
        self._batcher: Coalescer[NewJob, Created] = Coalescer(self._create_grouped, max_batch=500)
        self._unpublished: list[UUID] = []
        self._publishing: asyncio.Task[None] | None = None

    async def submit(self, request: NewJob) -> Created:
        """One job, grouped with whatever else is being submitted right now."""
        return await self._batcher.submit(request)

    async def create_now(self, requests: Sequence[NewJob]) -> list[Created]:
        """Many jobs in one round trip of their own (a batch request)."""
        return await self._create(self.jobs, requests)

    async def _create_grouped(self, requests: Sequence[NewJob]) -> list[Created]:
        return await self._create(self._grouped_jobs, requests)

    async def close(self) -> None:
        """Publish what is still waiting to be (on shutdown, before the queue closes)."""
        if self._publishing is not None:
            await self._publishing

    async def _create(self, store: JobStore, requests: Sequence[NewJob]) -> list[Created]:
        results = await store.create_jobs(requests, redispatch_after=self.redispatch_after)
        self._publish_soon([r.job.id for r in results if r.created])
        return results

    def _publish_soon(self, job_ids: list[UUID]) -> None:
        if not job_ids:
            return
        self._unpublished += job_ids
        if self._publishing is None:
            self._publishing = asyncio.create_task(self._publish_pending())

    async def _publish_pending(self) -> None:
        # The loop's last check and the reset below run in one step: an id added later finds
        # no task and starts one.
        try:
            while self._unpublished:
                job_ids, self._unpublished = self._unpublished, []
                await self._publish(job_ids)
        finally:
            self._publishing = None

    async def _publish(self, job_ids: list[UUID]) -> None:
        try:
            await self.queue.publish(job_ids)
        except QueueUnavailable as exc:
            log.warning(
                "queue unavailable, %d new jobs left for the sweeper: %s", len(job_ids), exc
            )
            try:
                await self.work.mark_dispatch_due(job_ids)
            except StorageUnavailable as down:  # they are still found after the redispatch delay
                log.warning("could not mark %d jobs due: %s", len(job_ids), down)
        except Exception:  # nobody awaits this task: a surprise must reach the log, not vanish
            log.exception("publishing %d new jobs failed; the sweeper will", len(job_ids))
