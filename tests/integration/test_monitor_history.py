"""A monitor's history stays bounded, on both backends: a page of changes is cut by bytes, not
only by count, one change is read alone, and the worker prunes changes by count and age and the
pages of crawl rounds no round reads again."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
import sqlalchemy as sa

from taskcrawler.domain.keys import Caller
from taskcrawler.domain.monitors import ChangeRetention, MonitorSpec
from taskcrawler.queue import MemoryQueue
from taskcrawler.service.monitors import ChangeNotFound, MonitorPolicy, MonitorService
from taskcrawler.storage import Storage
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.tables import crawls, monitor_crawls
from taskcrawler.worker.monitoring import MonitorConfig, MonitorScheduler
from taskcrawler.worker.parsing import PageParser
from tests.support import seeding

T0 = datetime(2030, 1, 1, tzinfo=UTC)
KIB = 1024


@pytest.fixture
async def storage(database_url: str) -> AsyncIterator[Storage]:
    store = Storage.on(open_database(database_url, pool_size=5))
    yield store
    await store.close()


async def new_monitor(storage: Storage, owner: str = "o") -> UUID:
    spec = MonitorSpec.create(interval_seconds=60, url="http://a.test/", min_interval_seconds=1)
    monitor = await storage.monitors.create(owner, spec, now=T0, redispatch_after=30)
    return monitor.id


async def add_changes(
    storage: Storage, monitor_id: UUID, diffs: list[str], *, start: datetime = T0
) -> list[UUID]:
    return await seeding.changes(storage, monitor_id, diffs, start=start)


def service(storage: Storage, max_bytes: int) -> MonitorService:
    return MonitorService(MonitorPolicy(changes_page_max_bytes=max_bytes), storage.monitors)


async def all_pages(monitors: MonitorService, monitor_id: UUID, limit: int) -> list[list[UUID]]:
    pages: list[list[UUID]] = []
    cursor = None
    while True:
        found, cursor = await monitors.changes(Caller("o"), monitor_id, limit=limit, cursor=cursor)
        pages.append([change.id for change in found])
        if cursor is None:
            return pages


async def test_a_page_of_changes_ends_before_its_bytes_pass_the_bound(storage: Storage) -> None:
    monitor_id = await new_monitor(storage)
    # 300 KB each: three fit in 1 MiB, a fourth would not.
    ids = await add_changes(storage, monitor_id, [f"{n}" * (300 * KIB) for n in range(10)])
    pages = await all_pages(service(storage, 1024 * KIB), monitor_id, limit=500)
    assert [len(page) for page in pages] == [3, 3, 3, 1]
    assert [change for page in pages for change in page] == ids[::-1]  # each once, newest first


async def test_bytes_are_counted_not_characters(storage: Storage) -> None:
    monitor_id = await new_monitor(storage)
    # 200 Ki characters of two bytes each: 400 KiB, so two fit in 1 MiB, where three would
    # if characters were counted.
    await add_changes(storage, monitor_id, ["é" * (200 * KIB)] * 4)
    pages = await all_pages(service(storage, 1024 * KIB), monitor_id, limit=500)
    assert [len(page) for page in pages] == [2, 2]


async def test_a_change_bigger_than_a_page_comes_alone_and_whole(storage: Storage) -> None:
    monitor_id = await new_monitor(storage)
    big = "x" * (512 * KIB)
    small, large = await add_changes(storage, monitor_id, ["-a\n+b\n", big])
    monitors = service(storage, 64 * KIB)
    pages = await all_pages(monitors, monitor_id, limit=50)
    assert pages == [[large], [small]]
    one = await monitors.change(Caller("o"), monitor_id, large)
    assert one.diff is not None and one.diff.markdown.text == big
    # Another tenant's, or another monitor's, change is not found.
    with pytest.raises(ChangeNotFound):
        await monitors.change(Caller("o"), await new_monitor(storage), large)
    assert await storage.monitors.change(monitor_id, large, owner="p") is None


async def test_the_count_still_bounds_a_page(storage: Storage) -> None:
    monitor_id = await new_monitor(storage)
    await add_changes(storage, monitor_id, ["-a\n+b\n"] * 7)
    pages = await all_pages(service(storage, 1024 * KIB), monitor_id, limit=3)
    assert [len(page) for page in pages] == [3, 3, 1]


def scheduler(
    storage: Storage, retention: ChangeRetention, clock: list[datetime]
) -> MonitorScheduler:
    config = MonitorConfig(change_retention=retention, prune_batch=4, prune_batches=100)
    return MonitorScheduler(
        config, storage.monitor_work, MemoryQueue(), PageParser(), clock=lambda: clock[0]
    )


async def kept(storage: Storage, monitor_id: UUID) -> list[UUID]:
    found, _ = await storage.monitors.changes(monitor_id, owner="o", limit=500)
    return [change.id for change in found][::-1]


async def test_the_worker_prunes_changes_by_count_and_by_age(storage: Storage) -> None:
    busy, quiet = await new_monitor(storage), await new_monitor(storage)
    busy_ids = await add_changes(storage, busy, ["-a\n+b\n"] * 25)
    quiet_ids = await add_changes(storage, quiet, ["-a\n+b\n"] * 3, start=T0 + timedelta(days=5))
    clock = [T0 + timedelta(days=6)]
    pruning = scheduler(storage, ChangeRetention(keep_changes=10, keep_days=30), clock)

    # Batches of four: the pass goes on until a batch finds less to do.
    assert await pruning.prune() == 15
    assert await kept(storage, busy) == busy_ids[-10:]
    assert await kept(storage, quiet) == quiet_ids
    assert await pruning.prune() == 0

    clock[0] = T0 + timedelta(days=35)  # 30 days after quiet's first, busy's all older
    assert await pruning.prune() == 10
    assert await kept(storage, busy) == []
    assert await kept(storage, quiet) == quiet_ids


async def test_no_retention_keeps_everything(storage: Storage) -> None:
    monitor_id = await new_monitor(storage)
    ids = await add_changes(storage, monitor_id, ["-a\n+b\n"] * 12)
    clock = [T0 + timedelta(days=3650)]
    pruning = scheduler(storage, ChangeRetention(keep_changes=None, keep_days=None), clock)
    assert await pruning.prune() == 0
    assert await kept(storage, monitor_id) == ids


async def test_a_tick_prunes_once_a_prune_interval(storage: Storage) -> None:
    monitor_id = await new_monitor(storage)
    await add_changes(storage, monitor_id, ["-a\n+b\n"] * 6)
    clock = [T0 + timedelta(hours=1)]
    pruning = scheduler(storage, ChangeRetention(keep_changes=5, keep_days=None), clock)
    await pruning.tick()
    assert len(await kept(storage, monitor_id)) == 5
    await add_changes(storage, monitor_id, ["-a\n+b\n"] * 2, start=T0 + timedelta(minutes=30))
    await pruning.tick()  # the same minute: not yet
    assert len(await kept(storage, monitor_id)) == 7
    clock[0] += timedelta(seconds=MonitorConfig().prune_seconds)
    await pruning.tick()
    assert len(await kept(storage, monitor_id)) == 5


async def test_a_crawl_rounds_pages_are_cleared_once_a_later_round_was_read(
    storage: Storage,
) -> None:
    spec = MonitorSpec.create(
        interval_seconds=60,
        crawl={"url": "http://a.test/", "limit": 10},
        min_interval_seconds=1,
    )
    monitor = await storage.monitors.create("o", spec, now=T0, redispatch_after=30)
    pages = {"http://a.test/": str(uuid.uuid4())}
    async with storage.db.write() as conn:
        for n, read in enumerate([True, True, False]):
            crawl_id = uuid.uuid4()
            await conn.execute(
                crawls.insert(),
                [{"id": crawl_id, "owner": "o", "url": "http://a.test/", "spec": {},
                  "status": "COMPLETED", "created_at": T0}],
            )  # fmt: skip
            await conn.execute(
                monitor_crawls.insert(),
                [{"monitor_id": monitor.id, "slot_at": T0 + timedelta(minutes=n),
                  "crawl_id": crawl_id, "read_at": T0 if read else None,
                  "pages": pages if read else None}],
            )  # fmt: skip
    retention = ChangeRetention(keep_changes=None, keep_days=None)
    assert await storage.monitor_work.prune_history(retention, now=T0, limit=10) == 1
    async with storage.db.read() as conn:
        kept_pages = [
            row.pages is not None
            for row in await conn.execute(
                sa.select(monitor_crawls.c.pages).order_by(monitor_crawls.c.slot_at)
            )
        ]
    # The newest read round is what the unread one will be compared with: it stays.
    assert kept_pages == [False, True, False]
    assert await storage.monitor_work.prune_history(retention, now=T0, limit=10) == 0
