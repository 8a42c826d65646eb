"""The sweeper, one in every worker: it makes the queue's losses harmless, and deletes the
``Idempotency-Key`` answers that expired.

Safe with many workers at once: each step is one UPDATE ... RETURNING over rows locked with
SKIP LOCKED, so two sweepers never take the same job; two deleting answers pass over each
other's rows.

Expired answers are deleted every ``forget_seconds`` (:meth:`Sweeper.forget_expired_answers`):
a few bounded batches, each deleting at most ``forget_batch`` rows in a transaction of its own,
so that no writer waits long for it (SQLite has one). A pass that leaves some is followed by
another at the next sweep, so that deleting keeps up with a client sending a new key with
every request.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from uuid import UUID

from taskcrawler.domain import ClaimedJob, QueueUnavailable, ServiceUnavailable
from taskcrawler.domain.idempotency import IdempotencyRetention
from taskcrawler.domain.transitions import RetryPolicy, Transition, decide, lease_expired
from taskcrawler.queue import HostLines, JobQueue
from taskcrawler.storage.ports import IdempotencyRepository, WorkRepository

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
    #: ``Idempotency-Key`` answers older than this are deleted.
    idempotency: IdempotencyRetention = field(default_factory=IdempotencyRetention)
    #: How often a sweep deletes expired answers, rows deleted per statement, statements per
    #: pass (a pass deletes ``forget_batch * forget_batches`` at most). An answer may be a
    #: batch's thousand jobs: a hundred keeps one deletion short on SQLite's one writer.
    forget_seconds: float = 60.0
    forget_batch: int = 100
    forget_batches: int = 50


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Sweeper:
    def __init__(
        self,
        config: SweepConfig,
        store: WorkRepository,
        queue: JobQueue,
        lines: HostLines | None = None,
        *,
        answers: IdempotencyRepository | None = None,
        rng: random.Random | None = None,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        """``answers``: the ``Idempotency-Key`` answers whose expired ones it deletes (none
        without them)."""
        self.config = config
        self.rng = rng or random.Random()
        self.store = store
        self.queue = queue
        self.lines = lines  # ids waiting for their host's slot are a backlog too
        self.answers = answers
        self.clock = clock
        self.recovered = 0
        self.redispatched = 0
        self.forgotten = 0
        self._forget_due: datetime | None = None  # None: at the first sweep
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
        if self.answers is not None and (
            self._forget_due is None or self.clock() >= self._forget_due
        ):
            await self.forget_expired_answers(self.answers)

    async def forget_expired_answers(self, answers: IdempotencyRepository) -> int:
        """One pass of deleting expired answers (see the module); how many it deleted."""
        config = self.config
        # Due again after the interval, also when this pass fails: an outage is not retried
        # every sweep.
        self._forget_due = self.clock() + timedelta(seconds=config.forget_seconds)
        forgotten = 0
        for _ in range(config.forget_batches):
            since = config.idempotency.oldest_kept(self.clock())
            done = await answers.forget_before(since, limit=config.forget_batch)
            forgotten += done
            if done < config.forget_batch:
                break
        else:
            self._forget_due = None  # some may be left: the next sweep goes on
        if forgotten:
            log.info("deleted %d expired Idempotency-Key answers", forgotten)
        self.forgotten += forgotten
        return forgotten

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
