"""The worker's side of crawls: what a crawl's page adds to its frontier, and publishing the
pages that the outcome's transaction added.

The rules are the domain's (:func:`taskcrawler.domain.crawls.discover`, scope, depth, sitemap
candidates); here they meet I/O: the crawl's spec read once per crawl (a small bounded cache), and
the sitemaps read by the start page's job. Storage writes the frontier with the page's outcome,
in one transaction (see :mod:`taskcrawler.storage.crawls`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Sequence
from uuid import UUID

from taskcrawler.common.processes import CallRunner, CallTimeout, ChildDied, InThreads
from taskcrawler.domain import (
    ClaimedJob,
    ErrorCode,
    Outcome,
    QueueUnavailable,
    ServiceUnavailable,
)
from taskcrawler.domain.crawls import (
    Candidate,
    CrawlSpec,
    Scope,
    SitemapMode,
    Verdict,
    discover,
)
from taskcrawler.domain.errors import InvalidURL
from taskcrawler.domain.pages import FetchedPage
from taskcrawler.domain.urls import crawl_key
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.sitemaps import SitemapLimits, key_sitemap_urls, read_sitemaps
from taskcrawler.queue import JobQueue
from taskcrawler.storage.ports import CrawlRepository, WorkRepository

log = logging.getLogger(__name__)

#: Crawls whose spec a worker keeps at hand; one more costs one read of the crawl's row.
SPEC_CACHE_SIZE = 256


class CrawlPages:
    """Turns a crawl page's outcome into one that carries its frontier."""

    def __init__(
        self,
        crawls: CrawlRepository,
        fetcher: Fetcher,
        sitemap_limits: SitemapLimits,
        parsers: CallRunner | None = None,
    ) -> None:
        self.crawls = crawls
        self.fetcher = fetcher
        self.sitemap_limits = sitemap_limits
        #: Where big sitemaps are parsed and their URLs keyed (the worker's parser processes).
        self.parsers = parsers or InThreads()
        self._specs: OrderedDict[UUID, tuple[CrawlSpec, Scope] | None] = OrderedDict()

    async def _spec(self, crawl_id: UUID) -> tuple[CrawlSpec, Scope] | None:
        if crawl_id in self._specs:
            self._specs.move_to_end(crawl_id)
            return self._specs[crawl_id]
        spec = await self.crawls.spec_of(crawl_id)
        found = None if spec is None else (spec, Scope.of(spec))
        self._specs[crawl_id] = found
        while len(self._specs) > SPEC_CACHE_SIZE:
            self._specs.popitem(last=False)
        return found

    async def reusable(self, job: ClaimedJob) -> FetchedPage | None:
        """The stored copy of a page to read instead of fetching it: when its crawl has a
        ``max_age`` and the tenant scraped the page more recently. A screenshot needs a
        browser, so a page that wants one is always fetched; so is any page whose copy cannot
        be looked up right now (fetching is what would happen without ``max_age``)."""
        if job.crawl_id is None or "screenshot" in job.formats:
            return None
        try:
            found = await self._spec(job.crawl_id)
            if found is None or found[0].pages.max_age is None:
                return None
            return await self.crawls.reusable_page(
                job.crawl_id,
                owner=job.owner,
                url=job.url,
                max_age=found[0].pages.max_age,
                render=job.render,
                options=job.options,
            )
        except ServiceUnavailable as exc:
            log.warning("crawl %s: no stored copy of %s looked up: %s", job.crawl_id, job.url, exc)
        except Exception:
            log.exception("crawl %s: no stored copy of %s read", job.crawl_id, job.url)
        return None

    async def with_frontier(self, outcome: Outcome) -> Outcome:
        """``outcome`` with the candidates its page adds to its crawl (and without the links
        it carried for them). The start page also reads the site's sitemaps, unless the crawl
        skips them; an attempt put off (the host was busy) adds nothing, it runs again."""
        job = outcome.job
        if job.crawl_id is None:
            return outcome
        try:
            found = await self._spec(job.crawl_id)
            if found is None or outcome.deferred:
                return dataclasses.replace(outcome, links=None)
            escaped = _redirected_out_of_scope(outcome, *found) or await self._held_twice(outcome)
            if escaped is not None:
                return escaped
            candidates = await self._candidates(outcome, *found)
        except ServiceUnavailable as exc:
            # Its frontier cannot be known now: the page runs again later, no attempt counted.
            return Outcome(
                job=job,
                error_code=ErrorCode.QUEUE_UNAVAILABLE,
                error_message=f"the crawl's frontier could not be read: {exc}",
                transient=True,
            )
        except Exception:
            # A bug must not fail the page: it is saved with what it has, and the crawl goes on
            # with the rest of its frontier.
            log.exception("crawl %s: the frontier of %s could not be read", job.crawl_id, job.url)
            candidates = []
        return dataclasses.replace(outcome, links=None, frontier=tuple(candidates))

    async def _candidates(self, outcome: Outcome, spec: CrawlSpec, scope: Scope) -> list[Candidate]:
        job = outcome.job
        candidates: list[Candidate] = []
        if outcome.succeeded and outcome.links is not None and spec.sitemap is not SitemapMode.ONLY:
            canonical = (outcome.result or {}).get("metadata", {}).get("canonical_url")
            discovery = discover(
                outcome.final_url or job.url,
                outcome.links,
                canonical if isinstance(canonical, str) else None,
                job.depth,
                spec,
                scope,
            )
            candidates.extend(discovery.candidates)
        if (
            _is_start(job.url, job.depth, spec)
            and spec.sitemap is not SitemapMode.SKIP
            and await self._sitemaps_unread(job)
        ):
            report = await read_sitemaps(
                self.fetcher, spec.url, self.sitemap_limits, runner=self.parsers
            )
            for url, error in report.errors:
                log.info("crawl %s: sitemap %s: %s", job.crawl_id, url, error)

            seen = {candidate.key for candidate in candidates}

            def take(keys: list[str]) -> bool:
                fresh = [key for key in keys if key not in seen]
                seen.update(fresh)
                candidates.extend(Candidate(key, 1) for key in fresh)
                return True

            try:
                await key_sitemap_urls(report.urls, spec, self.parsers, take)
            except (CallTimeout, ChildDied) as exc:
                log.warning("crawl %s: its sitemaps' URLs were cut short: %s", job.crawl_id, exc)
        return candidates

    async def _held_twice(self, outcome: Outcome) -> Outcome | None:
        """The failure of a page whose redirects led to a page its crawl has already (fetched,
        being fetched): the crawl holds each page once, so neither its content nor its links
        are kept. A page redirected to one still waiting is kept, and that one is not fetched
        (storage settles it with the outcome). None for any other."""
        job, final_url = outcome.job, outcome.final_url
        if not outcome.succeeded or not final_url or final_url == job.url or not job.crawl_id:
            return None
        try:
            key = crawl_key(final_url)
        except InvalidURL:
            return None
        if key == job.url or not await self.crawls.holds(job.crawl_id, owner=job.owner, url=key):
            return None
        return _refused(
            outcome, ErrorCode.DUPLICATE, f"redirected to {final_url}, which the crawl already has"
        )

    async def _sitemaps_unread(self, job: ClaimedJob) -> bool:
        """Whether the start page's attempt reads the sitemaps: its first does, and its
        frontier is written with its outcome, a retry's included. A retry reads them again only
        if its crawl has nothing but the start page (that first write was lost: its worker
        died), not up to four times a crawl."""
        if job.retry_count == 0 or job.crawl_id is None:
            return True
        crawl = await self.crawls.get(job.crawl_id, owner=job.owner)
        return crawl is not None and crawl.counts.discovered <= 1


