"""Job operations shared by the API and the command line: submit, read, list, cancel (one job
or by filter), re-run.

Limits are applied here, so every entry point enforces them the same way: the rate before
anything else, the pending jobs by each new job's ``pending_limit``, which the insert checks
atomically with its owner's count (:meth:`JobRepository.create_jobs`), and so does a retry's
restart (:meth:`JobRepository.restart`).
Refusals are domain errors (:mod:`taskcrawler.domain.errors`), which the API maps to HTTP once.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

from taskcrawler.domain import Job, JobStatus, QueueUnavailable
from taskcrawler.domain.errors import (
    Conflict,
    InvalidCursor,
    JobNotFound,
    LimitExceeded,
    NotFound,
)
from taskcrawler.domain.jobs import (
    MAX_BULK_CANCEL,
    Cancelled,
    Created,
    JobOptions,
    JobQuery,
    JobRun,
    NewJob,
    Refused,
    cancel_query,
    id_range,
)
from taskcrawler.domain.keys import Caller
from taskcrawler.domain.structured import check_model
from taskcrawler.queue import JobQueue
from taskcrawler.service.ratelimit import RateLimiter
from taskcrawler.service.submission import Submitter
from taskcrawler.storage.ports import JobRepository

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class JobPolicy:
    """The settings job operations use."""

    #: A job published but not claimed within this long is published again by the sweeper.
    redispatch_after: float = 30.0
    #: Requests per minute per key, unless the key sets its own; None: unlimited.
    rate_limit_per_minute: int | None = None
    #: Unfinished jobs per key at most, unless the key sets its own; None: unlimited.
    max_pending_jobs: int | None = None
    #: A language model is configured (TASKCRAWLER_LLM_URL): the json and summary formats.
    model_configured: bool = False


class JobService:
    def __init__(
        self,
        policy: JobPolicy,
        jobs: JobRepository,
        queue: JobQueue,
        limiter: RateLimiter,
        *,
        on_created: Callable[[int], object] = lambda count: None,
    ) -> None:
        self.policy = policy
        self.on_created = on_created  # how many jobs a call created (metrics)
        self.jobs = jobs
        self.queue = queue
        self.limiter = limiter
        self.submitter = Submitter(jobs, queue, redispatch_after=policy.redispatch_after)

    # --- limits ---------------------------------------------------------------------------

    async def check_rate(self, caller: Caller) -> None:
        key_limit = caller.key.requests_per_minute if caller.key else None
        limit = key_limit or self.policy.rate_limit_per_minute
        if limit is None:
            return
        retry_after = await self.limiter.hit(caller.owner or "anonymous", limit)
        if retry_after is not None:
            raise LimitExceeded(
                f"rate limit of {limit} requests per minute: try again after Retry-After "
                "seconds (the key's requests_per_minute, or TASKCRAWLER_RATE_LIMIT_PER_MINUTE, "
                "sets it)",
                retry_after,
            )

    # --- submit ---------------------------------------------------------------------------

    def check_options(self, options: JobOptions) -> None:
        """What a submission is refused for whatever its URL: formats that need a model where
        none is configured (:class:`ModelNotConfigured`)."""
        check_model(
            options.formats or (),
            options.options.json if options.options else None,
            configured=self.policy.model_configured,
        )

    def _new_job(self, caller: Caller, url: str, options: JobOptions) -> NewJob:
        self.check_options(options)
        key_callback = caller.key.callback_url if caller.key else None
        return NewJob.asking(
            url,
            caller.owner,
            options,
            default_callback=key_callback,
            pending_limit=max_pending_jobs(caller, self.policy.max_pending_jobs),
        )

    async def submit(self, caller: Caller, url: str, options: JobOptions) -> Created:
        """The URL's job, new or existing; :class:`LimitExceeded` when it would make the
        caller's unfinished jobs more than its limit (checked as the job is inserted)."""
        job = self._new_job(caller, url, options)
        created = _admitted(await self.submitter.submit(job))
        self.on_created(int(created.created))
        if created.restarted:
            await self._publish([created.job.id])
        return created

    async def submit_batch(
        self, caller: Caller, urls: Sequence[str], options: JobOptions
    ) -> list[Created]:
        """All URLs in one INSERT (one round trip), each deduplicated; refused as a whole when
        they would make the caller's unfinished jobs more than its limit."""
        new_jobs = [self._new_job(caller, url, options) for url in urls]
        results = [_admitted(result) for result in await self.submitter.create_now(new_jobs)]
        self.on_created(sum(r.created for r in results))
        await self._publish([r.job.id for r in results if r.restarted])
        return results

    # --- read -----------------------------------------------------------------------------

    async def get(self, caller: Caller, job_id: UUID) -> Job:
        """The caller's job; :class:`JobNotFound` for an unknown id or another tenant's."""
        job = await self.jobs.get_job(job_id, owner=caller.owner)
        if job is None:
            raise JobNotFound
        return job

    async def with_format(self, caller: Caller, job_id: UUID, fmt: str) -> Job:
        """The caller's job, COMPLETED with ``fmt``; else :class:`Conflict` saying how to get
        it (for a monitor's or a crawl's page, through the monitor or a crawl: submitting the
        URL makes a job of its own)."""
        job = await self.get(caller, job_id)
        if fmt not in job.formats:
            raise Conflict(await self._how_to_add(job, fmt))
        if job.status is JobStatus.COMPLETED:
            return job
        if job.status.is_final:
            raise Conflict(
                f"the job is {job.status} ({job.error_code or 'cancelled'}): "
                + _how_to_run_again(job)
            )
        raise Conflict(
            f"the job is {job.status}: its {fmt} is there once it is COMPLETED "
            f"(GET /api/v1/jobs/{job.id} tells)"
        )

    async def _how_to_add(self, job: Job, fmt: str) -> str:
        if job.crawl_id is not None:
            return (
                f"this page's crawl did not ask for {fmt!r}: start a crawl with formats "
                "including it (with max_age, it reads this page's stored copy instead of "
                "fetching), or submit the URL with formats including it for a job of its own"
            )
        monitor_id = await self.jobs.monitor_of(job.id)
        if monitor_id is not None:
            return (
                f"this monitor did not ask for {fmt!r}: PATCH /api/v1/monitors/{monitor_id} "
                "with formats including it, and its pages add it (from their stored page when "
                "there is one)"
            )
        return (
            f"this job did not ask for {fmt!r}: submit its URL again (POST /api/v1/jobs) with "
            "formats including it, and the job adds it (from its stored page when there is "
            "one, without fetching it)"
        )

    async def list_jobs(self, caller: Caller, query: JobQuery) -> tuple[list[Job], str | None]:
        """A page of the caller's jobs and the next page's cursor."""
        if query.id_prefix is not None:
            try:
                id_range(query.id_prefix)
            except ValueError as exc:
                raise InvalidCursor(str(exc), parameter="id_prefix") from None
        return await self.jobs.list_jobs(dataclasses.replace(query, owner=caller.owner))

    async def runs(self, caller: Caller, job_id: UUID, *, limit: int) -> list[JobRun]:
        await self.get(caller, job_id)
        return await self.jobs.runs(job_id, limit=limit)

    # --- change ---------------------------------------------------------------------------

    async def cancel(self, caller: Caller, job_id: UUID) -> Job:
        job, changed = await self.jobs.cancel(job_id, owner=caller.owner)
        if job is None:
            raise JobNotFound
        if not changed:
            raise Conflict(
                f"only a PENDING or PROCESSING job can be cancelled; this one is {job.status}"
                f" (POST /api/v1/jobs/{job.id}/retry runs it again)"
            )
        return job

    async def cancel_matching(self, caller: Caller, query: JobQuery) -> Cancelled:
        """Cancel every unfinished job of the caller's that matches (at most
        :data:`MAX_BULK_CANCEL` a call), each atomically: a job being fetched is cancelled too,
        and its worker's outcome is dropped."""
        query = cancel_query(dataclasses.replace(query, owner=caller.owner))
        cancelled = await self.jobs.cancel_matching(query, limit=MAX_BULK_CANCEL)
        if cancelled is None:
            raise NotFound("no batch with this id")
        return cancelled

    async def retry(self, caller: Caller, job_id: UUID) -> Job:
        """Re-run the caller's finished job; :class:`LimitExceeded` when that would make its
        unfinished jobs more than its limit (a submission's, counted as one's is)."""
        restarted = _restarted(
            await self.jobs.restart(
                [job_id],
                owner=caller.owner,
                redispatch_after=self.policy.redispatch_after,
                pending_limit=max_pending_jobs(caller, self.policy.max_pending_jobs),
            )
        )
        if restarted:
            await self._publish([job_id])
            return restarted[0]
        job = await self.get(caller, job_id)
        raise Conflict(f"only a finished job can be retried; this one is {job.status}")

    async def retry_matching(self, caller: Caller, query: JobQuery) -> list[Job]:
        """Re-run every finished job of the caller's that matches (default: all FAILED); none
        (:class:`LimitExceeded`) when they would make its unfinished jobs more than its
        limit, as a batch is refused as a whole."""
        statuses = query.statuses or (JobStatus.FAILED,)
        query = dataclasses.replace(query, owner=caller.owner, statuses=statuses)
        restarted = _restarted(
            await self.jobs.restart_matching(
                query,
                redispatch_after=self.policy.redispatch_after,
                pending_limit=max_pending_jobs(caller, self.policy.max_pending_jobs),
            )
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
            # As a new job's: else the sweeper takes them for published, and waits to see them
            # lost (redispatch_after, and only while the queue has no backlog).
            await self.jobs.mark_dispatch_due(ids)


def _how_to_run_again(job: Job) -> str:
    """How a finished job runs again: any by its retry; a plain job also by its URL."""
    retry = f"POST /api/v1/jobs/{job.id}/retry runs it again"
    if job.crawl_id is not None:
        return retry
    return f"submit its URL again, or {retry}"


def _admitted(result: Created | Refused) -> Created:
    if isinstance(result, Refused):
        raise limit_exceeded(result)
    return result


def _restarted(result: list[Job] | Refused) -> list[Job]:
    if isinstance(result, Refused):
        raise limit_exceeded(result)
    return result


def limit_exceeded(refused: Refused) -> LimitExceeded:
    """What a submission its owner's limit of unfinished jobs refused answers."""
    return LimitExceeded(pending_limit(refused.limit, refused.unfinished), retry_after=5.0)


def max_pending_jobs(caller: Caller, default: int | None) -> int | None:
    """The caller's limit of unfinished jobs: its key's, else the service's."""
    key_limit = caller.key.max_pending_jobs if caller.key else None
    return key_limit or default


def pending_limit(limit: int, unfinished: int) -> str:
    """Why a submission was refused for the key's unfinished jobs, and what to do."""
    return (
        f"at most {limit} unfinished jobs; {unfinished} are pending: wait for some to finish, "
        "or cancel them (the key's max_pending_jobs, or TASKCRAWLER_MAX_PENDING_JOBS, sets it)"
    )
