"""What a crawl's page adds to its frontier, on the worker's side: the domain's rules applied to
the page's links, and failures that must neither lose the page nor invent a frontier."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any
from uuid import UUID

import pytest

from taskcrawler.domain import ClaimedJob, ErrorCode, Outcome, StorageUnavailable
from taskcrawler.domain.crawls import Crawl, CrawlCounts, CrawlSpec, CrawlStatus, SitemapMode
from taskcrawler.domain.pages import FetchedPage, Link
from taskcrawler.fetch.sitemaps import SitemapLimits
from taskcrawler.worker import crawling
from taskcrawler.worker.crawling import CrawlPages

START = "http://site.test/"
SKIP = SitemapMode.SKIP


class Specs:
    """A CrawlRepository that only knows specs (all a worker asks of it)."""

    def __init__(self, spec: CrawlSpec | None, error: Exception | None = None) -> None:
        self.spec = spec
        self.error = error
        self.reads = 0
        #: The pages the crawl has other than waiting.
        self.held: set[str] = set()

    async def spec_of(self, crawl_id: UUID) -> CrawlSpec | None:
        self.reads += 1
        if self.error is not None:
            raise self.error
        return self.spec

    async def holds(self, crawl_id: UUID, *, owner: str, url: str) -> bool:
        return url in self.held


def page(depth: int, *hrefs: str, **fields: Any) -> Outcome:
    job = ClaimedJob(uuid.uuid4(), f"{START}a", 0, uuid.uuid4(), crawl_id=uuid.uuid4(), depth=depth)
    links = tuple(Link(href, "", (), True, False) for href in hrefs)
    values: dict[str, Any] = {"http_status": 200, "final_url": job.url, "links": links}
    return Outcome(job=job, **(values | fields))


def pages(specs: Specs) -> CrawlPages:
    return CrawlPages(specs, None, SitemapLimits())  # type: ignore[arg-type]  # no sitemap read


async def test_links_in_scope_become_candidates_one_hop_deeper() -> None:
    spec = CrawlSpec(START, sitemap=SKIP, max_depth=3, exclude_paths=("^/no",))
    hrefs = [f"{START}b?utm_source=x", f"{START}b#top", f"{START}no/1", "http://o.test/"]
    outcome = page(1, *hrefs, f"{START}c")
    found = await pages(Specs(spec)).with_frontier(outcome)
    assert [(c.key, c.depth) for c in found.frontier] == [(f"{START}b", 2), (f"{START}c", 2)]
    assert found.links is None  # carried for discovery only


async def test_past_max_depth_nothing_is_added() -> None:
    spec = CrawlSpec(START, sitemap=SKIP, max_depth=1)
    found = await pages(Specs(spec)).with_frontier(page(1, f"{START}b"))
    assert found.frontier == ()


async def test_the_spec_is_read_once_per_crawl() -> None:
    specs = Specs(CrawlSpec(START, sitemap=SKIP))
    crawler = pages(specs)
    first = page(1, f"{START}b")
    await crawler.with_frontier(first)
    await crawler.with_frontier(first)
    assert specs.reads == 1


async def test_a_database_outage_puts_the_page_off_uncounted() -> None:
    outcome = page(1, f"{START}b")
    found = await pages(Specs(None, StorageUnavailable("down"))).with_frontier(outcome)
    assert found.error_code == ErrorCode.QUEUE_UNAVAILABLE and found.deferred
    assert found.frontier == ()


@pytest.mark.parametrize("bad", [ValueError("a bug"), KeyError("x")])
async def test_a_bug_keeps_the_page_without_a_frontier(bad: Exception) -> None:
    class Broken(Specs):
        async def spec_of(self, crawl_id: UUID) -> CrawlSpec | None:
            return CrawlSpec(START, sitemap=SKIP)

    crawler = pages(Broken(None))

    async def broken(*_: object) -> list[Any]:
        raise bad

    crawler._candidates = broken  # type: ignore[method-assign,assignment]
    outcome = page(1, f"{START}b")
    found = await crawler.with_frontier(outcome)
    assert found.succeeded and found.frontier == () and found.links is None


class Copies(Specs):
    """Specs, and one stored copy of every page (or a failure to read it)."""

    def __init__(self, spec: CrawlSpec, copy_error: Exception | None = None) -> None:
        super().__init__(spec)
        self.copy_error = copy_error
        self.asked: list[dict[str, Any]] = []

    async def reusable_page(self, crawl_id: UUID, **asked: Any) -> FetchedPage | None:
        self.asked.append(asked)
        if self.copy_error is not None:
            raise self.copy_error
        return FetchedPage(asked["url"], asked["url"], 200, {}, "text/html", "utf-8", b"<p>x</p>")


def claimed(**fields: Any) -> ClaimedJob:
    return ClaimedJob(
        uuid.uuid4(), f"{START}a", 0, uuid.uuid4(), crawl_id=uuid.uuid4(), owner="k", **fields
    )


async def test_a_copy_is_looked_up_only_with_max_age() -> None:
    without = Copies(CrawlSpec(START, sitemap=SKIP))
    assert await pages(without).reusable(claimed()) is None
    assert without.asked == []
    within = Copies(CrawlSpec.create(START, sitemap=SKIP, max_age=60))
    job = claimed(render="auto")
    copy = await pages(within).reusable(job)
    assert copy is not None and copy.body == b"<p>x</p>"
    assert within.asked == [
        {"owner": "k", "url": job.url, "max_age": 60.0, "render": "auto", "options": job.options}
    ]


async def test_a_screenshot_or_a_failed_lookup_means_a_fetch() -> None:
    spec = CrawlSpec.create(
        START, sitemap=SKIP, max_age=60, formats=["screenshot"], render="always"
    )
    shots = Copies(spec)
    assert await pages(shots).reusable(claimed(formats=("screenshot",))) is None
    assert shots.asked == []
    for error in (StorageUnavailable("down"), ValueError("a bug")):
        failing = Copies(CrawlSpec.create(START, sitemap=SKIP, max_age=60), error)
        assert await pages(failing).reusable(claimed()) is None
        assert len(failing.asked) == 1


@pytest.mark.parametrize(
    "final_url",
    ["http://elsewhere.test/b", "http://docs.site.test/b", f"{START}no/b"],
    ids=["external", "subdomain", "excluded"],
)
async def test_a_page_redirected_out_of_scope_is_not_kept(final_url: str) -> None:
    """A link in scope that redirects out of it: the page is another site's (or one the crawl
    excludes), so neither its content nor its links join the crawl."""
    spec = CrawlSpec(START, sitemap=SKIP, exclude_paths=("^/no",))
    outcome = page(1, f"{START}b", final_url=final_url, result={"markdown": "theirs"})
    found = await pages(Specs(spec)).with_frontier(outcome)
    assert (found.error_code, found.transient) == ("out_of_scope", False)
    assert found.result is None and found.content is None and found.frontier == ()
    assert found.final_url == final_url and final_url in (found.error_message or "")


async def test_a_redirect_within_scope_and_the_start_pages_are_kept() -> None:
    spec = CrawlSpec(START, sitemap=SKIP)
    inside = page(1, f"{START}b", final_url="http://www.site.test/a")
    assert (await pages(Specs(spec)).with_frontier(inside)).succeeded
    # The start page is what was asked for: wherever it leads, it is fetched and kept.
    job = ClaimedJob(uuid.uuid4(), START, 0, uuid.uuid4(), crawl_id=uuid.uuid4(), depth=0)
    start = Outcome(job=job, http_status=200, final_url="http://moved.test/", links=())
    assert (await pages(Specs(spec)).with_frontier(start)).succeeded


async def test_a_page_redirected_to_one_its_crawl_has_is_not_kept_twice() -> None:
    """/a redirects to /b, which the crawl has fetched (or is fetching): /a is /b's duplicate,
    neither its content nor its links kept; one redirected to a page not held is kept."""
    specs = Specs(CrawlSpec(START, sitemap=SKIP))
    specs.held.add(f"{START}b")
    crawler = pages(specs)
    redirected = page(1, f"{START}c", final_url=f"{START}b?utm_source=x", result={"m": "b"})
    found = await crawler.with_frontier(redirected)
    assert (found.error_code, found.transient) == ("duplicate", False)
    assert found.result is None and found.content is None and found.frontier == ()
    elsewhere = page(1, f"{START}c", final_url=f"{START}d")
    assert (await crawler.with_frontier(elsewhere)).succeeded


class StartedCrawl(Specs):
    """A crawl with ``pages`` pages so far, for a retry of its start page to ask."""

    def __init__(self, spec: CrawlSpec, pages: int) -> None:
        super().__init__(spec)
        self.pages = pages

    async def get(self, crawl_id: UUID, *, owner: str) -> Crawl:
        counts = CrawlCounts(pending=self.pages)
        return Crawl(crawl_id, owner, self.spec or CrawlSpec(START), CrawlStatus.RUNNING,
                     datetime.now(UTC), counts=counts)  # fmt: skip


@pytest.mark.parametrize(("pages_so_far", "reads"), [(40, 1), (1, 4)])
async def test_a_crawl_reads_its_sitemaps_once_whatever_its_start_page_retries(
    monkeypatch: pytest.MonkeyPatch, pages_so_far: int, reads: int
) -> None:
    """A start page tried four times (a transient failure each but the last) reads them on its
    first attempt; a retry again only when the crawl has nothing but its start page."""
    read: list[str] = []

    async def read_sitemaps(fetcher: Any, url: str, limits: Any, **_: Any) -> Any:
        read.append(url)
        return SimpleNamespace(errors=[], urls=[])

    async def key_sitemap_urls(*_: Any) -> None:
        return None

    monkeypatch.setattr(crawling, "read_sitemaps", read_sitemaps)
    monkeypatch.setattr(crawling, "key_sitemap_urls", key_sitemap_urls)
    crawler = pages(StartedCrawl(CrawlSpec(START), pages_so_far))
    crawl_id = uuid.uuid4()
    for retry in range(4):
        job = ClaimedJob(uuid.uuid4(), START, retry, uuid.uuid4(), crawl_id=crawl_id, depth=0)
        failed = retry < 3
        outcome = Outcome(job=job, http_status=503 if failed else 200, final_url=START, links=())
        await crawler.with_frontier(outcome)
    assert len(read) == reads
