"""Crawl monitors on both backends: each round is an ordinary crawl of a site whose pages
appear, disappear and change on command; the pages added, removed and changed between rounds
are reported once, with signed webhooks (a change with a diff that turns the last round's
Markdown into this round's, noise never), and a round fires (and starts its crawl) once with
two workers racing.

Time is a clock the test moves; only the crawls' fetches run for real, and the test waits for
them to end (a bound, not a timed assertion).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa
from aiohttp import web

from taskcrawler import bootstrap
from taskcrawler.domain.monitors import ChangeKind, MonitorSpec, change_document, read_crawl_round
from taskcrawler.domain.runs import RetentionPolicy
from taskcrawler.domain.webhooks import verify_signature
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.sitemaps import SitemapLimits
from taskcrawler.queue import MemoryQueue
from taskcrawler.settings import Settings
from taskcrawler.storage import Storage
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.tables import crawls, jobs, monitor_crawls
from taskcrawler.worker.crawling import CrawlPages
from taskcrawler.worker.monitoring import MonitorConfig, MonitorScheduler
from taskcrawler.worker.parsing import PageParser
from taskcrawler.worker.webhooks import WebhookDispatcher
from taskcrawler.worker.worker import Worker
from tests.support.changing_site import (
    NOISE_SELECTORS,
    ChangingSiteServer,
    Edit,
    PageKind,
    start_changing_site,
)
from tests.support.hostile import fetch_settings
from tests.support.patch import apply_patch
from tests.support.webhook_receiver import Receiver, webhook_receiver
from tests.support.workers import running_worker

INTERVAL = 60.0
T0 = datetime(2030, 1, 1, tzinfo=UTC)


def crawl_spec(start: str, **options: object) -> MonitorSpec:
    return MonitorSpec.create(
        interval_seconds=INTERVAL,
        crawl={"url": start, "limit": 200},
        min_interval_seconds=1,
        **options,
    )


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Rig:
    storage: Storage
    scheduler: MonitorScheduler
    clock: Clock


@pytest.fixture
async def storage(database_url: str) -> AsyncIterator[Storage]:
    store = Storage.on(open_database(database_url, pool_size=10))
    yield store
    await store.close()


@pytest.fixture
def site() -> Iterator[ChangingSiteServer]:
    server = start_changing_site(seed=21, per_kind=2)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with webhook_receiver() as running:
        yield running


@pytest.fixture
async def rig(storage: Storage) -> AsyncIterator[Rig]:
    settings = fetch_settings(allow_private_networks=True, max_retries=0)
    queue = MemoryQueue()
    fetcher = Fetcher(settings)
    parser = PageParser(processes=1)
    worker = Worker(
        bootstrap.worker_config(settings),
        storage.work,
        queue,
        fetcher,
        parser,
        crawls=CrawlPages(storage.crawls, fetcher, SitemapLimits()),
    )
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
            yield Rig(storage, scheduler, clock)
    finally:
        await fetcher.close()
        await parser.aclose()


async def wait_crawls_stopped(storage: Storage) -> None:
    """Until no round's crawl is running: the fetches are real (a bound, not an assertion)."""
    running = -1
    for _ in range(3000):
        async with storage.db.read() as conn:
            running = await conn.scalar(
                sa.select(sa.func.count())
                .select_from(monitor_crawls.join(crawls, crawls.c.id == monitor_crawls.c.crawl_id))
                .where(crawls.c.status == "RUNNING")
            )
        if running == 0:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"crawls still running: {running}")


