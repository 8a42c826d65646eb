"""A site's sitemaps, found and read through the :class:`Fetcher` (so the address guard,
robots.txt, politeness, deadlines and size limits apply to every one of them).

Where they come from: the ``Sitemap:`` lines of the site's robots.txt, and ``/sitemap.xml`` at
the site's origin. Sitemap indexes are followed, nested or not, gzipped or not. Everything about
it is capped (:class:`SitemapLimits`, from the ``TASKCRAWLER_SITEMAP_*`` settings): how many
sitemaps are fetched, how deep indexes nest, how many page URLs are kept, how many bytes one
sitemap and all of them may inflate to. An index that lists itself, or two that list each other,
are read once each. Reaching a cap is not an error: what was found so far is kept, and the cap is
named in :attr:`SitemapReport.capped`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field

from yarl import URL

from taskcrawler.domain import FetchError, InvalidURL, normalize_url
from taskcrawler.extract.sitemaps import ParsedSitemap, parse_sitemap
from taskcrawler.fetch.fetcher import Fetcher
from taskcrawler.settings import Settings

log = logging.getLogger(__name__)

#: Sitemaps fetched at once for one site (politeness still limits them per host).
CONCURRENCY = 4
#: Smaller bodies are parsed on the event loop; bigger ones in a thread, so a 50 MB sitemap
#: does not stall every other request of the process while it is read.
INLINE_PARSE_BYTES = 256 * 1024


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
) -> SitemapReport:
    """Find and read the sitemaps of the site of ``site_url``. Never raises a fetch error:
    failures are listed in the report."""
    report = report if report is not None else SitemapReport()
    seeds = await _seeds(fetcher, site_url, report)
    reader = _Reader(fetcher, limits, report, guessed=default_sitemap_url(site_url))
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
        self, fetcher: Fetcher, limits: SitemapLimits, report: SitemapReport, *, guessed: str
    ) -> None:
        self.fetcher = fetcher
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
            for (url, depth), parsed in zip(
                batch, await asyncio.gather(*(self._read(url) for url, _ in batch)), strict=True
            ):
                if parsed is not None:
                    self._take(url, depth, parsed)
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

    async def _read(self, url: str) -> ParsedSitemap | None:
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
            parsed = await _parse(page.body, page.final_url, max_bytes, wanted)
            self.report.bytes_read += parsed.size
        self.report.sitemaps.append(url)
        if parsed.error and not parsed.truncated:
            self.report.errors.append((url, parsed.error))
        if parsed.truncated:
            self.report.capped.add("bytes" if "bytes" in (parsed.error or "") else "urls")
        return parsed

    def _take(self, url: str, depth: int, parsed: ParsedSitemap) -> None:
        self.report.add_urls(parsed.urls, self.limits.max_urls)
        for child in parsed.sitemaps:
            if len(self.seen) >= self.limits.max_count:
                self.report.capped.add("count")
                break
            self._enqueue(child, depth + 1)


async def _parse(body: bytes, url: str, max_bytes: int, max_entries: int) -> ParsedSitemap:
    if len(body) <= INLINE_PARSE_BYTES and not body.startswith(b"\x1f\x8b"):
        return parse_sitemap(body, url=url, max_bytes=max_bytes, max_urls=max_entries)
    return await asyncio.to_thread(
        parse_sitemap, body, url=url, max_bytes=max_bytes, max_urls=max_entries
    )


__all__ = ["SitemapLimits", "SitemapReport", "default_sitemap_url", "read_sitemaps"]
