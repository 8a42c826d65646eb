"""The sweeper, one in every worker: it makes the queue's losses harmless.

Safe with many workers at once: each step is one UPDATE ... RETURNING over rows locked with
SKIP LOCKED, so two sweepers never take the same job.
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from taskcrawler.domain import ClaimedJob, QueueUnavailable, ServiceUnavailable
from taskcrawler.domain.transitions import RetryPolicy, Transition, decide, lease_expired
from taskcrawler.queue import HostLines, JobQueue
from taskcrawler.storage.ports import WorkRepository

log = logging.getLogger(__name__)

BATCH = 1000
#: Above this many waiting messages, jobs published once are not re-published (see
#: :meth:`Sweeper._queue_is_drained`); a flushed or restarted Redis has none.
REDISPATCH_MAX_BACKLOG = 100


@dataclass(frozen=True, slots=True)
class SweepConfig:
    interval_seconds: float = 1.0
    #: A lost attempt is retried, or its job FAILED, as the worker's own attempts are.
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: A job published but not claimed within this long is published again.
    redispatch_seconds: float = 30.0


class Sweeper:
    def __init__(
        self,
        config: SweepConfig,
        store: WorkRepository,
        queue: JobQueue,
        lines: HostLines | None = None,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.rng = rng or random.Random()
        self.store = store
        self.queue = queue
        self.lines = lines  # ids waiting for their host's slot are a backlog too
        self.recovered = 0
        self.redispatched = 0
        #: Set once the first sweep, the one after a (re)start, has run: with an in-process
        #: queue it publishes every PENDING job, whatever its dispatch time.
        self.restart_swept = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        first = True
        while not stop.is_set():
            try:
                await self.sweep(after_restart=first)
                first = False
                self.restart_swept.set()
            except ServiceUnavailable as exc:
                log.warning("sweep skipped, %s unavailable: %s", exc.dependency, exc)
            except Exception:
                # One bad sweep must not end sweeping for the life of the worker.
                log.exception("sweep failed; trying again next interval")
            try:
                async with asyncio.timeout(self.config.interval_seconds):
                    await stop.wait()
            except TimeoutError:
                pass

    async def sweep(self, *, after_restart: bool = False) -> None:
        """Recover expired leases, then publish every due PENDING job nobody holds."""
        # Written as outcomes are, so no more at once than an outcome write: on SQLite the
        # write holds the one writer lock for as long as its transitions take.
        recover = min(BATCH, self.store.outcome_batch)
        while lost := await self.store.recover_expired_leases(
            self._decide_lost, limit=recover, redispatch_after=self.config.redispatch_seconds
        ):
            self.recovered += len(lost)
            log.warning("recovered %d jobs whose worker was lost", len(lost))
            if len(lost) < recover:
                break
        # A crawl whose last page was finished by other means than an outcome (a lease given
        # up on above, a page cancelled) has no outcome transaction to complete it.
        await self.store.complete_idle_crawls()
        include_undispatched = after_restart and not self.queue.durable
        include_published = await self._queue_is_drained()
        while ids := await self.store.take_due_dispatches(
            redispatch_after=self.config.redispatch_seconds,
            limit=BATCH,
            include_undispatched=include_undispatched,
            include_published=include_published,
        ):
            self.redispatched += len(ids)
            await self._publish(ids)
            if len(ids) < BATCH:
                break

    def _decide_lost(self, job: ClaimedJob, now: datetime) -> Transition:
        """A job's lost attempt, decided as its worker would have: retried after a backoff
        (published by the dispatch step below when due), or FAILED past its retries."""
        return decide(lease_expired(job, now), self.config.retry, rng=self.rng)

    async def _queue_is_drained(self) -> bool:
        """Re-publishing jobs that were published once only helps when their message was lost;
        while the queue still holds a backlog, it would only add duplicates to it."""
        lines = self.lines
        # Shared lines are in Redis beside the queue, whose depth counts them already.
        waiting = await lines.size() if lines is not None and not lines.shared else 0
        return await self.queue.depth() + waiting < REDISPATCH_MAX_BACKLOG

    async def _publish(self, ids: list[UUID]) -> None:
        try:
            await self.queue.publish(ids)
        except QueueUnavailable:
            await self.store.mark_dispatch_due(ids)
            raise
