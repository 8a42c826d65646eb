"""Durable crawls on each backend, against the generated site and its ground truth: the crawl
finds exactly the pages in scope (at their depth), fetches nothing disallowed or out of scope,
admits exactly ``limit`` pages, completes with counts that add up, and neither loses nor
duplicates a page when a worker dies, or when two workers find one URL at once."""

from __future__ import annotations

import asyncio
import inspect
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import pytest

from taskcrawler import bootstrap
from taskcrawler.domain import ClaimedJob, JobStatus
from taskcrawler.domain.crawls import Crawl, CrawlStatus, InvalidCrawlSpec
from taskcrawler.domain.errors import CrawlNotFound
from taskcrawler.domain.jobs import Job, JobQuery
from taskcrawler.domain.keys import Caller
from taskcrawler.domain.rendering import RenderRequest
from taskcrawler.domain.urls import crawl_key
from taskcrawler.fetch import Fetcher, MemoryHostLimiter
from taskcrawler.fetch.sitemaps import SitemapLimits
from taskcrawler.queue.memory import MemoryQueue
from taskcrawler.service.crawls import CrawlPolicy, CrawlService
from taskcrawler.settings import Settings
from taskcrawler.storage import Storage, open_storage
from taskcrawler.worker.crawling import CrawlPages
from taskcrawler.worker.worker import Worker
from tests.support.site import Site, SiteServer
from tests.support.transitions import lost_attempts

SITE_OPTIONS = {"seed": 11, "pages": 300, "crawl_delay": 0.01}
OWNER = Caller(owner="crawler")
#: How long a crawl of the small site may take at most on a loaded machine (not an assertion
#: on speed: a crawl that never ends fails here instead of hanging the suite).
PATIENCE_SECONDS = 120.0


def settings_for(database_url: str) -> Settings:
    return Settings(
        _env_file=None,
        database_url=database_url,
        allow_private_networks=True,
        respect_robots=True,
        max_retries=2,
        retry_base_seconds=0.05,
        retry_max_seconds=0.2,
        sweep_interval_seconds=0.1,
        redispatch_seconds=1.0,
        # Long enough that a worker busy on a loaded machine keeps its leases; the test of a
        # killed worker gives its victim a short one, so that they expire soon.
        lease_seconds=20.0,
        worker_concurrency=16,
        fetch_timeout_seconds=5.0,
        archive_pages=False,
        shutdown_grace_seconds=0.5,
    )


@dataclass
class Rig:
    """One database and queue, a crawl service over them, and workers started at will."""

    storage: Storage
    queue: MemoryQueue
    settings: Settings
    site: Site
    service: CrawlService
    workers: list[tuple[Worker, asyncio.Event, asyncio.Task[None], Fetcher]] = field(
        default_factory=list
    )

    def worker(self, **settings: Any) -> Worker:
        """A worker as the composition root builds one, fetching the generated site, with
        ``settings`` in place of the rig's."""
        own = self.settings.model_copy(update=settings)
        fetcher = Fetcher(own, resolver=self.site.resolver(), limiter=MemoryHostLimiter(16))
        worker_config = bootstrap.worker_config(own)
        worker = Worker(
            worker_config,
            self.storage.work,
            self.queue,
            fetcher,
            bootstrap.page_parser(own),
            crawls=CrawlPages(self.storage.crawls, fetcher, SitemapLimits()),
        )
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        self.workers.append((worker, stop, task, fetcher))
        return worker

    async def stop_workers(self) -> None:
        for worker, stop, task, fetcher in self.workers:
            stop.set()
            await task
            await fetcher.close()
            await worker.parser.aclose()
        self.workers.clear()

    async def start(self, **options: Any) -> Crawl:
        return await self.service.start(OWNER, self.service.spec(self.site.start_url, **options))

    async def finished(self, crawl_id: UUID) -> Crawl:
        """The crawl once it is no longer RUNNING."""
        return await self.watch(crawl_id, lambda crawl: crawl.status is not CrawlStatus.RUNNING)

    async def watch(self, crawl_id: UUID, done: Callable[[Crawl], bool]) -> Crawl:
        """The crawl once ``done`` says so; its counts add up at every look."""
        async with asyncio.timeout(PATIENCE_SECONDS):
            while True:
                crawl = await self.service.get(OWNER, crawl_id)
                assert_adds_up(crawl)
                if done(crawl):
                    return crawl
                await asyncio.sleep(0.02)

    async def pages(self, crawl_id: UUID, caller: Caller = OWNER, **query: Any) -> list[Job]:
        """Every page (job) of the crawl, through the cursor pages of its listing."""
        found: list[Job] = []
        cursor = None
        while True:
            page, cursor = await self.service.pages(
                caller, crawl_id, JobQuery(limit=97, cursor=cursor, **query)
            )
            found.extend(page)
            if cursor is None:
                return found


