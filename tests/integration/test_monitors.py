"""Monitors on both backends: slots fire once across workers and restarts, pause and resume,
tenant isolation, and rounds of real jobs against a site whose pages change on command.

Time is a clock the test moves (the scheduler and the storage take ``now``), so nothing here
waits for a schedule; only the jobs' fetches run for real, and the test waits for them to end.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import pytest
import sqlalchemy as sa

from taskcrawler import bootstrap
from taskcrawler.domain.monitors import ChangeKind, MonitorSpec, change_document
from taskcrawler.domain.pages import FetchedPage
from taskcrawler.domain.runs import RetentionPolicy, RunContent
from taskcrawler.domain.webhooks import verify_signature
from taskcrawler.extract import Extraction
from taskcrawler.fetch import Fetcher
from taskcrawler.queue import MemoryQueue
from taskcrawler.settings import Settings
from taskcrawler.storage import Storage, monitor_work
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.content import _archive_row
from taskcrawler.storage.tables import (
    job_runs,
    jobs,
    monitor_pages,
    monitor_rounds,
    page_archive,
    run_contents,
)
from taskcrawler.worker import monitoring
from taskcrawler.worker.monitoring import MonitorConfig, MonitorScheduler
from taskcrawler.worker.parsing import PageParser, ParseCrashed
from taskcrawler.worker.sweeper import SweepConfig, Sweeper
from taskcrawler.worker.webhooks import WebhookDispatcher
from taskcrawler.worker.worker import Worker
from tests.support.changing_site import (
    NOISE_SELECTORS,
    ChangingSiteServer,
    PageKind,
    start_changing_site,
)
from tests.support.hostile import fetch_settings
from tests.support.patch import apply_patch
from tests.support.webhook_receiver import Receiver, webhook_receiver
from tests.support.workers import running_worker

INTERVAL = 60.0
T0 = datetime(2030, 1, 1, tzinfo=UTC)


def spec(urls: list[str], **options: object) -> MonitorSpec:
    return MonitorSpec.create(
        interval_seconds=INTERVAL, urls=urls, min_interval_seconds=1, **options
    )


@pytest.fixture
async def storage(database_url: str) -> AsyncIterator[Storage]:
    store = Storage.on(open_database(database_url, pool_size=10))
    yield store
    await store.close()


async def test_each_due_slot_fires_once_across_workers_and_restarts(database_url: str) -> None:
    """Two workers (each its own engine) race for every slot; both are restarted after a
    stretch with no worker up; each due slot fires once, a late one once for all it missed."""
    first = [Storage.on(open_database(database_url, pool_size=5)) for _ in range(2)]
    monitor = await first[0].monitors.create(
        "o", spec(["http://a.test/", "http://b.test/"]), now=T0, redispatch_after=30
    )
    fired: list[datetime] = []
    for k in range(6):
        now = T0 + timedelta(seconds=k * INTERVAL + 1)
        for _ in range(2):  # a second pass at the same moment finds nothing due
            results = await asyncio.gather(
                *(s.monitor_work.fire_due(now=now, redispatch_after=30) for s in first)
            )
            fired.extend(slot.slot_at for batch in results for slot in batch)
    for store in first:
        await store.close()
    # Both workers down for five intervals, then up again (new engines, nothing in memory).
    again = [Storage.on(open_database(database_url, pool_size=5)) for _ in range(2)]
    try:
        late = T0 + timedelta(seconds=10 * INTERVAL + 30)
        results = await asyncio.gather(
            *(s.monitor_work.fire_due(now=late, redispatch_after=30) for s in again)
        )
        slots = [slot for batch in results for slot in batch]
        assert [(s.slot_at, s.missed) for s in slots] == [(T0 + timedelta(minutes=10), 4)]
        fired.extend(s.slot_at for s in slots)
        rounds = await again[0].monitors.rounds(monitor.id)
        current = await again[1].monitors.get(monitor.id, owner="o")
    finally:
        for store in again:
            await store.close()
    expected = [T0 + timedelta(seconds=k * INTERVAL) for k in range(6)] + [
        T0 + timedelta(minutes=10)
    ]
    assert fired == expected
    assert [slot for slot, _ in rounds] == expected
    assert current is not None and current.rounds == len(expected)
    assert current.next_due_at == T0 + timedelta(minutes=11)


async def test_a_restarted_worker_leaves_a_monitors_pages_to_their_first_slot(
    storage: Storage,
) -> None:
    """A worker's restart sweep on an in-process queue publishes every PENDING job; a monitor's
    pages are not published before their first slot (a page run then is run again by it, one
    fetch more); once the slot fired, a publish lost after it is the sweeper's again."""
    queue = MemoryQueue()
    sweeper = Sweeper(SweepConfig(), storage.work, queue)
    now = datetime.now(UTC)
    monitor = await storage.monitors.create(
        "o", spec(["http://a.test/", "http://b.test/"]), now=now, redispatch_after=30
    )
    await sweeper.sweep(after_restart=True)
    assert await queue.depth() == 0
    [slot] = await storage.monitor_work.fire_due(now=now, redispatch_after=0)  # its publish lost
    assert set(slot.job_ids) == {page.job_id for page in monitor.pages}
    await sweeper.sweep()
    assert sorted(await queue.consume(10, 0)) == sorted(slot.job_ids)


