"""Job operations shared by the API and the command line: submit, read, list, cancel, re-run.

Limits (rate, pending jobs) are checked here, so every entry point enforces them the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from taskcrawler.domain import Job, JobStatus, QueueUnavailable
from taskcrawler.domain.jobs import JobQuery, JobRun
from taskcrawler.domain.keys import ApiKey
from taskcrawler.queue import JobQueue
from taskcrawler.service.ratelimit import RateLimiter
from taskcrawler.service.submission import Submitter
from taskcrawler.settings import Settings
from taskcrawler.storage import Created, JobStore, NewJob, WorkStore

log = logging.getLogger(__name__)


class LimitExceeded(Exception):
    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class JobConflict(Exception):
    """The job is not in a state that allows this (e.g. cancelling a finished job)."""


@dataclass(frozen=True, slots=True)
class Caller:
    owner: str
    key: ApiKey | None = None


@dataclass(frozen=True, slots=True)
class JobOptions:
    formats: tuple[str, ...] | None = None
    callback_url: str | None = None
    max_age: float | None = None


class JobService:
    def __init__(
        self,
        settings: Settings,
        jobs: JobStore,
        work: WorkStore,
        queue: JobQueue,
        limiter: RateLimiter,
        *,
        on_created: Callable[[int], object] = lambda count: None,
    ) -> None:
        self.settings = settings
        self.on_created = on_created  # how many jobs a call created (metrics)
        self.jobs = jobs
        self.queue = queue
        self.limiter = limiter
        self.submitter = Submitter(jobs, work, queue, redispatch_after=settings.redispatch_seconds)

    # --- limits ---------------------------------------------------------------------------

    async def check_rate(self, caller: Caller) -> None:
        key_limit = caller.key.requests_per_minute if caller.key else None
        limit = key_limit or self.settings.rate_limit_per_minute
        if limit is None:
            return
        retry_after = await self.limiter.hit(caller.owner or "anonymous", limit)
        if retry_after is not None:
            raise LimitExceeded(f"rate limit of {limit} requests per minute", retry_after)

    async def _check_pending(self, caller: Caller, adding: int) -> None:
        key_limit = caller.key.max_pending_jobs if caller.key else None
        limit = key_limit or self.settings.max_pending_jobs
        if limit is None:
            return
        unfinished = await self.jobs.count_unfinished(caller.owner)
        if unfinished + adding > limit:
            raise LimitExceeded(
                f"at most {limit} unfinished jobs; {unfinished} are pending", retry_after=5.0
            )

    # --- submit ---------------------------------------------------------------------------

    def _new_job(self, caller: Caller, url: str, options: JobOptions) -> NewJob:
        callback = options.callback_url or (caller.key.callback_url if caller.key else None)
        return NewJob(
            url=url,
            owner=caller.owner,
            formats=options.formats,
            callback_url=callback,
            max_age=options.max_age,
        )

    async def submit(self, caller: Caller, url: str, options: JobOptions) -> Created:
        await self._check_pending(caller, 1)
        created = await self.submitter.submit(self._new_job(caller, url, options))
        self.on_created(int(created.created))
        if created.restarted:
            await self._publish([created.job.id])
        return created

    async def submit_batch(
        self, caller: Caller, urls: Sequence[str], options: JobOptions
    ) -> list[Created]:
        """All URLs in one INSERT (one round trip), each deduplicated."""
        await self._check_pending(caller, len(urls))
        results = await self.submitter.create_now([self._new_job(caller, u, options) for u in urls])
        self.on_created(sum(r.created for r in results))
        await self._publish([r.job.id for r in results if r.restarted])
        return results

    # --- read -----------------------------------------------------------------------------

    async def get(self, caller: Caller, job_id: UUID) -> Job | None:
        return await self.jobs.get_job(job_id, owner=caller.owner)

    async def list_jobs(self, query: JobQuery) -> tuple[list[Job], str | None]:
        return await self.jobs.list_jobs(query)

    async def runs(self, caller: Caller, job_id: UUID) -> list[JobRun] | None:
        if await self.jobs.get_job(job_id, owner=caller.owner) is None:
            return None
        return await self.jobs.runs(job_id)

    # --- change ---------------------------------------------------------------------------

    async def cancel(self, caller: Caller, job_id: UUID) -> Job | None:
        job, changed = await self.jobs.cancel(job_id, owner=caller.owner)
        if job is not None and not changed:
            raise JobConflict(f"only a PENDING job can be cancelled; this one is {job.status}")
        return job

    async def retry(self, caller: Caller, job_id: UUID) -> Job | None:
        restarted = await self.jobs.restart(
            [job_id], owner=caller.owner, redispatch_after=self.settings.redispatch_seconds
        )
        if restarted:
            await self._publish([job_id])
            return restarted[0]
        job = await self.jobs.get_job(job_id, owner=caller.owner)
        if job is not None:
            raise JobConflict(f"only a finished job can be retried; this one is {job.status}")
        return None

    async def retry_matching(self, query: JobQuery) -> list[Job]:
        if not query.statuses:
            query = JobQuery(**{**_fields(query), "statuses": (JobStatus.FAILED,)})
        restarted = await self.jobs.restart_matching(
            query, redispatch_after=self.settings.redispatch_seconds
        )
        await self._publish([job.id for job in restarted])
        return restarted

    async def _publish(self, ids: list[UUID]) -> None:
        if not ids:
            return
        try:
            await self.queue.publish(ids)
        except QueueUnavailable as exc:
            log.warning("queue unavailable, %d re-runs left for the sweeper: %s", len(ids), exc)


def _fields(query: JobQuery) -> dict[str, Any]:
    return {name: getattr(query, name) for name in query.__dataclass_fields__}