def assert_depths(pages: list[Job], shortest: dict[str, int]) -> None:
    """Pages fetched side by side may find a page by a longer path first: its depth is that
    path's, never less than the shortest; sitemap pages and the start's links are exact."""
    for job in pages:
        assert job.depth is not None and job.depth >= shortest[job.url], job.url
        if shortest[job.url] <= 1:
            assert job.depth == shortest[job.url], job.url


def assert_adds_up(crawl: Crawl) -> None:
    counts = crawl.counts
    assert counts.discovered == (
        counts.pending + counts.completed + counts.failed + counts.cancelled
    )
    assert 0 <= counts.processing <= counts.pending
    assert counts.discovered <= crawl.spec.limit


@asynccontextmanager
async def rig_on(database_url: str, site: Site) -> AsyncIterator[Rig]:
    settings = settings_for(database_url)
    storage = open_storage(database_url, pool_size=20)
    queue = MemoryQueue()
    service = CrawlService(
        CrawlPolicy(max_limit=10_000, redispatch_after=settings.redispatch_seconds),
        storage.crawls,
        storage.jobs,
        queue,
    )
    rig = Rig(storage, queue, settings, site, service)
    try:
        yield rig
    finally:
        await rig.stop_workers()
        await storage.close()


@pytest.fixture
async def rig(database_url: str, site: Site) -> AsyncIterator[Rig]:
    async with rig_on(database_url, site) as made:
        yield made


def fetched_pages(site_server: SiteServer) -> list[str]:
    """The page URLs the site served (robots.txt and sitemaps left out)."""
    return [url for url in site_server.fetched if not url.endswith(("/robots.txt", ".xml", ".gz"))]


# --- what a crawl finds -------------------------------------------------------------------------

CASES: list[dict[str, Any]] = [
    {},
    {"max_depth": 1},
    {"max_depth": 2, "sitemap": "skip"},
    {"max_depth": 3},
    {"sitemap": "skip"},
    {"sitemap": "only"},
    {"allow_subdomains": True, "include_paths": ["^/(docs|blog|sub)/", "^/$"]},
    {"exclude_paths": ["^/shop/", "7$"]},
]


@pytest.mark.parametrize("options", CASES, ids=repr)
async def test_a_crawl_finds_exactly_the_pages_in_scope(
    rig: Rig, site: Site, site_server: SiteServer, options: dict[str, Any]
) -> None:
    truth = site.expected_crawl(**options)
    rig.worker()
    crawl = await rig.start(**options)
    finished = await rig.finished(crawl.id)

    assert finished.status is CrawlStatus.COMPLETED
    assert finished.finished_at is not None
    pages = await rig.pages(crawl.id)
    assert len(pages) == len({job.url for job in pages})  # each URL once
    assert {job.url for job in pages} == set(truth.pages)  # found all, nothing else
    assert_depths(pages, truth.pages)
    by_status = Counter(job.status for job in pages)
    not_fetched = truth.disallowed | truth.failing
    assert {job.url for job in pages if job.status is JobStatus.FAILED} == not_fetched
    assert by_status[JobStatus.COMPLETED] == len(truth.pages) - len(not_fetched)
    counts = finished.counts
    assert (counts.discovered, counts.pending, counts.cancelled) == (len(truth.pages), 0, 0)
    assert (counts.completed, counts.failed) == (
        by_status[JobStatus.COMPLETED],
        by_status[JobStatus.FAILED],
    )
    # Nothing disallowed or out of scope was requested, and no page twice.
    fetched = fetched_pages(site_server)
    assert not any("/private/" in url for url in site_server.fetched)
    assert len(fetched) == len(set(fetched))
    assert {crawl_key(url) for url in fetched} == truth.fetchable