async def test_rounds_report_pages_added_and_removed_once_with_signed_webhooks(
    rig: Rig, site: ChangingSiteServer, receiver: Receiver
) -> None:
    monitor = await rig.storage.monitors.create(
        "o",
        crawl_spec(
            site.url("/"), callback_url=receiver.url("site"), ignore_selectors=NOISE_SELECTORS
        ),
        now=T0,
        redispatch_after=30,
    )
    [first] = await rig.scheduler.tick()
    assert first.slot_at == T0 and len(first.job_ids) == 1  # the crawl's start page
    await wait_crawls_stopped(rig.storage)
    assert await rig.scheduler.read_crawl_rounds() == 1
    assert (await rig.storage.monitors.changes(monitor.id, owner="o"))[0] == []  # baseline

    gone = sorted(site.site.pages)[1]
    site.site.remove_page(gone)
    site.site.add_page("/new/arrival")
    rig.clock.now = T0 + timedelta(seconds=INTERVAL)
    [second] = await rig.scheduler.tick()
    assert second.slot_at == rig.clock.now and len(second.job_ids) == 1
    await wait_crawls_stopped(rig.storage)
    assert await rig.scheduler.read_crawl_rounds() == 1
    assert await rig.scheduler.read_crawl_rounds() == 0  # a round is read once

    changes, _ = await rig.storage.monitors.changes(monitor.id, owner="o")
    # The start page lists the pages: its list changed with them.
    assert sorted((c.kind, urlsplit(c.url).path) for c in changes) == [
        (ChangeKind.ADDED, "/new/arrival"),
        (ChangeKind.CHANGED, "/"),
        (ChangeKind.REMOVED, gone),
    ]

    # A third round with the site as it is now reports nothing more.
    rig.clock.now = T0 + timedelta(seconds=2 * INTERVAL)
    assert len(await rig.scheduler.tick()) == 1
    await wait_crawls_stopped(rig.storage)
    assert await rig.scheduler.read_crawl_rounds() == 1
    assert len((await rig.storage.monitors.changes(monitor.id, owner="o"))[0]) == 3

    settings = Settings(allow_private_networks=True, webhook_secret="anon-secret")
    dispatcher = WebhookDispatcher(settings, rig.storage.webhooks)
    for _ in range(3):
        await dispatcher.dispatch_due()
    await dispatcher.close()
    got = receiver.for_name("site")
    assert sorted(h.headers["X-TaskCrawler-Event"] for h in got) == [
        "page.added",
        "page.changed",
        "page.removed",
    ]
    for hook in got:
        assert verify_signature(
            "anon-secret",
            hook.body,
            hook.headers["X-TaskCrawler-Timestamp"],
            hook.headers["X-TaskCrawler-Signature"],
        )
    listed = {str(change.id): change_document(change) for change in changes}
    assert {hook["id"]: hook for hook in (json.loads(h.body) for h in got)} == listed


