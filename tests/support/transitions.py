"""Transitions decided the way the worker decides them, with a retry delay fixed for a test."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import datetime

from taskcrawler.domain import ClaimedJob, Outcome
from taskcrawler.domain.transitions import RetryPolicy, Transition, decide, lease_expired


class _Ceiling(random.Random):
    """Full jitter at its ceiling: the backoff is exactly its cap."""

    def uniform(self, a: float, b: float) -> float:
        return b


def decided(
    outcomes: Sequence[Outcome], *, max_retries: int = 3, delay: float = 0.0
) -> list[Transition]:
    """The transitions of ``outcomes`` under a policy whose every retry waits ``delay`` seconds
    (or the server's Retry-After, when longer)."""
    policy = RetryPolicy(max_retries=max_retries, base_seconds=delay, max_seconds=delay)
    return [decide(outcome, policy, rng=_Ceiling()) for outcome in outcomes]


def lost_attempts(
    *, max_retries: int = 3, delay: float = 0.0
) -> Callable[[ClaimedJob, datetime], Transition]:
    """The sweeper's decision for a job whose lease expired, under the policy of
    :func:`decided`."""
    policy = RetryPolicy(max_retries=max_retries, base_seconds=delay, max_seconds=delay)
    return lambda job, now: decide(lease_expired(job, now), policy, rng=_Ceiling())