def _redirected_out_of_scope(outcome: Outcome, spec: CrawlSpec, scope: Scope) -> Outcome | None:
    """The failure of a page (not the start page, which is what was asked for) whose
    redirects led out of the crawl's scope: another site's page, or one its paths exclude, is
    not the crawl's, so neither its content nor its links are kept. None for any other."""
    job, final_url = outcome.job, outcome.final_url
    if not outcome.succeeded or not final_url or final_url == job.url:
        return None
    if _is_start(job.url, job.depth, spec):
        return None
    verdict = scope.check(final_url)
    if verdict is Verdict.IN_SCOPE:
        return None
    return _refused(
        outcome,
        ErrorCode.OUT_OF_SCOPE,
        f"redirected to {final_url}, out of the crawl's scope ({verdict.value})",
    )


def _refused(fetched: Outcome, code: ErrorCode, message: str) -> Outcome:
    """``fetched`` (a page its redirects took somewhere the crawl does not keep) as a failure
    of ``code``: its status and final URL stay, its content and links go."""
    return Outcome(
        job=fetched.job,
        http_status=fetched.http_status,
        final_url=fetched.final_url,
        error_code=code,
        error_message=message,
        finished_at=fetched.finished_at,
    )


def _is_start(url: str, depth: int, spec: CrawlSpec) -> bool:
    return depth == 0 and url == crawl_key(spec.url)


async def publish_pages(queue: JobQueue, store: WorkRepository, ids: Sequence[UUID]) -> None:
    """Publish the pages a write added; if the queue is down, the sweeper publishes them."""
    if not ids:
        return
    try:
        await queue.publish(ids)
    except QueueUnavailable as exc:
        log.warning("could not publish %d new crawl pages: %s", len(ids), exc)
        # If the database is down too, they are due anyway once their redispatch delay passed.
        with contextlib.suppress(ServiceUnavailable):
            await store.mark_dispatch_due(ids)


__all__ = ["CrawlPages", "publish_pages"]
