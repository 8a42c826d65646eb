"""The monitor scheduler, in every worker: fire due slots, then read the runs they caused.

Each tick does two things, both safe with any number of workers on one database:

1. **Read finished runs** of watched pages (change detection): a batch of them is claimed for
   this worker alone; the page each run fetched is read again through its monitor's ignore
   selectors and compared with the page's baseline run; the runs' history rows, their content,
   and the changes with their webhooks are recorded in one transaction. A run's history row has
   a unique key, so a run is recorded (and a change reported) once.
   A crawl monitor's round is a crawl: once it stopped, the round is claimed as runs are, its
   pages are compared with the last round's, and the pages added, removed and changed (each
   page both rounds found is read through the ignore selectors and compared with the last
   round's job for it) are recorded with their webhooks at once.
2. **Fire due slots**: the storage fires each due slot once (see :mod:`taskcrawler.storage.
   monitors`) and runs the monitor's pages again as ordinary jobs, which are published here.
   A page whose last run was not read yet is left out of the round: its run goes on.

Reading runs before firing means a round's runs are compared before the next round restarts
their jobs. The clock is a parameter, so tests move time instead of waiting for it.

Every ``prune_seconds`` a tick also prunes monitors' history as the change retention says
(:meth:`MonitorScheduler.prune`): a few bounded batches, each deleting at most
``prune_batch`` rows in a transaction of its own, so that no writer waits long for it (SQLite
has one); what a pass leaves is taken by the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from uuid import UUID

from taskcrawler.domain import ServiceUnavailable, backoff_delay
from taskcrawler.domain.monitors import (
    ChangeRetention,
    CrawlRound,
    FiredSlot,
    PageRun,
    RunReading,
    Snapshot,
    StoredRun,
    read_crawl_page,
    read_crawl_round,
    read_run,
)
from taskcrawler.domain.runs import RetentionPolicy
from taskcrawler.queue import JobQueue
from taskcrawler.storage.ports import MonitorWorkRepository
from taskcrawler.worker.parsing import PageParser, ParseCrashed, ParseTimeout

log = logging.getLogger(__name__)

#: Pages held in memory at once while a batch of runs is read (one page may go over).
READ_GROUP_BYTES = 32 * 1024 * 1024
#: What change detection reads of a page, whatever the monitor's formats.
_READ_FORMATS = ("markdown", "text")


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class MonitorConfig:
    #: How often a worker looks for due slots and unread runs.
    poll_seconds: float = 1.0
    #: As for jobs: a published job not claimed within this long is published again.
    redispatch_seconds: float = 30.0
    #: Monitors fired, and runs read, per statement.
    batch: int = 100
    retention: RetentionPolicy = field(default_factory=RetentionPolicy)
    change_retention: ChangeRetention = field(default_factory=ChangeRetention)
    #: How often a worker prunes, rows deleted per statement, statements per pass.
    prune_seconds: float = 60.0
    prune_batch: int = 200
    prune_batches: int = 20
    #: As for submissions: an owner's unfinished jobs at most, when its key sets none. A round
    #: that would pass its owner's limit runs none of its pages; the next slot tries again.
    max_pending_jobs: int | None = None


@dataclass(slots=True)
class MonitorStats:
    fired: int = 0
    missed: int = 0
    published: int = 0
    read: int = 0
    changes: int = 0
    pruned: int = 0


class MonitorScheduler:
    def __init__(
        self,
        config: MonitorConfig,
        store: MonitorWorkRepository,
        queue: JobQueue,
        parser: PageParser,
        *,
        clock: Callable[[], datetime] = _utcnow,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.queue = queue
        self.parser = parser
        self.clock = clock
        self.rng = rng or random.Random()
        self.stats = MonitorStats()
        self._pruned_at: datetime | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Tick every ``poll_seconds`` until ``stop`` is set; an outage is waited out."""
        failures = 0
        while not stop.is_set():
            try:
                await self.tick()
                failures = 0
                delay = self.config.poll_seconds
            except ServiceUnavailable as exc:
                failures += 1
                delay = backoff_delay(failures, base=0.5, cap=10.0, rng=self.rng)
                log.warning("monitors: %s unavailable, again in %.1fs", exc.dependency, delay)
            except Exception:
                # A bug must not stop the scheduling of every monitor in this worker for good.
                failures += 1
                delay = backoff_delay(failures, base=0.5, cap=10.0, rng=self.rng)
                log.exception("monitors: unexpected error; again in %.1fs", delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=delay)

    async def tick(self) -> list[FiredSlot]:
        """Read every finished run, then fire every due slot, and prune when it is time;
        the slots fired."""
        await self.read_runs()
        await self.read_crawl_rounds()
        fired = await self.fire_due()
        now = self.clock()
        if self._pruned_at is None or (now - self._pruned_at).total_seconds() >= (
            self.config.prune_seconds
        ):
            self._pruned_at = now
            await self.prune()
        return fired

    async def prune(self) -> int:
        """One pass of pruning (see the module); how many rows it deleted or cleared."""
        pruned = 0
        for _ in range(self.config.prune_batches):
            done = await self.store.prune_history(
                self.config.change_retention, now=self.clock(), limit=self.config.prune_batch
            )
            pruned += done
            if done < self.config.prune_batch:
                break
        if pruned:
            log.info("monitors: pruned %d rows of their history", pruned)
        self.stats.pruned += pruned
        return pruned

    async def fire_due(self) -> list[FiredSlot]:
        fired: list[FiredSlot] = []
        while True:
            batch = await self.store.fire_due(
                now=self.clock(),
                redispatch_after=self.config.redispatch_seconds,
                limit=self.config.batch,
                pending_limit=self.config.max_pending_jobs,
            )
            fired.extend(batch)
            await self._publish(batch)
            if len(batch) < self.config.batch:
                break
        self.stats.fired += len(fired)
        self.stats.missed += sum(slot.missed for slot in fired)
        return fired

    async def _publish(self, fired: list[FiredSlot]) -> None:
        await self._publish_jobs([job_id for slot in fired for job_id in slot.job_ids])

    async def _publish_jobs(self, job_ids: list[UUID]) -> None:
        if not job_ids:
            return
        try:
            await self.queue.publish(job_ids)
            self.stats.published += len(job_ids)
        except ServiceUnavailable as exc:
            # The jobs stay PENDING; the sweeper publishes them once the queue is back.
            log.warning("monitors: could not publish %d jobs: %s", len(job_ids), exc)
            await self.store.mark_dispatch_due(job_ids)

    async def read_runs(self) -> int:
        """Change detection for every finished run not read yet; how many were recorded."""
        recorded = 0
        while True:
            runs = await self.store.claim_unread_runs(limit=self.config.batch)
            taken = await self._read(runs)
            recorded += taken
            if len(runs) < self.config.batch:
                break
        self.stats.read += recorded
        return recorded

    async def read_crawl_rounds(self) -> int:
        """Pages added, removed and changed for every crawl monitor's round whose crawl
        stopped; how many rounds were recorded."""
        read = 0
        while True:
            rounds = await self.store.claim_crawl_rounds(limit=self.config.batch)
            for found in rounds:
                read += await self._read_crawl_round(found)
            if len(rounds) < self.config.batch:
                break
        return read

    async def _read_crawl_round(self, found: CrawlRound) -> int:
        now = self.clock()
        previous_jobs = found.previous_jobs()
        pages: list[RunReading] = []
        # A group of pages at a time: their snapshots, and the last round's they are compared
        # with, are dropped once decided (a round may hold thousands of pages).
        for group in self._groups(list(found.runs)):
            current = await self._read_group(group)
            baselines = await self.store.crawl_baselines(
                [previous_jobs[page.url] for page in group if page.url in previous_jobs]
            )
            pages.extend(
                await asyncio.to_thread(
                    _read_crawl_pages, group, current, baselines, previous_jobs, now
                )
            )
        reading = read_crawl_round(found, now=now, new_id=uuid.uuid4)
        if not await self.store.record_crawl_round(reading, pages):
            return 0
        changes = [*reading.changes, *(r.change for r in pages if r.change is not None)]
        self.stats.changes += len(changes)
        for change in changes:
            log.info("monitor %s: %s %s", change.monitor_id, change.url, change.kind)
        return 1

    async def _read(self, runs: list[PageRun]) -> int:
        if not runs:
            return 0
        snapshots = await self._snapshots(runs)
        baselines = await self.store.baselines(
            [(p.job_id, p.baseline_run) for p in runs if p.baseline_run is not None]
        )
        now = self.clock()

        def decide() -> list[RunReading]:
            return [
                read_run(
                    page,
                    current,
                    baselines.get((page.job_id, page.baseline_run))
                    if page.baseline_run is not None
                    else None,
                    now=now,
                    change_id=uuid.uuid4(),
                )
                for page, current in zip(runs, snapshots, strict=True)
            ]

        # Diffs are bounded in work (domain.diffs), but a batch of big pages costs real CPU.
        readings = await asyncio.to_thread(decide)
        due = await self.store.record_readings(
            readings,
            retention=self.config.retention,
            redispatch_after=self.config.redispatch_seconds,
        )
        await self._publish_jobs(due)
        for reading in readings:
            if reading.change is not None:
                self.stats.changes += 1
                page = reading.page
                log.info("monitor %s: %s changed (run %d)", page.monitor_id, page.url, page.run)
        return len(readings)

    async def _snapshots(self, runs: list[PageRun]) -> list[Snapshot | None]:
        """Each run's page read through its selectors (None when the run read nothing)."""
        snapshots: dict[UUID, Snapshot | None] = {}
        for group in self._groups(runs):
            snapshots |= await self._read_group(group)
        return [snapshots.get(page.job_id) for page in runs]

    @staticmethod
    def _groups(runs: list[PageRun]) -> Iterator[list[PageRun]]:
        """The runs that fetched a page, a group at a time: at most ``READ_GROUP_BYTES`` of
        pages (and one page over), so a batch of big pages never sits in memory at once."""
        group: list[PageRun] = []
        size = 0
        for page in runs:
            if page.body_size is None:
                continue
            group.append(page)
            size += page.body_size
            if size >= READ_GROUP_BYTES:
                yield group
                group, size = [], 0
        if group:
            yield group

    async def _read_group(self, group: list[PageRun]) -> dict[UUID, Snapshot | None]:
        if not group:
            return {}
        bodies = await self.store.archived_bodies([page.job_id for page in group])
        read: dict[UUID, Snapshot | None] = {}
        for page in group:
            body = bodies.pop(page.job_id, None)
            read[page.job_id] = await self._snapshot(page, body) if body is not None else None
        return read

    async def _snapshot(self, page: PageRun, body: bytes) -> Snapshot | None:
        try:
            extraction = await self.parser.extract(
                body,
                url=page.final_url or page.url,
                charset=page.charset,
                formats=_READ_FORMATS,
                ignore=page.ignore_selectors,
            )
        except (ParseTimeout, ParseCrashed) as exc:
            # Read as nothing, as a failed run is: one hostile page must not hold up its batch.
            log.warning("monitors: %s could not be read: %s", page.url, exc)
            return None
        return Snapshot.of(
            markdown=extraction.markdown or "",
            text=extraction.text or "",
            metadata=extraction.metadata,
        )


def _read_crawl_pages(
    group: list[PageRun],
    current: Mapping[UUID, Snapshot | None],
    baselines: Mapping[UUID, tuple[StoredRun, Snapshot]],
    previous_jobs: Mapping[str, UUID],
    now: datetime,
) -> list[RunReading]:
    """Each page of a crawl monitor's round against the last round's job for it (the diffs
    are bounded in work, but a group of big pages costs real CPU: run off the event loop)."""
    readings = []
    for page in group:
        previous = previous_jobs.get(page.url)
        readings.append(
            read_crawl_page(
                page,
                current.get(page.job_id),
                baselines.get(previous) if previous is not None else None,
                now=now,
                change_id=uuid.uuid4(),
            )
        )
    return readings
