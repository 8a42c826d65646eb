"""A site's sitemaps, found and read through the :class:`Fetcher` (so the address guard,
robots.txt, politeness, deadlines and size limits apply to every one of them).

Where they come from: the ``Sitemap:`` lines of the site's robots.txt, and ``/sitemap.xml`` at
the site's origin. Sitemap indexes are followed, nested or not, gzipped or not. Everything about
it is capped (:class:`SitemapLimits`, from the ``TASKCRAWLER_SITEMAP_*`` settings): how many
sitemaps are fetched, how deep indexes nest, how many page URLs are kept, how many bytes one
sitemap and all of them may inflate to. An index that lists itself, or two that list each other,
are read once each. Reaching a cap is not an error: what was found so far is kept, and the cap is
named in :attr:`SitemapReport.capped`.

Nothing here holds the event loop for long: a sitemap bigger than a few hundred kilobytes is
parsed by the caller's :class:`~taskcrawler.common.processes.CallRunner` (a pool of processes
in the API and the worker, each parse under its deadline), the URLs it lists are taken in
slices, and :func:`key_sitemap_urls` turns them into crawl keys slice by slice in that runner.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from yarl import URL

from taskcrawler.common.processes import CallRunner, CallTimeout, ChildDied, InThreads
from taskcrawler.domain import FetchError, InvalidURL, normalize_url
from taskcrawler.domain.crawls import CrawlSpec, sitemap_keys
from taskcrawler.extract.sitemaps import (
    ParsedSitemap,
    packed_slices,
    parse_sitemap,
    parse_sitemap_packed,
)
from taskcrawler.fetch.fetcher import Fetcher
from taskcrawler.settings import Settings

log = logging.getLogger(__name__)

#: Sitemaps fetched at once for one site (politeness still limits them per host).
CONCURRENCY = 4
#: Smaller bodies are parsed on the event loop (a few milliseconds); bigger ones by the runner,
#: so a 50 MB sitemap does not stall every other request of the process while it is read.
INLINE_PARSE_BYTES = 256 * 1024
#: URLs handled per step on the event loop, and keyed per call in the runner: sending a slice
#: and its keys back costs the loop about a millisecond, keying it in a process about 0.2 s.
URL_SLICE = 5_000
#: Characters of a parsed sitemap's URLs split into a list and taken per step on the event
#: loop (about 3,000 URLs, a millisecond or two).
PACKED_SLICE_CHARS = 128 * 1024


@dataclass(frozen=True, slots=True)
class SitemapLimits:
    max_count: int = 100
    max_depth: int = 3
    max_urls: int = 100_000
    max_bytes: int = 50 * 1024 * 1024
    max_total_bytes: int = 200 * 1024 * 1024

    @classmethod
    def from_settings(cls, settings: Settings) -> SitemapLimits:
        return cls(
            max_count=settings.sitemap_max_count,
            max_depth=settings.sitemap_max_depth,
            max_urls=settings.sitemap_max_urls,
            max_bytes=settings.sitemap_max_bytes,
            max_total_bytes=settings.sitemap_max_total_bytes,
        )


@dataclass(slots=True)
class SitemapReport:
    """What reading a site's sitemaps found; filled in as it goes, so a caller that stops
    waiting (a deadline) still has everything found until then.

    ``urls``: page URLs, in the order found, without repeats. ``sitemaps``: the sitemaps read.
    ``errors``: ``(sitemap URL, error)`` for those that could not be read (a missing
    ``/sitemap.xml`` is not one). ``capped``: the caps reached (``count``, ``depth``, ``urls``,
    ``bytes``).
    """

    urls: list[str] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    capped: set[str] = field(default_factory=set)
    bytes_read: int = 0
    _seen_urls: set[str] = field(default_factory=set, repr=False)

    async def add_all(self, parsed: ParsedSitemap, packed: str, max_urls: int) -> None:
        """The URLs of a sitemap, as :func:`parse_sitemap` lists them or as
        :func:`parse_sitemap_packed` packs them, a slice at a time, letting the event loop run
        between slices."""
        slices = itertools.chain(
            (
                parsed.urls[start : start + URL_SLICE]
                for start in range(0, len(parsed.urls), URL_SLICE)
            ),
            packed_slices(packed, PACKED_SLICE_CHARS),
        )
        for urls in slices:
            self.add_urls(urls, max_urls)
            if len(self.urls) >= max_urls:
                return
            await asyncio.sleep(0)

    def add_urls(self, urls: list[str], max_urls: int) -> None:
        for url in urls:
            if len(self.urls) >= max_urls:
                self.capped.add("urls")
                return
            if url not in self._seen_urls:
                self._seen_urls.add(url)
                self.urls.append(url)


def _sitemap_key(url: str) -> str:
    try:
        return normalize_url(url)
    except InvalidURL:
        return url


def default_sitemap_url(site_url: str) -> str:
    return str(URL(site_url).with_path("/sitemap.xml").with_query(None).with_fragment(None))


async def read_sitemaps(
    fetcher: Fetcher,
    site_url: str,
    limits: SitemapLimits,
    report: SitemapReport | None = None,
    *,
    runner: CallRunner | None = None,
) -> SitemapReport:
    """Find and read the sitemaps of the site of ``site_url``, big ones parsed by ``runner``
    (default: in a thread). Never raises a fetch error: failures are listed in the report."""
    report = report if report is not None else SitemapReport()
    seeds = await _seeds(fetcher, site_url, report)
    reader = _Reader(fetcher, limits, report, guessed=default_sitemap_url(site_url), runner=runner)
    await reader.run(seeds)
    return report


async def _seeds(fetcher: Fetcher, site_url: str, report: SitemapReport) -> list[str]:
    try:
        listed = await fetcher.robots_sitemaps(site_url)
    except FetchError as exc:
        report.errors.append((site_url, f"robots.txt: {exc.log_line}"))
        listed = []
    guessed = default_sitemap_url(site_url)
    keys = {_sitemap_key(url) for url in listed}
    return [*listed, guessed] if _sitemap_key(guessed) not in keys else listed


class _Reader:
    def __init__(
        self,
        fetcher: Fetcher,
        limits: SitemapLimits,
        report: SitemapReport,
        *,
        guessed: str,
        runner: CallRunner | None = None,
    ) -> None:
        self.fetcher = fetcher
        self.runner = runner or InThreads()
        self.limits = limits
        self.report = report
        self.guessed = guessed
        self.queue: deque[tuple[str, int]] = deque()
        self.seen: set[str] = set()
        self.started = 0
        # Fetches overlap, parsing does not: each parse then knows exactly how many bytes the
        # others left of the total, and parsing is CPU-bound, so running two at once would not
        # be faster anyway.
        self.parsing = asyncio.Lock()

    async def run(self, seeds: list[str]) -> None:
        for url in seeds:
            self._enqueue(url, 0)
        while self.queue and not self._done():
            batch: list[tuple[str, int]] = []
            while self.queue and len(batch) < CONCURRENCY and self.started < self.limits.max_count:
                batch.append(self.queue.popleft())
                self.started += 1
            if not batch:
                break
            for (_url, depth), parsed in zip(
                batch, await asyncio.gather(*(self._read(url) for url, _ in batch)), strict=True
            ):
                if parsed is not None:
                    await self._take(depth, *parsed)
        if self.queue and self.started >= self.limits.max_count:
            self.report.capped.add("count")

    def _done(self) -> bool:
        report = self.report
        if len(report.urls) >= self.limits.max_urls:
            report.capped.add("urls")
            return True
        if report.bytes_read >= self.limits.max_total_bytes:
            report.capped.add("bytes")
            return True
        return False

    def _enqueue(self, url: str, depth: int) -> None:
        key = _sitemap_key(url)
        if key in self.seen:
            return  # an index that lists itself, or a loop between indexes
        if depth > self.limits.max_depth:
            self.report.capped.add("depth")
            return
        self.seen.add(key)
        self.queue.append((url, depth))

    async def _read(self, url: str) -> tuple[ParsedSitemap, str] | None:
        try:
            page = await self.fetcher.fetch_sitemap(url)
        except FetchError as exc:
            if not (url == self.guessed and exc.http_status in (404, 410)):
                self.report.errors.append((url, exc.log_line))
            return None
        async with self.parsing:
            budget = self.limits.max_total_bytes - self.report.bytes_read
            if budget <= 0:
                self.report.capped.add("bytes")
                return None
            # An index's children count against the same cap as page URLs while parsing; both
            # are trimmed to what is still wanted afterwards.
            wanted = max(self.limits.max_urls - len(self.report.urls), self.limits.max_count, 1)
            max_bytes = min(self.limits.max_bytes, budget)
            parsed, packed = await self._parse(page.body, page.final_url, max_bytes, wanted)
            self.report.bytes_read += parsed.size
        self.report.sitemaps.append(url)
        if parsed.error and not parsed.truncated:
            self.report.errors.append((url, parsed.error))
        if parsed.truncated:
            self.report.capped.add("bytes" if "bytes" in (parsed.error or "") else "urls")
        return parsed, packed

    async def _parse(
        self, body: bytes, url: str, max_bytes: int, max_entries: int
    ) -> tuple[ParsedSitemap, str]:
        """The sitemap, and its URLs packed when another process parsed it."""
        if len(body) <= INLINE_PARSE_BYTES and not body.startswith(b"\x1f\x8b"):
            return parse_sitemap(body, url=url, max_bytes=max_bytes, max_urls=max_entries), ""
        try:
            return await self.runner.run(
                parse_sitemap_packed, body, url=url, max_bytes=max_bytes, max_urls=max_entries
            )
        except (CallTimeout, ChildDied) as exc:
            return ParsedSitemap(error=f"not parsed: {exc}"), ""

    async def _take(self, depth: int, parsed: ParsedSitemap, packed: str) -> None:
        await self.report.add_all(parsed, packed, self.limits.max_urls)
        for child in parsed.sitemaps:
            if len(self.seen) >= self.limits.max_count:
                self.report.capped.add("count")
                break
            self._enqueue(child, depth + 1)


async def key_sitemap_urls(
    urls: Sequence[str],
    spec: CrawlSpec,
    runner: CallRunner,
    take: Callable[[list[str]], bool],
    *,
    words: Sequence[str] = (),
) -> None:
    """The crawl keys of ``urls`` in ``spec``'s scope that contain every one of ``words``
    (:func:`~taskcrawler.domain.crawls.sitemap_keys`), a slice at a time in ``runner`` (as many
    slices at once as it runs calls), given to ``take`` in the order of ``urls``. ``take``
    answers whether it wants more: when it does not, the slices still running are dropped."""
    slices = [urls[start : start + URL_SLICE] for start in range(0, len(urls), URL_SLICE)]
    running: deque[asyncio.Task[list[str]]] = deque()
    try:
        for part in slices:
            running.append(asyncio.create_task(runner.run(sitemap_keys, part, spec, words)))
            if len(running) >= runner.size and not take(await running.popleft()):
                return
        while running:
            if not take(await running.popleft()):
                return
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


__all__ = [
    "SitemapLimits",
    "SitemapReport",
    "default_sitemap_url",
    "key_sitemap_urls",
    "read_sitemaps",
]
