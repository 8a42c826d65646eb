"""A monitor's pages are its owner's jobs, held to its limit of unfinished jobs as submissions,
crawl starts and retries are, on both backends: creating a monitor is refused when its pages
would pass the limit, and a round that would is not run (its slot passes; the next one tries
again), counted atomically with the owner's other submissions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
import sqlalchemy as sa

from taskcrawler.domain.errors import LimitExceeded
from taskcrawler.domain.jobs import JobStatus, NewJob
from taskcrawler.domain.keys import Caller
from taskcrawler.domain.monitors import FiredSlot, Monitor, MonitorSpec
from taskcrawler.service.monitors import MonitorPolicy, MonitorRequest, MonitorService
from taskcrawler.storage import Storage
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.tables import jobs, monitor_pages

INTERVAL = 60.0
T0 = datetime(2030, 1, 1, tzinfo=UTC)
PAGES = ["http://a.test/", "http://b.test/"]


@pytest.fixture
async def storage(database_url: str) -> AsyncIterator[Storage]:
    store = Storage.on(open_database(database_url, pool_size=5))
    yield store
    await store.close()


async def limited_key(storage: Storage, limit: int) -> Caller:
    _, key = await storage.keys.create("limited", max_pending_jobs=limit)
    return Caller(key.owner, key)


async def watching(storage: Storage, owner: str) -> Monitor:
    """A monitor of ``PAGES`` whose first round ran and was read: its pages' jobs finished."""
    spec = MonitorSpec.create(interval_seconds=INTERVAL, urls=PAGES, min_interval_seconds=1)
    monitor = await storage.monitors.create(owner, spec, now=T0, redispatch_after=30)
    assert isinstance(monitor, Monitor)
    await storage.monitor_work.fire_due(now=T0, redispatch_after=30)
    await finish(storage, [page.job_id for page in monitor.pages])
    async with storage.db.write() as conn:
        await conn.execute(
            monitor_pages.update()
            .where(monitor_pages.c.monitor_id == monitor.id)
            .values(evaluated_run=1, awaiting_read=False)
        )
    return monitor


async def finish(storage: Storage, job_ids: list[UUID]) -> None:
    async with storage.db.write() as conn:
        await conn.execute(
            jobs.update()
            .where(jobs.c.id.in_(job_ids))
            .values(status=JobStatus.COMPLETED.value, run_count=1)
        )


async def submit(storage: Storage, owner: str, urls: list[str]) -> list[UUID]:
    created = await storage.jobs.create_jobs(
        [NewJob(url, owner) for url in urls], redispatch_after=30
    )
    return [c.job.id for c in created]  # type: ignore[union-attr]


async def fire(storage: Storage, now: datetime, default: int | None) -> list[FiredSlot]:
    """The slots due at ``now`` fired; ``default``: the service's limit, if it sets one."""
    limited = {} if default is None else {"pending_limit": default}
    return await storage.monitor_work.fire_due(now=now, redispatch_after=30, **limited)


@pytest.mark.parametrize("limited_by", ["key", "service"])
async def test_a_round_that_would_pass_the_owners_limit_runs_none_of_its_pages(
    storage: Storage, limited_by: str
) -> None:
    """With two other jobs unfinished, a round of two pages would make four of three: the
    slot passes with none run; once the others finished, the next slot runs both."""
    if limited_by == "key":
        owner, default = (await limited_key(storage, 3)).owner, None
    else:
        owner, default = "o", 3
    monitor = await watching(storage, owner)
    others = await submit(storage, owner, ["http://c.test/", "http://d.test/"])

    [held] = await fire(storage, T0 + timedelta(seconds=INTERVAL), default)
    assert held.job_ids == ()
    assert await storage.jobs.count_unfinished(owner) == 2

    await finish(storage, others)
    [ran] = await fire(storage, T0 + timedelta(seconds=2 * INTERVAL), default)
    assert set(ran.job_ids) == {page.job_id for page in monitor.pages}
    assert await storage.jobs.count_unfinished(owner) == 2


async def test_a_round_within_the_limit_and_another_owners_rounds_run(
    storage: Storage,
) -> None:
    limited = await limited_key(storage, 2)
    mine = await watching(storage, limited.owner)
    theirs = await watching(storage, "unlimited")
    await submit(storage, "unlimited", [f"http://{n}.test/" for n in range(5)])

    slots = await storage.monitor_work.fire_due(
        now=T0 + timedelta(seconds=INTERVAL), redispatch_after=30
    )
    ran = {slot.monitor_id: set(slot.job_ids) for slot in slots}
    assert ran == {
        mine.id: {page.job_id for page in mine.pages},
        theirs.id: {page.job_id for page in theirs.pages},
    }


async def test_a_monitor_whose_pages_would_pass_the_limit_is_not_created(
    storage: Storage,
) -> None:
    caller = await limited_key(storage, 3)
    await submit(storage, caller.owner, ["http://c.test/", "http://d.test/"])
    service = MonitorService(MonitorPolicy(min_interval_seconds=1), storage.monitors)

    with pytest.raises(LimitExceeded, match="at most 3 unfinished jobs"):
        await service.create(caller, MonitorRequest(interval_seconds=INTERVAL, urls=PAGES))

    assert await storage.monitors.list_monitors(caller.owner) == ([], None)
    async with storage.db.read() as conn:
        assert await conn.scalar(sa.select(sa.func.count()).select_from(jobs)) == 2
    one = await service.create(caller, MonitorRequest(interval_seconds=INTERVAL, url=PAGES[0]))
    assert len(one.pages) == 1