async def test_twins_are_one_page(rig: Rig, site: Site) -> None:
    """Links spelled with tracking parameters or fragments lead to one page each."""
    rig.worker()
    crawl = await rig.start(sitemap="skip")
    await rig.finished(crawl.id)
    urls = {job.url for job in await rig.pages(crawl.id)}
    assert not any("utm_" in url or "#" in url or "gclid" in url for url in urls)
    home = site.pages[site.start_url]
    twins = [link for link in home.links if link.href != link.target and "#top" not in link.href]
    assert twins and all(link.target in urls for link in twins)


async def test_the_limit_is_exact(rig: Rig) -> None:
    rig.worker()
    rig.worker()  # two workers racing to add pages: the limit holds all the same
    crawl = await rig.start(limit=37)
    finished = await rig.finished(crawl.id)
    assert finished.status is CrawlStatus.COMPLETED
    assert finished.counts.discovered == 37
    assert len(await rig.pages(crawl.id)) == 37


async def test_a_limit_of_one_crawls_the_start_page_only(
    rig: Rig, site: Site, site_server: SiteServer
) -> None:
    rig.worker()
    crawl = await rig.start(limit=1)
    finished = await rig.finished(crawl.id)
    assert finished.counts.completed == finished.counts.discovered == 1
    assert [crawl_key(url) for url in fetched_pages(site_server)] == [site.start_url]


async def test_jobs_are_listed_by_status_with_cursors(rig: Rig) -> None:
    rig.worker()
    crawl = await rig.start(max_depth=1)
    finished = await rig.finished(crawl.id)
    failed = await rig.pages(crawl.id, statuses=(JobStatus.FAILED,))
    completed = await rig.pages(crawl.id, statuses=(JobStatus.COMPLETED,))
    assert len(failed) == finished.counts.failed > 0
    assert len(completed) == finished.counts.completed > 97  # more than one cursor page
    assert all(job.crawl_id == crawl.id for job in failed + completed)


async def test_the_spec_is_checked_with_the_field_named(rig: Rig) -> None:
    with pytest.raises(InvalidCrawlSpec) as refused:
        rig.service.spec(rig.site.start_url, include_paths=["ok", "(a)\\1"])
    assert refused.value.field == "include_paths[1]"
    with pytest.raises(InvalidCrawlSpec) as refused:
        rig.service.spec(rig.site.start_url, limit=10_001)
    assert refused.value.field == "limit"
    with pytest.raises(InvalidCrawlSpec) as refused:
        rig.service.spec("ftp://site.test/")
    assert refused.value.field == "url"


# --- render --------------------------------------------------------------------------------------


async def test_every_page_renders_as_the_crawl_asks(rig: Rig) -> None:
    """render and render_options are copied onto the start page and every page found later
    (this worker has no browser: auto falls back to the fetched HTML, and says so)."""
    options = RenderRequest(wait_until="load", wait_for="main", block=("image",))
    rig.worker()
    crawl = await rig.start(max_depth=1, render="auto", render_options=options)
    finished = await rig.finished(crawl.id)
    assert (finished.spec.pages.render, finished.spec.pages.render_options) == ("auto", options)
    pages = await rig.pages(crawl.id)
    assert len(pages) == finished.counts.discovered > 1
    assert {(job.render, job.render_options) for job in pages} == {("auto", options)}
    completed = [job for job in pages if job.status is JobStatus.COMPLETED]
    assert completed
    assert all(job.result and job.result["render"]["mode"] == "auto" for job in completed)

    plain = await rig.start(limit=5)
    await rig.finished(plain.id)
    plain_pages = await rig.pages(plain.id)
    assert len(plain_pages) == 5
    assert {(job.render, job.render_options) for job in plain_pages} == {("never", None)}


