"""What a crawl's page adds to its frontier, on the worker's side: the domain's rules applied to
the page's links, and failures that must neither lose the page nor invent a frontier."""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

import pytest

from taskcrawler.domain import ClaimedJob, ErrorCode, Outcome, StorageUnavailable
from taskcrawler.domain.crawls import CrawlSpec, SitemapMode
from taskcrawler.domain.pages import FetchedPage, Link
from taskcrawler.fetch.sitemaps import SitemapLimits
from taskcrawler.worker.crawling import CrawlPages

START = "http://site.test/"
SKIP = SitemapMode.SKIP


class Specs:
    """A CrawlRepository that only knows specs (all a worker asks of it)."""

    def __init__(self, spec: CrawlSpec | None, error: Exception | None = None) -> None:
        self.spec = spec
        self.error = error
        self.reads = 0

    async def spec_of(self, crawl_id: UUID) -> CrawlSpec | None:
        self.reads += 1
        if self.error is not None:
            raise self.error
        return self.spec


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
