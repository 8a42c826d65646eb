"""What one attempt does to its job, decided once: the worker asks, storage persists the answer,
and metrics, worker stats and logs read its kind. Pure: the random source and the clock come in."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from taskcrawler.domain.backoff import backoff_delay
from taskcrawler.domain.errors import ErrorCode
from taskcrawler.domain.jobs import ClaimedJob, JobStatus, Outcome
from taskcrawler.domain.storable import unstorable


class TransitionKind(StrEnum):
    COMPLETED = "completed"
    #: 304 Not Modified to a conditional re-fetch: COMPLETED, the stored result kept.
    UNCHANGED = "unchanged"
    #: A transient failure with retries left: PENDING again, one more attempt counted.
    RETRIED = "retried"
    #: Not the job's failure (its host was busy, Redis was down): PENDING again, uncounted.
    DEFERRED = "deferred"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Transient failures are retried ``max_retries`` times, after full-jitter exponential
    backoff on ``min(max_seconds, base_seconds * 2**n)``; a server's Retry-After is a floor."""

    max_retries: int = 3
    base_seconds: float = 1.0
    max_seconds: float = 60.0

    def delay(self, outcome: Outcome, rng: random.Random) -> float:
        jittered = backoff_delay(
            outcome.job.retry_count + 1, base=self.base_seconds, cap=self.max_seconds, rng=rng
        )
        return max(jittered, outcome.retry_after or 0.0)


@dataclass(frozen=True, slots=True)
class Transition:
    """The attempt, and what its job becomes. Fields left None are not changed by it."""

    outcome: Outcome
    kind: TransitionKind
    status: JobStatus
    retry_count: int
    #: When a PENDING job is due again (retried, deferred).
    next_attempt_at: datetime | None = None
    #: When a job that became final finished.
    finished_at: datetime | None = None
    error_code: str | None = None
    error_log: str | None = None

    @property
    def job(self) -> ClaimedJob:
        return self.outcome.job

    @property
    def tally(self) -> str:
        """The count it adds to (worker stats, metrics, log lines): a 304 is a completed job."""
        kind = TransitionKind.COMPLETED if self.kind is TransitionKind.UNCHANGED else self.kind
        return kind.value


def decide(outcome: Outcome, policy: RetryPolicy, *, rng: random.Random) -> Transition:
    """The transition ``outcome`` makes, at the time the attempt finished."""
    now = outcome.finished_at
    retries = outcome.job.retry_count
    if outcome.unchanged:
        return Transition(
            outcome, TransitionKind.UNCHANGED, JobStatus.COMPLETED, retries, finished_at=now
        )
    if outcome.succeeded:
        return Transition(
            outcome, TransitionKind.COMPLETED, JobStatus.COMPLETED, retries, finished_at=now
        )
    if outcome.deferred:
        kind, status, retry_count = TransitionKind.DEFERRED, JobStatus.PENDING, retries
        if retries:
            # Not a failure of the job: the error of the attempt that counted its last retry
            # (a lost worker, a timeout) still says why it ran again, and is kept.
            return Transition(
                outcome,
                kind,
                status,
                retry_count,
                next_attempt_at=now + timedelta(seconds=policy.delay(outcome, rng)),
            )
    elif outcome.transient and retries < policy.max_retries:
        kind, status, retry_count = TransitionKind.RETRIED, JobStatus.PENDING, retries + 1
    else:
        return _failed(outcome)
    return Transition(
        outcome,
        kind,
        status,
        retry_count,
        next_attempt_at=now + timedelta(seconds=policy.delay(outcome, rng)),
        error_code=outcome.error_code,
        error_log=outcome.error_log,
    )


def lease_expired(job: ClaimedJob, now: datetime) -> Outcome:
    """The attempt of a job whose worker stopped renewing its lease (killed, cut off, stalled):
    lost with its worker, a transient failure like a timeout, decided by :func:`decide` like
    any other attempt."""
    return Outcome(
        job,
        error_code=ErrorCode.WORKER_LOST,
        error_message="the worker stopped renewing its lease",
        transient=True,
        finished_at=now,
    )


def refused(transition: Transition, reason: str) -> Transition:
    """What replaces a transition whose result the database refused to store: its job FAILED at
    once as unstorable_result, whatever retries are left, since the same page would be refused
    again; nothing the page produced is kept but its status."""
    return _failed(unstorable(transition.outcome, reason))


def _failed(outcome: Outcome) -> Transition:
    return Transition(
        outcome,
        TransitionKind.FAILED,
        JobStatus.FAILED,
        outcome.job.retry_count,
        finished_at=outcome.finished_at,
        error_code=outcome.error_code,
        error_log=outcome.error_log,
    )
