"""Every worker sweeps once a second, and most sweeps find nothing: a step with nothing to do
must not take the database's writer (on SQLite, the API's writer too), and one with something
must still do it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TypeVar

import pytest

from taskcrawler.storage import JobStore, NewJob, WorkStore
from taskcrawler.storage.adapters import open_database
from tests.support.counted_writes import CountedWrites
from tests.support.transitions import lost_attempts

T = TypeVar("T")


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[CountedWrites]:
    database = open_database(database_url, pool_size=2)
    yield CountedWrites(database)
    await database.close()


async def _sweep_steps(work: WorkStore) -> tuple[int, int, int]:
    lost = await work.recover_expired_leases(lost_attempts(max_retries=3, delay=0.0))
    idle = await work.complete_idle_crawls()
    due = await work.take_due_dispatches(redispatch_after=30)
    return len(lost), len(idle), len(due)


async def test_a_sweep_with_nothing_to_do_takes_no_writer(db: CountedWrites) -> None:
    work = WorkStore(db)  # type: ignore[arg-type]
    assert await _sweep_steps(work) == (0, 0, 0)
    assert db.writes == 0


async def test_a_sweep_with_a_due_job_still_takes_it(db: CountedWrites) -> None:
    jobs, work = JobStore(db.db), WorkStore(db)  # type: ignore[arg-type]
    [created] = await jobs.create_jobs([NewJob("http://due.test/")], redispatch_after=30)
    await WorkStore(db.db).mark_dispatch_due([created.job.id])  # its publish failed
    assert await _sweep_steps(work) == (0, 0, 1)
    assert db.writes == 1
    assert await _sweep_steps(work) == (0, 0, 0)  # dispatched: not again before its time
    assert db.writes == 1