async def test_pause_resume_and_a_new_interval(storage: Storage) -> None:
    monitor = await storage.monitors.create(
        "o", spec(["http://a.test/"]), now=T0, redispatch_after=30
    )
    assert len(await storage.monitor_work.fire_due(now=T0, redispatch_after=30)) == 1
    paused = await storage.monitors.update(monitor.id, owner="o", now=T0, paused=True)
    assert paused is not None and paused.paused
    later = T0 + timedelta(seconds=5 * INTERVAL + 1)
    assert await storage.monitor_work.fire_due(now=later, redispatch_after=30) == []
    await storage.monitors.update(monitor.id, owner="o", now=later, paused=False)
    [resumed] = await storage.monitor_work.fire_due(now=later, redispatch_after=30)
    assert (resumed.slot_at, resumed.missed) == (T0 + timedelta(seconds=5 * INTERVAL), 4)
    # A new interval starts its slots now: the next comes one new interval later.
    changed = await storage.monitors.update(
        monitor.id, owner="o", now=later, interval_seconds=2 * INTERVAL
    )
    assert changed is not None and changed.spec.interval_seconds == 2 * INTERVAL
    assert changed.next_due_at == later + timedelta(seconds=2 * INTERVAL)
    assert (
        await storage.monitor_work.fire_due(
            now=later + timedelta(seconds=INTERVAL), redispatch_after=30
        )
        == []
    )
    [next_slot] = await storage.monitor_work.fire_due(
        now=later + timedelta(seconds=2 * INTERVAL), redispatch_after=30
    )
    assert next_slot.slot_at == later + timedelta(seconds=2 * INTERVAL)


async def test_a_tenant_sees_only_its_own_monitors(storage: Storage) -> None:
    mine = await storage.monitors.create("a", spec(["http://a.test/"]), now=T0, redispatch_after=30)
    await storage.monitors.create("b", spec(["http://a.test/"]), now=T0, redispatch_after=30)
    assert await storage.monitors.get(mine.id, owner="b") is None
    assert await storage.monitors.update(mine.id, owner="b", now=T0, paused=True) is None
    assert await storage.monitors.delete(mine.id, owner="b") is False
    listed, _ = await storage.monitors.list_monitors("b")
    assert [m.owner for m in listed] == ["b"]
    # Its page is a job of its own: not the owner's job for the URL, nor the other tenant's.
    async with storage.db.read() as conn:
        keys = list((await conn.execute(sa.select(jobs.c.url_key))).scalars())
    assert len(set(keys)) == 2
    assert await storage.monitors.delete(mine.id, owner="a") is True
    assert await storage.monitors.get(mine.id, owner="a") is None
    async with storage.db.read() as conn:
        assert await conn.scalar(sa.select(sa.func.count()).select_from(jobs)) == 1


async def test_deleting_a_monitor_leaves_no_rows_of_it_on_either_backend(
    storage: Storage,
) -> None:
    """Its rounds, pages and their jobs' history go with it: SQLite enforces no foreign key
    unless asked, so what PostgreSQL's ON DELETE CASCADE removes must be removed there too."""
    monitor = await storage.monitors.create(
        "o", spec(["http://a.test/"]), now=T0, redispatch_after=30
    )
    assert len(await storage.monitor_work.fire_due(now=T0, redispatch_after=30)) == 1
    [page] = monitor.pages
    async with storage.db.write() as conn:
        await conn.execute(
            job_runs.insert().values(job_id=page.job_id, run=1, status="COMPLETED", retry_count=0)
        )
    assert await storage.monitors.delete(monitor.id, owner="o")
    async with storage.db.read() as conn:
        left = {
            table.name: await conn.scalar(sa.select(sa.func.count()).select_from(table))
            for table in (monitor_pages, monitor_rounds, job_runs)
        }
    assert left == {"monitor_pages": 0, "monitor_rounds": 0, "job_runs": 0}