async def test_a_screenshot_crawl_renders_always_and_never_is_refused(rig: Rig) -> None:
    spec = rig.service.spec(rig.site.start_url, formats=["screenshot"])
    assert spec.pages.render == "always"
    assert rig.service.spec(
        rig.site.start_url, formats=["screenshot"], render="auto"
    ).pages.render == ("auto")
    for bad in ({"render": "never", "formats": ["screenshot"]}, {"render": "sometimes"}):
        with pytest.raises(InvalidCrawlSpec) as refused:
            rig.service.spec(rig.site.start_url, **bad)
        assert refused.value.field == "render"


# --- cancel, tenants ----------------------------------------------------------------------------


async def test_a_cancelled_crawl_schedules_nothing_more(rig: Rig, site_server: SiteServer) -> None:
    crawl = await rig.start()
    rig.worker()
    await rig.watch(crawl.id, lambda crawl: crawl.counts.completed >= 5)
    cancelled = await rig.service.cancel(OWNER, crawl.id)
    assert cancelled.status is CrawlStatus.CANCELLED
    assert_adds_up(cancelled)
    await rig.stop_workers()  # pages being fetched finish: they add nothing
    after = await rig.service.get(OWNER, crawl.id)
    assert after.status is CrawlStatus.CANCELLED
    assert after.counts.pending == 0
    assert after.counts.discovered == cancelled.counts.discovered  # no page added since
    assert after.counts.cancelled > 0
    served = len(fetched_pages(site_server))
    rig.worker()  # a worker started now finds nothing of it to do
    await asyncio.sleep(0.5)
    assert len(fetched_pages(site_server)) == served
    again = await rig.service.cancel(OWNER, crawl.id)  # cancelling twice changes nothing
    assert again.counts == after.counts


async def test_another_tenants_crawl_is_not_found(rig: Rig) -> None:
    crawl = await rig.start(limit=3)
    other = Caller(owner="someone-else")
    for call in (
        lambda: rig.service.get(other, crawl.id),
        lambda: rig.service.cancel(other, crawl.id),
        lambda: rig.service.pages(other, crawl.id, JobQuery()),
    ):
        with pytest.raises(CrawlNotFound):
            await call()
    assert (await rig.service.list_crawls(other))[0] == []
    mine, _ = await rig.service.list_crawls(OWNER)
    assert [c.id for c in mine] == [crawl.id]
    assert (await rig.service.get(OWNER, crawl.id)).status is CrawlStatus.RUNNING


async def test_crawls_are_listed_newest_first_with_cursors(rig: Rig) -> None:
    started = [(await rig.start(limit=1)).id for _ in range(5)]
    first, cursor = await rig.service.list_crawls(OWNER, limit=3)
    assert cursor is not None
    rest, end = await rig.service.list_crawls(OWNER, limit=3, cursor=cursor)
    assert end is None
    assert [c.id for c in first + rest] == started[::-1]


# --- faults -------------------------------------------------------------------------------------


async def test_counts_add_up_while_running_and_a_killed_worker_loses_nothing(
    rig: Rig, site: Site, site_server: SiteServer
) -> None:
    """A worker's tasks cancelled mid-crawl, as a killed process leaves them (its leases are
    neither renewed nor handed back): the sweeper of a second worker recovers those pages, and
    the crawl ends with exactly the same page set, nothing fetched twice but those in flight."""
    truth = site.expected_crawl()
    victim = rig.worker(lease_seconds=3.0)
    crawl = await rig.start()
    await rig.watch(crawl.id, lambda crawl: crawl.counts.completed >= 20)
    in_flight = await kill(rig, victim)
    rig.worker()
    finished = await rig.finished(crawl.id)
    pages = await rig.pages(crawl.id)
    assert finished.status is CrawlStatus.COMPLETED
    assert {job.url for job in pages} == set(truth.pages)
    assert_depths(pages, truth.pages)
    fetched = Counter(crawl_key(url) for url in fetched_pages(site_server))
    assert set(fetched) == truth.fetchable
    twice = {url for url, count in fetched.items() if count > 1}
    assert twice <= in_flight


