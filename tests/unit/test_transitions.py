"""The one decision of a job's fate: what an attempt does to its job, and the final states."""

from __future__ import annotations

import random
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import get_args

import pytest

from taskcrawler.cli.client import FINISHED
from taskcrawler.contract.base import FinishedStatus
from taskcrawler.domain import ClaimedJob, ErrorCode, JobStatus, Outcome
from taskcrawler.domain.jobs import FINAL_STATUSES
from taskcrawler.domain.pages import PageContent
from taskcrawler.domain.transitions import (
    RetryPolicy,
    TransitionKind,
    decide,
    lease_expired,
    refused,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
POLICY = RetryPolicy(max_retries=3, base_seconds=1.0, max_seconds=60.0)
DASHBOARD = Path(__file__).resolve().parents[2] / "taskcrawler/api/static/dashboard/common.js"


def attempt(retry_count: int = 0, **fields: object) -> Outcome:
    job = ClaimedJob(uuid.uuid4(), "https://example.com/", retry_count, uuid.uuid4())
    return Outcome(job=job, finished_at=NOW, **fields)  # type: ignore[arg-type]


def failure(code: str, *, transient: bool, retry_count: int = 0, **fields: object) -> Outcome:
    return attempt(
        retry_count, error_code=code, error_message="boom", transient=transient, **fields
    )


@pytest.mark.parametrize(("retry_count", "kind"), [(0, "retried"), (2, "retried"), (3, "failed")])
def test_an_expired_lease_is_decided_as_a_transient_failure(retry_count: int, kind: str) -> None:
    """The sweeper's lost attempts take the same policy as the worker's own: counted, retried
    after a backoff that grows with the attempts, FAILED past the limit, all as worker_lost."""
    job = ClaimedJob(uuid.uuid4(), "https://example.com/", retry_count, uuid.uuid4())
    transition = decide(lease_expired(job, NOW), POLICY, rng=random.Random(3))
    assert transition.kind == kind
    assert transition.error_code == ErrorCode.WORKER_LOST
    assert transition.error_log is not None and "lease" in transition.error_log
    if kind == "retried":
        assert transition.retry_count == retry_count + 1
        assert transition.next_attempt_at is not None
        ceiling = POLICY.base_seconds * 2**retry_count  # full jitter under the cap
        assert NOW <= transition.next_attempt_at <= NOW + timedelta(seconds=ceiling)
    else:
        assert (transition.status, transition.finished_at) == (JobStatus.FAILED, NOW)


def test_a_deferral_keeps_the_error_that_counted_the_last_retry() -> None:
    """A job recovered from a lost worker (retry_count 1, worker_lost) whose next attempt is
    deferred (its host busy) must not look like it was retried for host_busy."""
    first = decide(failure("host_busy", transient=True), POLICY, rng=random.Random(1))
    assert (first.kind, first.error_code) == ("deferred", "host_busy")
    later = decide(
        failure("host_busy", transient=True, retry_count=1), POLICY, rng=random.Random(1)
    )
    assert (later.kind, later.retry_count, later.error_code, later.error_log) == (
        "deferred",
        1,
        None,
        None,
    )
    assert later.next_attempt_at is not None


@pytest.mark.parametrize(
    ("outcome", "kind", "status", "retry_count"),
    [
        (attempt(http_status=200), "completed", JobStatus.COMPLETED, 0),
        (attempt(http_status=304, unchanged=True), "unchanged", JobStatus.COMPLETED, 0),
        (failure("http_404", transient=False), "failed", JobStatus.FAILED, 0),
        (failure("http_5xx", transient=True), "retried", JobStatus.PENDING, 1),
        (failure("timeout", transient=True, retry_count=2), "retried", JobStatus.PENDING, 3),
        (failure("timeout", transient=True, retry_count=3), "failed", JobStatus.FAILED, 3),
        (failure("host_busy", transient=True), "deferred", JobStatus.PENDING, 0),
        (failure("host_busy", transient=True, retry_count=3), "deferred", JobStatus.PENDING, 3),
        (failure("queue_unavailable", transient=True), "deferred", JobStatus.PENDING, 0),
    ],
)
def test_each_outcome_makes_its_transition(
    outcome: Outcome, kind: str, status: JobStatus, retry_count: int
) -> None:
    transition = decide(outcome, POLICY, rng=random.Random(1))
    assert (transition.kind, transition.status, transition.retry_count) == (
        kind,
        status,
        retry_count,
    )
    assert transition.outcome is outcome
    if status is JobStatus.PENDING:
        assert transition.finished_at is None
        assert transition.next_attempt_at is not None and transition.next_attempt_at >= NOW
    else:
        assert transition.next_attempt_at is None
        assert transition.finished_at == NOW


def test_a_failure_carries_its_error_and_a_success_clears_it() -> None:
    failed = decide(failure("http_404", transient=False), POLICY, rng=random.Random(1))
    assert (failed.error_code, failed.error_log) == ("http_404", "http_404: boom")
    completed = decide(attempt(http_status=200), POLICY, rng=random.Random(1))
    assert (completed.error_code, completed.error_log) == (None, None)


def test_a_304_is_tallied_as_completed() -> None:
    unchanged = decide(attempt(http_status=304, unchanged=True), POLICY, rng=random.Random(1))
    assert unchanged.kind is TransitionKind.UNCHANGED
    assert unchanged.tally == "completed"


def test_the_retry_delay_is_full_jitter_under_the_cap() -> None:
    rng = random.Random(7)
    delays = {
        decide(failure("timeout", transient=True, retry_count=2), POLICY, rng=rng).next_attempt_at
        for _ in range(200)
    }
    assert len(delays) > 100  # jittered, not one synchronized wave
    for due in delays:
        assert due is not None and NOW <= due <= NOW + timedelta(seconds=4)  # base * 2**2


def test_retry_after_is_a_floor_for_the_delay() -> None:
    outcome = failure(ErrorCode.HTTP_429, transient=True, retry_after=120.0)
    transition = decide(outcome, POLICY, rng=random.Random(1))
    assert transition.next_attempt_at == NOW + timedelta(seconds=120)


def test_the_same_random_source_makes_the_same_decision() -> None:
    outcome = failure("timeout", transient=True)
    first = decide(outcome, POLICY, rng=random.Random(3))
    assert decide(outcome, POLICY, rng=random.Random(3)) == first


@pytest.mark.parametrize(
    "outcome",
    [
        attempt(http_status=200, scraped_title="x", content=PageContent(texts={"text": "x"})),
        failure("http_5xx", transient=True, http_status=503),  # was to be retried
        failure("host_busy", transient=True, http_status=200),  # was to be deferred
    ],
)
def test_a_refused_result_fails_its_job_at_once_whatever_it_was_to_become(
    outcome: Outcome,
) -> None:
    decided = decide(outcome, POLICY, rng=random.Random(1))
    failed = refused(decided, "DataError: invalid byte sequence")
    assert (failed.kind, failed.status) == (TransitionKind.FAILED, JobStatus.FAILED)
    assert failed.retry_count == outcome.job.retry_count  # no attempt added, none left to use
    assert (failed.finished_at, failed.next_attempt_at) == (NOW, None)
    assert failed.error_code == ErrorCode.UNSTORABLE
    assert failed.error_log is not None
    assert failed.error_log.startswith("unstorable_result: the database refused the page's")
    assert failed.error_log.endswith("DataError: invalid byte sequence")
    kept = failed.outcome
    assert kept.job is outcome.job and kept.http_status == outcome.http_status
    assert (kept.content, kept.result, kept.scraped_title) == (None, None, None)


def test_the_final_statuses_are_the_same_everywhere_they_are_spelled() -> None:
    final = {status.value for status in FINAL_STATUSES}
    assert final == {"COMPLETED", "FAILED", "CANCELLED"}
    assert {status for status in JobStatus if status.is_final} == FINAL_STATUSES
    assert set(get_args(FinishedStatus)) == final  # a Literal, for the OpenAPI schema
    assert final == FINISHED
    spelled = re.search(r"const FINISHED = new Set\(\[([^\]]*)\]\)", DASHBOARD.read_text())
    assert spelled is not None
    assert set(re.findall(r'"([A-Z]+)"', spelled.group(1))) == final