async def test_a_batch_of_monitors_watching_more_pages_than_a_statement_binds_fires(
    pg_url: str,
) -> None:
    """Monitors of a thousand URLs each, due at once: one batch fires more pages than a
    statement may bind values (32,767 for PostgreSQL's driver). It must fire them all, not
    fail, and with it every monitor due behind it, at every poll. PostgreSQL only: this
    SQLite binds 250,000 (the cost of the test, 33,000 jobs, is not spent twice)."""
    storage = Storage.on(open_database(pg_url, pool_size=2))
    try:
        count = 33
        made = [
            await storage.monitors.create(
                "o",
                spec([f"http://h{n}.test/{k}" for k in range(1000)]),
                now=T0,
                redispatch_after=30,
            )
            for n in range(count)
        ]
        fired = await storage.monitor_work.fire_due(now=T0, redispatch_after=30)
        assert sorted(slot.monitor_id for slot in fired) == sorted(m.id for m in made)
        assert sum(len(slot.job_ids) for slot in fired) == count * 1000
    finally:
        await storage.close()


async def test_monitors_are_listed_newest_first_by_cursor(storage: Storage) -> None:
    made = [
        await storage.monitors.create(
            "o", spec([f"http://a.test/{n}"]), now=T0 + timedelta(seconds=n), redispatch_after=30
        )
        for n in range(5)
    ]
    seen: list[UUID] = []
    cursor = None
    while True:
        page, cursor = await storage.monitors.list_monitors("o", limit=2, cursor=cursor)
        seen.extend(m.id for m in page)
        if cursor is None:
            break
    assert seen == [m.id for m in reversed(made)]
    with pytest.raises(ValueError, match="cursor"):
        await storage.monitors.list_monitors("o", cursor="bogus")


# --- rounds of real jobs against the changing site ------------------------------------------


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def site() -> Iterator[ChangingSiteServer]:
    server = start_changing_site(seed=25)
    try:
        yield server
    finally:
        server.close()


@dataclass
class Rig:
    storage: Storage
    queue: MemoryQueue
    worker: Worker
    scheduler: MonitorScheduler
    clock: Clock


@pytest.fixture
async def rig(storage: Storage) -> AsyncIterator[Rig]:
    settings = fetch_settings(allow_private_networks=True, max_retries=0)
    queue = MemoryQueue()
    fetcher = Fetcher(settings)
    parser = PageParser(processes=1)
    worker = Worker(bootstrap.worker_config(settings), storage.work, queue, fetcher, parser)
    clock = Clock(T0)
    scheduler = MonitorScheduler(
        MonitorConfig(retention=RetentionPolicy(keep_runs=None)),
        storage.monitor_work,
        queue,
        parser,
        clock=clock,
    )
    try:
        async with running_worker(worker):
            yield Rig(storage, queue, worker, scheduler, clock)
    finally:
        await fetcher.close()
        await parser.aclose()


async def wait_finished(storage: Storage, job_ids: list[UUID]) -> None:
    """Until every job is final: the fetches are real (a bound, not a timed assertion)."""
    for _ in range(2000):
        async with storage.db.read() as conn:
            statuses = set(
                (
                    await conn.execute(sa.select(jobs.c.status).where(jobs.c.id.in_(job_ids)))
                ).scalars()
            )
        if statuses <= {"COMPLETED", "FAILED"}:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"jobs still running: {statuses}")


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with webhook_receiver() as running:
        yield running