async def kill(rig: Rig, worker: Worker) -> set[str]:
    """Stop ``worker`` as a crash would: its jobs' tasks cancelled without handing the jobs
    back, so their leases simply expire. Returns the URLs of the jobs it lost."""
    entry = next(e for e in rig.workers if e[0] is worker)
    rig.workers.remove(entry)
    _, stop, task, fetcher = entry
    lost: set[str] = set()

    async def hand_nothing_back(job: ClaimedJob) -> None:
        lost.add(job.url)

    worker._hand_back = hand_nothing_back  # type: ignore[method-assign]
    # The crash lands while pages are being fetched: a busy machine can leave the worker
    # between two jobs at the moment the test decides to kill it. A job task not started yet
    # is cancelled before it runs a line, so it could never tell it was lost.
    async with asyncio.timeout(10):
        while not any(map(_started, worker._tasks)):  # noqa: ASYNC110
            await asyncio.sleep(0.001)
    for job_task in list(worker._tasks):
        job_task.cancel()
    # Then its loops end; a job claimed meanwhile is cancelled after the grace period, lost
    # the same way.
    stop.set()
    await task
    await fetcher.close()
    await worker.parser.aclose()
    assert lost
    return lost


def _started(task: asyncio.Task[None]) -> bool:
    """Whether ``task`` is inside its job: begun, and not ended. A task that has just ended is
    still in the worker's set until its done callback runs, and cancelling it does nothing."""
    if task.done():
        return False
    return inspect.getcoroutinestate(task.get_coro()) != inspect.CORO_CREATED  # type: ignore[arg-type]


async def test_two_workers_finding_one_url_create_one_page(rig: Rig, site: Site) -> None:
    """Many workers, one crawl: every URL is found by several pages at once, and each is one
    job all the same (the unique key, not a check-then-insert)."""
    truth = site.expected_crawl()
    for _ in range(3):
        rig.worker()
    crawl = await rig.start()
    finished = await rig.finished(crawl.id)
    pages = await rig.pages(crawl.id)
    assert len(pages) == len({job.url for job in pages}) == len(truth.pages)
    assert finished.counts.discovered == len(truth.pages)


async def test_the_sweeper_completes_a_crawl_whose_last_page_was_given_up(rig: Rig) -> None:
    """The last page failed by the sweeper (its worker lost too often) is written as any
    failed page is, and its crawl, with nothing left, completes in the same transaction."""
    crawl = await rig.start(limit=1)
    [start] = await rig.pages(crawl.id)
    work = rig.storage.work
    for _ in range(rig.settings.max_retries + 1):
        claimed = await work.claim([start.id], lease_seconds=0.01, redispatch_after=1)
        assert claimed
        await asyncio.sleep(0.05)
        await work.recover_expired_leases(lost_attempts(max_retries=rig.settings.max_retries))
        await work.take_due_dispatches(redispatch_after=1)
    page = await rig.storage.jobs.get_job(start.id, owner=OWNER.owner)
    assert page is not None and page.status is JobStatus.FAILED
    # Given up as every failed page is: its crawl, with nothing left, completes with it.
    assert (await rig.service.get(OWNER, crawl.id)).status is CrawlStatus.COMPLETED
    assert await work.complete_idle_crawls() == []


async def test_a_completed_crawl_announces_itself_once(rig: Rig) -> None:
    spec = rig.service.spec(rig.site.start_url, limit=5, callback_url="http://hooks.test/in")
    crawl = await rig.service.start(OWNER, spec)
    rig.worker()
    finished = await rig.finished(crawl.id)
    await rig.stop_workers()
    await rig.storage.work.complete_idle_crawls()  # the safety net announces nothing again
    start = min(await rig.pages(crawl.id), key=lambda job: (job.created_at, str(job.id)))
    deliveries = await rig.storage.webhooks.list_for_job(start.id, owner=OWNER.owner, limit=100)
    assert [d.event for d in deliveries] == ["crawl.completed"]
    [delivery] = deliveries
    assert delivery.url == "http://hooks.test/in"
    claimed = await rig.storage.webhooks.claim_due(
        limit=10, lease_seconds=10, default_secret="secret"
    )
    [payload] = [c.payload for c in claimed if c.event == "crawl.completed"]
    assert payload["id"] == str(crawl.id) and payload["status"] == "COMPLETED"
    assert payload["discovered"] == finished.counts.discovered == 5
    assert payload["completed"] + payload["failed"] == 5