async def test_rounds_report_each_content_change_once_with_an_exact_diff(
    rig: Rig, site: ChangingSiteServer, receiver: Receiver
) -> None:
    """Pages both rounds found are compared with the last round's: every real change is
    reported once, in its round, with a diff from the last round's Markdown to this one's;
    noise (ignored elements, respelled text) never; pages added and removed as before."""
    monitor = await rig.storage.monitors.create(
        "o",
        crawl_spec(
            site.url("/"), callback_url=receiver.url("site"), ignore_selectors=NOISE_SELECTORS
        ),
        now=T0,
        redispatch_after=30,
    )
    rounds = 5
    edits: dict[tuple[int, str], Edit] = {}
    added: dict[int, str] = {}
    removed: dict[int, str] = {}
    for k in range(rounds):
        rig.clock.now = T0 + timedelta(seconds=k * INTERVAL)
        if k:
            for path in site.site.changing_paths[k % 3 :: 3]:
                edits[k, path] = site.site.change(path)
        if k == 2:  # a page comes and one goes: the start page's list changes with them
            site.site.add_page("/new/arrival")
            gone = next(p for p in sorted(site.site.pages) if (k, p) not in edits)
            site.site.remove_page(gone)
            added[k], removed[k] = "/new/arrival", gone
            edits[k, "/"] = Edit("/", "", "")
        if k == 3:  # the page added is compared from its second round on
            edits[k, "/new/arrival"] = site.site.change("/new/arrival")
        [slot] = await rig.scheduler.tick()
        assert slot.slot_at == rig.clock.now and len(slot.job_ids) == 1
        await wait_crawls_stopped(rig.storage)
        assert await rig.scheduler.read_crawl_rounds() == 1
    assert len([key for key in edits if key[1] != "/"]) >= 2 * (rounds - 1)

    changes, cursor = await rig.storage.monitors.changes(monitor.id, owner="o", limit=500)
    assert cursor is None
    round_of = {T0 + timedelta(seconds=k * INTERVAL): k for k in range(rounds)}
    found = {(c.kind, round_of[c.detected_at], urlsplit(c.url).path): c for c in changes}
    assert len(found) == len(changes)  # each once
    assert set(found) == {(ChangeKind.CHANGED, k, path) for k, path in edits} | {
        (ChangeKind.ADDED, k, path) for k, path in added.items()
    } | {(ChangeKind.REMOVED, k, path) for k, path in removed.items()}  # and no noise
    for (kind, k, path), change in found.items():
        if kind is not ChangeKind.CHANGED:
            assert change.diff is None and change.previous_job_id is None
            continue
        assert change.diff is not None and change.previous_job_id not in (None, change.job_id)
        assert change.previous_run is not None and change.run is not None
        old = await rig.storage.monitors.run(change.previous_job_id, change.previous_run, owner="o")
        new = await rig.storage.monitors.run(change.job_id, change.run, owner="o")
        assert old is not None and new is not None
        assert apply_patch(old[1].markdown, change.diff.markdown.text) == new[1].markdown
        if path != "/":
            edit = edits[k, path]
            rows = [row for row in change.diff.markdown.text.splitlines() if row[:1] in "+-"]
            assert rows[2:] == [f"-{edit.old}", f"+{edit.new}"]
    # Pages that only ever changed in noise are compared every round and never reported.
    noisy = [path for path, page in site.site.pages.items() if page.kind is PageKind.NOISY]
    assert noisy and not any(path in noisy for _, _, path in found)

    settings = Settings(allow_private_networks=True, webhook_secret="anon-secret")
    dispatcher = WebhookDispatcher(settings, rig.storage.webhooks)
    for _ in range(3):
        await dispatcher.dispatch_due()
    await dispatcher.close()
    got = receiver.for_name("site")
    events = sorted(h.headers["X-TaskCrawler-Event"] for h in got)
    assert events == sorted(f"page.{kind.value}" for kind, _, _ in found)
    listed = {str(change.id): change_document(change) for change in changes}
    assert {hook["id"]: hook for hook in (json.loads(h.body) for h in got)} == listed


async def test_a_round_is_recorded_once_when_its_lease_is_taken_over(
    rig: Rig, site: ChangingSiteServer
) -> None:
    """A reader whose lease expired (a worker too slow, or gone) is overtaken: the round is
    recorded by the one that took it over, and the first one's record writes nothing."""
    monitor = await rig.storage.monitors.create(
        "o",
        crawl_spec(site.url("/"), ignore_selectors=NOISE_SELECTORS),
        now=T0,
        redispatch_after=30,
    )
    await rig.scheduler.tick()
    await wait_crawls_stopped(rig.storage)
    assert await rig.scheduler.read_crawl_rounds() == 1
    edit = site.site.change(site.site.changing_paths[0])
    rig.clock.now = T0 + timedelta(seconds=INTERVAL)
    await rig.scheduler.tick()
    await wait_crawls_stopped(rig.storage)
    slow = await rig.storage.monitor_work.claim_crawl_rounds()
    assert len(slow) == 1 and await rig.storage.monitor_work.claim_crawl_rounds() == []  # leased
    async with rig.storage.db.write() as conn:  # the slow reader's lease runs out
        await conn.execute(
            monitor_crawls.update().values(reading_until=datetime.now(UTC) - timedelta(seconds=1))
        )
    assert await rig.scheduler.read_crawl_rounds() == 1  # taken over, and recorded
    stale = read_crawl_round(slow[0], now=rig.clock.now, new_id=uuid.uuid4)
    assert await rig.storage.monitor_work.record_crawl_round(stale, []) is False
    changes, _ = await rig.storage.monitors.changes(monitor.id, owner="o")
    assert [(c.kind, urlsplit(c.url).path) for c in changes] == [(ChangeKind.CHANGED, edit.path)]


