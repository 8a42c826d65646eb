"""The sweeper recovers expired leases as outcomes are written, so no more at once than an
outcome write takes (``outcome_batch``): on SQLite one write holds the writer lock every process
queues for, for as long as its transitions take."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

from taskcrawler.domain import ClaimedJob
from taskcrawler.domain.transitions import Transition
from taskcrawler.queue import MemoryQueue
from taskcrawler.worker.sweeper import SweepConfig, Sweeper

BOUND = 7


class ExpiredLeases:
    """A store with ``expired`` leases to recover, recording each recovery's limit."""

    outcome_batch = BOUND

    def __init__(self, expired: int) -> None:
        self.expired = expired
        self.limits: list[int] = []

    async def recover_expired_leases(
        self, decide: Callable[[ClaimedJob, datetime], Transition], *, limit: int, **_: Any
    ) -> list[Transition]:
        self.limits.append(limit)
        taken = min(limit, self.expired)
        self.expired -= taken
        return [object()] * taken  # type: ignore[list-item]  # the sweeper only counts them

    async def complete_idle_crawls(self) -> list[UUID]:
        return []

    async def take_due_dispatches(self, **_: Any) -> list[UUID]:
        return []


async def test_a_recovery_takes_no_more_leases_than_an_outcome_write() -> None:
    store = ExpiredLeases(expired=3 * BOUND + 2)
    sweeper = Sweeper(SweepConfig(), store, MemoryQueue())  # type: ignore[arg-type]

    await sweeper.sweep()

    assert store.limits == [BOUND] * 4
    assert sweeper.recovered == 3 * BOUND + 2