async def test_rounds_report_every_real_change_once_with_an_exact_diff(
    rig: Rig, site: ChangingSiteServer, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pages are loaded for reading a few at a time (a batch is bounded in bytes).
    monkeypatch.setattr(monitoring, "READ_GROUP_BYTES", 2000)
    rounds = 5
    paths = sorted(site.site.pages)
    monitor = await rig.storage.monitors.create(
        "o",
        spec(
            [site.url(path) for path in paths],
            ignore_selectors=list(NOISE_SELECTORS),
            callback_url=receiver.url("changes"),
        ),
        now=T0,
        redispatch_after=30,
    )
    job_of = {page.url: page.job_id for page in monitor.pages}
    edits = {}
    for k in range(rounds):
        rig.clock.now = T0 + timedelta(seconds=k * INTERVAL)
        if k:
            for path in site.site.changing_paths[k % 3 :: 3]:
                edits[k, path] = site.site.change(path)
        fired = await rig.scheduler.tick()
        assert [slot.slot_at for slot in fired] == [rig.clock.now]
        assert len(fired[0].job_ids) == len(paths)  # every page ran again: none was unread
        await wait_finished(rig.storage, list(job_of.values()))
    await rig.scheduler.read_runs()
    assert len(edits) == 3 * (rounds - 1)

    changes, cursor = await rig.storage.monitors.changes(monitor.id, owner="o", limit=500)
    assert cursor is None
    assert all(change.kind is ChangeKind.CHANGED for change in changes)
    reported = {(change.run, urlsplit(change.url).path): change for change in changes}
    assert len(reported) == len(changes)  # once each
    assert set(reported) == set(edits)  # every real change, and no noise
    for (run, path), change in reported.items():
        edit = edits[run, path]
        assert change.previous_run == run - 1
        assert change.diff is not None
        old = await rig.storage.monitors.run(job_of[site.url(path)], run - 1, owner="o")
        new = await rig.storage.monitors.run(job_of[site.url(path)], run, owner="o")
        assert old is not None and new is not None
        assert apply_patch(old[1].markdown, change.diff.markdown.text) == new[1].markdown
        changed = [row for row in change.diff.markdown.text.splitlines() if row[:1] in "+-"][2:]
        assert changed == [f"-{edit.old}", f"+{edit.new}"]

    # Each change is announced once, signed like every webhook, its body the change as listed.
    settings = Settings(allow_private_networks=True, webhook_secret="anon-secret")
    dispatcher = WebhookDispatcher(settings, rig.storage.webhooks)
    for _ in range(3):
        await dispatcher.dispatch_due()
    await dispatcher.close()
    got = receiver.for_name("changes")
    assert len(got) == len(changes)
    for hook in got:
        assert hook.headers["X-TaskCrawler-Event"] == "page.changed"
        assert verify_signature(
            "anon-secret",
            hook.body,
            hook.headers["X-TaskCrawler-Timestamp"],
            hook.headers["X-TaskCrawler-Signature"],
        )
    listed = {str(change.id): change_document(change) for change in changes}
    assert {hook["id"]: hook for hook in (json.loads(h.body) for h in got)} == listed

    # Pages with validators were downloaded once, and again only after each change.
    for path, page in site.site.pages.items():
        served = site.served_for(path)
        assert len(served) == rounds
        full = [s for s in served if s.status == 200]
        if page.kind in (PageKind.ETAG, PageKind.DATED):
            assert len(full) == 1 + sum(1 for _, edited in edits if edited == path), path
            assert all(s.conditional for s in served[1:])
        else:
            assert len(full) == rounds
    # A 304 run shares the run before it's content: readable, nothing stored twice.
    etag_job = job_of[site.url("/etag/0")]
    for run in range(rounds):
        stored = await rig.storage.monitors.run(etag_job, run, owner="o")
        assert stored is not None and stored[1].markdown


async def test_a_run_is_recorded_once_by_racing_schedulers(
    rig: Rig, site: ChangingSiteServer
) -> None:
    monitor = await rig.storage.monitors.create(
        "o",
        spec([site.url("/mixed/0")], ignore_selectors=list(NOISE_SELECTORS)),
        now=T0,
        redispatch_after=30,
    )
    job_ids = [page.job_id for page in monitor.pages]
    other = MonitorScheduler(
        MonitorConfig(), rig.storage.monitor_work, rig.queue, rig.scheduler.parser, clock=rig.clock
    )
    for k in range(3):
        rig.clock.now = T0 + timedelta(seconds=k * INTERVAL)
        if k:
            site.site.change("/mixed/0")
        await asyncio.gather(rig.scheduler.tick(), other.tick())
        await wait_finished(rig.storage, job_ids)
    read = await asyncio.gather(rig.scheduler.read_runs(), other.read_runs())
    assert rig.scheduler.stats.read + other.stats.read == 3
    assert sum(read) in (0, 1)
    changes, _ = await rig.storage.monitors.changes(monitor.id, owner="o")
    assert sorted(change.run for change in changes) == [1, 2]


async def test_a_failed_run_is_kept_but_compared_with_nothing(
    rig: Rig, site: ChangingSiteServer
) -> None:
    """A run that fails (the page gone for a round) reports nothing; the next good run is
    compared with the last good one, so a page that comes back unchanged is no change."""
    monitor = await rig.storage.monitors.create(
        "o", spec([site.url("/dated/1")]), now=T0, redispatch_after=30
    )
    job_ids = [page.job_id for page in monitor.pages]
    page = site.site.pages["/dated/1"]
    for k in range(4):
        rig.clock.now = T0 + timedelta(seconds=k * INTERVAL)
        if k == 1:
            site.site.remove_page("/dated/1")
        if k == 2:
            site.site.pages["/dated/1"] = page
        if k == 3:
            edit = site.site.change("/dated/1")
        await rig.scheduler.tick()
        await wait_finished(rig.storage, job_ids)
    await rig.scheduler.read_runs()
    failed = await rig.storage.monitors.run(job_ids[0], 1, owner="o")
    assert failed is not None and failed[0].status == "FAILED" and failed[1].markdown == ""
    [change] = (await rig.storage.monitors.changes(monitor.id, owner="o"))[0]
    assert (change.run, change.previous_run) == (3, 2)
    assert change.diff is not None and f"+{edit.new}" in change.diff.markdown.text


async def test_retention_keeps_the_newest_runs_and_what_they_read(storage: Storage) -> None:
    """Runs past the retention policy go, with their job history; a kept run whose content is
    an older run's keeps that run's blob readable."""
    policy = RetentionPolicy(keep_runs=2)
    monitor = await storage.monitors.create(
        "o", spec(["http://a.test/"]), now=T0, redispatch_after=30
    )
    [page] = monitor.pages
    bodies = [b"<p>one</p>", b"<p>two</p>", None, None]  # two 304s after the second
    for run, body in enumerate(bodies):
        async with storage.db.write() as conn:
            if run:  # what running the job again leaves of the run before (storage.jobs)
                await conn.execute(
                    job_runs.insert(),
                    [{"job_id": page.job_id, "run": run - 1, "status": "COMPLETED",
                      "retry_count": 0}],
                )  # fmt: skip
            await conn.execute(
                jobs.update()
                .where(jobs.c.id == page.job_id)
                .values(status="COMPLETED", run_count=run, unchanged=body is None)
            )
            await conn.execute(monitor_pages.update().values(awaiting_read=True))
            if body is not None:  # the page this run fetched, as the worker archives it
                await conn.execute(page_archive.delete())
                fetched = FetchedPage(page.url, page.url, 200, {}, "text/html", "utf-8", body)
                await conn.execute(page_archive.insert(), [_archive_row(page.job_id, fetched)])
        [unread] = await storage.monitor_work.claim_unread_runs()
        rig_parser = PageParser(processes=1)
        try:
            scheduler = MonitorScheduler(
                MonitorConfig(retention=policy), storage.monitor_work, MemoryQueue(), rig_parser
            )
            assert await scheduler._read([unread]) == 1
        finally:
            await rig_parser.aclose()
    kept = [run for run in range(4) if await storage.monitors.run(page.job_id, run, owner="o")]
    assert kept == [1, 2, 3]  # 2 and 3 read run 1's content, so run 1 stays
    # The job's own history of the dropped run goes too (GET /api/v1/jobs/{id}/runs).
    assert [run.run for run in await storage.jobs.runs(page.job_id, limit=100)] == [1, 2]
    newest = await storage.monitors.run(page.job_id, 3, owner="o")
    assert newest is not None and newest[1].markdown.strip() == "two"


async def test_a_run_started_by_hand_is_read_at_the_next_slot(
    rig: Rig, site: ChangingSiteServer
) -> None:
    monitor = await rig.storage.monitors.create(
        "o", spec([site.url("/mixed/1")], ignore_selectors=list(NOISE_SELECTORS)),
        now=T0, redispatch_after=30,
    )  # fmt: skip
    job_ids = [page.job_id for page in monitor.pages]
    await rig.scheduler.tick()
    await wait_finished(rig.storage, job_ids)
    assert await rig.scheduler.read_runs() == 1
    # POST /api/v1/jobs/{id}/retry on a monitor's job: a run the scheduler did not start.
    [again] = await rig.storage.jobs.restart(job_ids, owner="o", redispatch_after=30)
    await rig.queue.publish([again.id])
    await wait_finished(rig.storage, job_ids)
    assert await rig.scheduler.read_runs() == 0  # nothing marked it for reading
    rig.clock.now = T0 + timedelta(seconds=INTERVAL)
    [slot] = await rig.scheduler.tick()
    assert slot.job_ids == ()  # its last run is unread: it runs again once that is read
    assert await rig.scheduler.read_runs() == 1
    await wait_finished(rig.storage, job_ids)
    job = await rig.storage.jobs.get_job(job_ids[0], owner="o")
    assert job is not None and job.run_count == 2  # the slot's run, started by the reading
    assert await rig.scheduler.read_runs() == 1
    rig.clock.now = T0 + timedelta(seconds=2 * INTERVAL)
    [slot] = await rig.scheduler.tick()
    assert slot.job_ids == tuple(job_ids)


class CrashingOn(PageParser):
    """A parser whose process dies on one URL's page (a hostile page crashing its library)."""

    def __init__(self, url: str) -> None:
        super().__init__(processes=1)
        self.crash_url = url

    async def extract(self, body: bytes, **options: Any) -> Extraction:
        if options["url"] == self.crash_url:
            raise ParseCrashed("parsing killed its process: exit code -11")
        return await super().extract(body, **options)


async def test_a_page_that_crashes_its_parser_is_read_as_nothing(storage: Storage) -> None:
    """A page whose parse kills its process is recorded as a run that read nothing: it must
    not fail the batch it came in (the other pages' runs are read) nor come back forever."""
    monitor = await storage.monitors.create(
        "o", spec(["http://a.test/", "http://b.test/"]), now=T0, redispatch_after=30
    )
    async with storage.db.write() as conn:
        await conn.execute(jobs.update().values(status="COMPLETED", run_count=0))
        await conn.execute(monitor_pages.update().values(awaiting_read=True))
        for page in monitor.pages:
            fetched = FetchedPage(page.url, page.url, 200, {}, "text/html", "utf-8", b"<p>x</p>")
            await conn.execute(page_archive.insert(), [_archive_row(page.job_id, fetched)])
    parser = CrashingOn("http://a.test/")
    try:
        scheduler = MonitorScheduler(MonitorConfig(), storage.monitor_work, MemoryQueue(), parser)
        assert await scheduler.read_runs() == 2
    finally:
        await parser.aclose()
    job_of = {page.url: page.job_id for page in monitor.pages}
    crashed = await storage.monitors.run(job_of["http://a.test/"], 0, owner="o")
    parsed = await storage.monitors.run(job_of["http://b.test/"], 0, owner="o")
    assert crashed is not None and crashed[0].fingerprint is None
    assert parsed is not None and parsed[1].markdown.strip() == "x"
    assert await storage.monitor_work.claim_unread_runs() == []


async def test_reading_baselines_reads_only_their_blobs(storage: Storage) -> None:
    """Each baseline's blob, and no other run's: a batch's pages at different runs must not
    read every run of every page that any of them is at."""
    monitor = await storage.monitors.create(
        "o", spec(["http://a.test/", "http://b.test/"]), now=T0, redispatch_after=30
    )
    first, second = (page.job_id for page in monitor.pages)
    async with storage.db.write() as conn:
        await conn.execute(
            run_contents.insert(),
            [
                {"job_id": job_id, "run": run, "fetched_at": T0, "status": "COMPLETED",
                 "blob": RunContent(f"run {run}", "").encode()}
                for job_id in (first, second)
                for run in range(4)
            ],
        )  # fmt: skip
    wanted = {(first, 0), (second, 3)}
    async with storage.db.read() as conn:
        rows = (await conn.execute(monitor_work._blobs_of(wanted))).all()
    assert {(row.job_id, row.run) for row in rows} == wanted
    # A crawl monitor's round of small pages reads tens of thousands at once: more pairs than
    # one statement of PostgreSQL's takes (its stack depth limit, the driver's 32,767 values).
    many = {(uuid.uuid4(), 0) for _ in range(20_000)} | wanted
    async with storage.db.read() as conn:
        assert set(await monitor_work._blobs(conn, many)) == wanted