async def test_a_round_cut_short_reports_no_removal(
    rig: Rig, site: ChangingSiteServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round whose crawl could not see the whole site (its start page failing) reports
    nothing gone, and the next whole round compares with the last pages known."""
    monitor = await rig.storage.monitors.create(
        "o",
        crawl_spec(site.url("/"), ignore_selectors=NOISE_SELECTORS),
        now=T0,
        redispatch_after=30,
    )
    await rig.scheduler.tick()
    await wait_crawls_stopped(rig.storage)
    await rig.scheduler.read_crawl_rounds()
    answer = site._answer

    def start_page_down(request: web.Request) -> web.Response:
        if request.path == "/":
            return web.Response(status=503, text="down")
        return answer(request)

    monkeypatch.setattr(site, "_answer", start_page_down)
    rig.clock.now = T0 + timedelta(seconds=INTERVAL)
    await rig.scheduler.tick()
    await wait_crawls_stopped(rig.storage)
    await rig.scheduler.read_crawl_rounds()
    assert (await rig.storage.monitors.changes(monitor.id, owner="o"))[0] == []
    monkeypatch.undo()
    removed = sorted(site.site.pages)[0]
    site.site.remove_page(removed)
    rig.clock.now = T0 + timedelta(seconds=2 * INTERVAL)
    await rig.scheduler.tick()
    await wait_crawls_stopped(rig.storage)
    await rig.scheduler.read_crawl_rounds()
    changes, _ = await rig.storage.monitors.changes(monitor.id, owner="o")
    assert sorted((c.kind, urlsplit(c.url).path) for c in changes) == [
        (ChangeKind.CHANGED, "/"),  # its list of pages
        (ChangeKind.REMOVED, removed),
    ]


async def test_a_round_fires_and_starts_its_crawl_once_with_two_workers(
    database_url: str,
) -> None:
    stores = [Storage.on(open_database(database_url, pool_size=5)) for _ in range(2)]
    try:
        monitor = await stores[0].monitors.create(
            "o", crawl_spec("http://site.test/"), now=T0, redispatch_after=30
        )
        fired = []
        for k in range(3):
            now = T0 + timedelta(seconds=k * INTERVAL + 1)
            for _ in range(2):
                results = await asyncio.gather(
                    *(s.monitor_work.fire_due(now=now, redispatch_after=30) for s in stores)
                )
                fired.extend(slot for batch in results for slot in batch)
        assert [slot.slot_at for slot in fired] == [
            T0 + timedelta(seconds=k * INTERVAL) for k in range(3)
        ]
        # The first round's crawl never ran here: the later slots fire, but sit it out.
        assert [len(slot.job_ids) for slot in fired] == [1, 0, 0]
        async with stores[0].db.read() as conn:
            linked = (
                await conn.execute(
                    sa.select(monitor_crawls.c.slot_at).where(
                        monitor_crawls.c.monitor_id == monitor.id
                    )
                )
            ).all()
            started = await conn.scalar(sa.select(sa.func.count()).select_from(crawls))
        assert [row.slot_at for row in linked] == [T0] and started == 1
        assert [slot for slot, _ in await stores[1].monitors.rounds(monitor.id)] == [
            slot.slot_at for slot in fired
        ]
        # Deleting the monitor stops its crawl still running.
        assert await stores[1].monitors.delete(monitor.id, owner="o")
        async with stores[0].db.read() as conn:
            status = await conn.scalar(sa.select(crawls.c.status))
            pending = await conn.scalar(
                sa.select(sa.func.count()).select_from(jobs).where(jobs.c.status == "PENDING")
            )
        assert (status, pending) == ("CANCELLED", 0)
    finally:
        for store in stores:
            await store.close()
