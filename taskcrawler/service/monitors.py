"""Monitor operations shared by the API and the command line: create, read, list, pause,
resume, a new interval, delete; a monitor's changes; a page's old runs and the diff of two.

Every call is scoped to the caller: another tenant's monitor, job or run is not found.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from taskcrawler.domain.crawls import DEFAULT_MAX_LIMIT
from taskcrawler.domain.errors import NotFound, QueueUnavailable
from taskcrawler.domain.jobs import Refused
from taskcrawler.domain.keys import Caller
from taskcrawler.domain.monitors import (
    DEFAULT_FORMATS,
    DEFAULT_MIN_INTERVAL_SECONDS,
    Change,
    Monitor,
    MonitorSpec,
    PageDiff,
    RunView,
    Snapshot,
    checked_interval,
)
from taskcrawler.queue import JobQueue
from taskcrawler.service.jobs import limit_exceeded, max_pending_jobs
from taskcrawler.storage.ports import MonitorRepository

log = logging.getLogger(__name__)


class MonitorNotFound(NotFound):
    def __init__(self) -> None:
        super().__init__("no monitor with this id")


class ChangeNotFound(NotFound):
    def __init__(self) -> None:
        super().__init__("no change with this id in this monitor")


class RunNotFound(NotFound):
    def __init__(self, run: int) -> None:
        super().__init__(f"no run {run} of this job in its history")


DEFAULT_CHANGES_PAGE_MAX_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class MonitorPolicy:
    min_interval_seconds: float = DEFAULT_MIN_INTERVAL_SECONDS
    #: The most pages a crawl monitor's crawl may ask for (as for crawls).
    max_crawl_limit: int = DEFAULT_MAX_LIMIT
    #: As for jobs: a job published but not claimed within this long is published again.
    redispatch_after: float = 30.0
    #: A page of changes ends before its diffs, URLs and metadata pass this many bytes.
    changes_page_max_bytes: int = DEFAULT_CHANGES_PAGE_MAX_BYTES
    #: As for jobs: a key's unfinished jobs at most, when the key sets none of its own.
    max_pending_jobs: int | None = None


@dataclass(frozen=True, slots=True)
class MonitorRequest:
    """What a client asks for, as it asked (the domain checks it)."""

    interval_seconds: object
    url: object = None
    urls: object = None
    crawl: object = None
    formats: Sequence[str] | None = None
    ignore_selectors: Sequence[str] | None = None
    callback_url: str | None = None


def _utcnow() -> datetime:
    return datetime.now(UTC)


class MonitorService:
    def __init__(
        self,
        policy: MonitorPolicy,
        store: MonitorRepository,
        *,
        queue: JobQueue | None = None,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.policy = policy
        self.store = store
        #: Where the jobs of pages given new formats are published.
        self.queue = queue
        self.clock = clock

    async def create(self, caller: Caller, request: MonitorRequest) -> Monitor:
        """A new monitor; its first run starts at once (the baseline, reported as no change).
        Its pages are submissions of the caller's, held to its limit of unfinished jobs as a
        batch is (:class:`~taskcrawler.domain.errors.LimitExceeded`)."""
        callback = request.callback_url or (caller.key.callback_url if caller.key else None)
        spec = MonitorSpec.create(
            interval_seconds=request.interval_seconds,
            url=request.url,
            urls=request.urls,
            crawl=request.crawl,
            formats=tuple(request.formats) if request.formats else DEFAULT_FORMATS,
            ignore_selectors=tuple(request.ignore_selectors or ()),
            callback_url=callback,
            min_interval_seconds=self.policy.min_interval_seconds,
            max_crawl_limit=self.policy.max_crawl_limit,
        )
        created = await self.store.create(
            caller.owner,
            spec,
            now=self.clock(),
            redispatch_after=self.policy.redispatch_after,
            pending_limit=max_pending_jobs(caller, self.policy.max_pending_jobs),
        )
        if isinstance(created, Refused):
            raise limit_exceeded(created)
        return created

    async def get(self, caller: Caller, monitor_id: UUID) -> Monitor:
        monitor = await self.store.get(monitor_id, owner=caller.owner)
        if monitor is None:
            raise MonitorNotFound
        return monitor

    async def list_monitors(
        self, caller: Caller, *, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[Monitor], str | None]:
        return await self.store.list_monitors(caller.owner, limit=limit, cursor=cursor)

    async def update(
        self,
        caller: Caller,
        monitor_id: UUID,
        *,
        paused: bool | None = None,
        interval_seconds: float | None = None,
        formats: Sequence[str] = (),
    ) -> Monitor:
        """Pause, resume, a new interval, or formats to add (its pages' jobs make them from
        their next run on)."""
        interval = (
            checked_interval(interval_seconds, self.policy.min_interval_seconds)
            if interval_seconds is not None
            else None
        )
        if formats:
            added = await self.store.add_formats(
                monitor_id,
                owner=caller.owner,
                formats=tuple(formats),
                now=self.clock(),
                redispatch_after=self.policy.redispatch_after,
            )
            if added is None:
                raise MonitorNotFound
            await self._publish(added[1])
        monitor = await self.store.update(
            monitor_id,
            owner=caller.owner,
            now=self.clock(),
            paused=paused,
            interval_seconds=interval,
        )
        if monitor is None:
            raise MonitorNotFound
        return monitor

    async def _publish(self, job_ids: list[UUID]) -> None:
        if not job_ids or self.queue is None:
            return
        try:
            await self.queue.publish(job_ids)
        except QueueUnavailable as exc:
            # Their dispatch time is set: the sweeper publishes them.
            log.warning("queue unavailable, %d jobs left for the sweeper: %s", len(job_ids), exc)

    async def delete(self, caller: Caller, monitor_id: UUID) -> None:
        if not await self.store.delete(monitor_id, owner=caller.owner):
            raise MonitorNotFound

    async def changes(
        self, caller: Caller, monitor_id: UUID, *, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[Change], str | None]:
        """A page of the monitor's changes, newest first: ``limit`` of them, or fewer when
        their diffs pass the page's bytes (``next_cursor`` then goes on from there)."""
        await self.get(caller, monitor_id)
        return await self.store.changes(
            monitor_id,
            owner=caller.owner,
            limit=limit,
            cursor=cursor,
            max_bytes=self.policy.changes_page_max_bytes,
        )

    async def change(self, caller: Caller, monitor_id: UUID, change_id: UUID) -> Change:
        """One change of the monitor, with its whole diff."""
        await self.get(caller, monitor_id)
        found = await self.store.change(monitor_id, change_id, owner=caller.owner)
        if found is None:
            raise ChangeNotFound
        return found

    async def run(self, caller: Caller, job_id: UUID, run: int) -> RunView:
        """An old run of a watched page and what it read."""
        found = await self.store.run(job_id, run, owner=caller.owner)
        if found is None:
            raise RunNotFound(run)
        return RunView(*found)

    async def diff(self, caller: Caller, job_id: UUID, old: int, new: int) -> PageDiff:
        """The unified diff of two runs' Markdown, and their metadata that changed."""
        before = await self.run(caller, job_id, old)
        after = await self.run(caller, job_id, new)
        # Bounded in work (domain.diffs), but a big page still costs milliseconds of CPU.
        return await asyncio.to_thread(
            _diff, before, after, from_label=f"run {old}", to_label=f"run {new}"
        )


def _snapshot(view: RunView) -> Snapshot:
    return Snapshot(
        view.content.markdown,
        view.content.text,
        view.record.metadata,
        view.record.fingerprint or "",
    )


def _diff(before: RunView, after: RunView, *, from_label: str, to_label: str) -> PageDiff:
    return _snapshot(after).diff(_snapshot(before), from_label=from_label, to_label=to_label)
