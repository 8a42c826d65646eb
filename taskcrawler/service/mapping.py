"""Map a site: its URLs from its sitemaps and the links of its start page, in seconds, without
scraping the pages. Talks to the fetcher and the extractor only; nothing is stored.

* Two sources, read at once: the start page (fetched and its links extracted) unless
  ``sitemap`` is ``only``, and the site's sitemaps (robots.txt ``Sitemap:`` lines and
  ``/sitemap.xml``, nested and gzipped, capped by the ``TASKCRAWLER_SITEMAP_*`` settings)
  unless it is ``skip``.
* The same scope as a crawl (:class:`~taskcrawler.domain.crawls.Scope`): the start's host by
  default, subdomains on request, path patterns; links marked nofollow are left out, the start
  page's canonical URL is kept. Every URL is given as its crawl key (:func:`crawl_key`):
  tracking parameters and fragments gone, so twins appear once.
* robots.txt is obeyed for what map fetches (the start page and the sitemaps); the URLs it
  lists are not checked against robots.txt, they are what the site says it has.
* ``search`` keeps the URLs that contain every one of its words (case-insensitive, in the
  percent-decoded URL). ``limit`` cuts the list after filtering.
* The whole call answers within ``TASKCRAWLER_MAP_TIMEOUT_SECONDS``: what was found by then is
  returned, with a warning.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.domain.crawls import (
    CrawlSpec,
    InvalidCrawlSpec,
    Scope,
    SitemapMode,
    Verdict,
    discover,
    sitemap_candidates,
)
from taskcrawler.domain.errors import log_line
from taskcrawler.domain.urls import crawl_key
from taskcrawler.extract import Link, extract
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.sitemaps import (
    SitemapLimits,
    SitemapReport,
    default_sitemap_url,
    read_sitemaps,
)
from taskcrawler.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_MAP_LIMIT = 5_000
MAX_SEARCH_CHARS = 500
MAX_WARNINGS = 20


class MapRefused(Exception):
    """The start URL cannot be mapped at all (its address is refused by the guard)."""

    def __init__(self, code: str, message: str) -> None:
        # Its text is the error's log line (code, message, and how to allow the address).
        super().__init__(message if message.startswith(f"{code}: ") else log_line(code, message))
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class MapRequest:
    url: str
    limit: int = DEFAULT_MAP_LIMIT
    sitemap: SitemapMode = SitemapMode.INCLUDE
    search: str | None = None
    allow_subdomains: bool = False
    include_paths: tuple[str, ...] = ()
    exclude_paths: tuple[str, ...] = ()

    @classmethod
    def create(
        cls,
        url: str,
        *,
        max_limit: int,
        limit: int = DEFAULT_MAP_LIMIT,
        sitemap: SitemapMode | str = SitemapMode.INCLUDE,
        search: str | None = None,
        allow_subdomains: bool = False,
        include_paths: Sequence[str] = (),
        exclude_paths: Sequence[str] = (),
    ) -> MapRequest:
        """A validated request; :class:`InvalidCrawlSpec` names the first bad field (the
        checks are a crawl's, so the messages are the same)."""
        spec = CrawlSpec.create(
            url,
            max_limit=max_limit,
            limit=limit,
            sitemap=sitemap,
            include_paths=include_paths,
            exclude_paths=exclude_paths,
            allow_subdomains=allow_subdomains,
        )
        if search is not None and len(search) > MAX_SEARCH_CHARS:
            raise InvalidCrawlSpec("search", f"at most {MAX_SEARCH_CHARS} characters")
        return cls(
            url=spec.url,
            limit=spec.limit,
            sitemap=spec.sitemap,
            search=search.strip() or None if search is not None else None,
            allow_subdomains=spec.allow_subdomains,
            include_paths=spec.include_paths,
            exclude_paths=spec.exclude_paths,
        )

    def crawl_spec(self) -> CrawlSpec:
        """The crawl of the start page's links alone: one hop, this request's scope."""
        return CrawlSpec(
            url=self.url,
            max_depth=1,
            include_paths=self.include_paths,
            exclude_paths=self.exclude_paths,
            allow_subdomains=self.allow_subdomains,
            sitemap=self.sitemap,
        )


@dataclass(slots=True)
class MapResult:
    links: list[str]
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _StartPage:
    links: list[Link]
    canonical: str | None
    final_url: str


def matches_search(url: str, words: Sequence[str]) -> bool:
    """Every word (lower case) is in the percent-decoded, lower-cased URL."""
    text = unquote(url).lower()
    return all(word in text for word in words)


class MapService:
    def __init__(self, fetcher: Fetcher, settings: Settings) -> None:
        self.fetcher = fetcher
        self.settings = settings
        self.limits = SitemapLimits.from_settings(settings)

    def request(self, url: str, *, limit: int | None = None, **options: Any) -> MapRequest:
        """A validated :class:`MapRequest` under this deployment's maximum ``limit`` (no
        ``limit``: 5,000, or the maximum when that is lower)."""
        max_limit = self.settings.map_max_limit
        if limit is None:
            limit = min(DEFAULT_MAP_LIMIT, max_limit)
        return MapRequest.create(url, max_limit=max_limit, limit=limit, **options)

    async def map(self, request: MapRequest) -> MapResult:
        spec = request.crawl_spec()
        scope = Scope.of(spec)
        warnings: list[str] = []
        report = SitemapReport()
        tasks: dict[str, asyncio.Task[Any]] = {}
        if request.sitemap is not SitemapMode.ONLY:
            tasks["page"] = asyncio.create_task(self._start_page(request.url))
        if request.sitemap is not SitemapMode.SKIP:
            tasks["sitemaps"] = asyncio.create_task(
                read_sitemaps(self.fetcher, request.url, self.limits, report)
            )
        await self._wait(tasks, warnings)

        page = self._page_outcome(tasks.get("page"), warnings)
        self._refuse_blocked(request, tasks.get("page"), report)
        keys = self._collect(request, spec, scope, page, report)
        warnings.extend(_sitemap_warnings(report))
        words = request.search.lower().split() if request.search else []
        links = [key for key in keys if matches_search(key, words)] if words else keys
        return MapResult(links=links[: request.limit], warnings=warnings[:MAX_WARNINGS])

    async def _wait(self, tasks: dict[str, asyncio.Task[Any]], warnings: list[str]) -> None:
        if not tasks:
            return
        timeout = self.settings.map_timeout_seconds
        _done, pending = await asyncio.wait(tasks.values(), timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
            warnings.append(f"stopped after {timeout:g} s: the list holds what was found by then")

    @staticmethod
    def _page_outcome(
        task: asyncio.Task[_StartPage] | None, warnings: list[str]
    ) -> _StartPage | None:
        if task is None or task.cancelled():
            return None
        error = task.exception()
        if error is None:
            return task.result()
        if isinstance(error, FetchError):
            warnings.append(f"start page: {error.log_line}")
            return None
        raise error

    @staticmethod
    def _refuse_blocked(
        request: MapRequest, task: asyncio.Task[_StartPage] | None, report: SitemapReport
    ) -> None:
        """A start URL whose address the guard refuses is refused as a whole (422), rather
        than answered with an empty list: nothing can ever be fetched from it."""
        errors: list[BaseException | str | None] = []
        if task is not None and task.done() and not task.cancelled():
            errors.append(task.exception())
        guessed = default_sitemap_url(request.url)
        errors.extend(error for url, error in report.errors if url in (guessed, request.url))
        for error in errors:
            if isinstance(error, FetchError) and error.code == ErrorCode.BLOCKED_ADDRESS:
                raise MapRefused(error.code, error.message)
            if isinstance(error, str) and ErrorCode.BLOCKED_ADDRESS in error:
                # A log line, maybe behind where it was met ("robots.txt: blocked_address: …").
                found = error[error.index(ErrorCode.BLOCKED_ADDRESS) :]
                raise MapRefused(ErrorCode.BLOCKED_ADDRESS, found)

    @staticmethod
    def _collect(
        request: MapRequest,
        spec: CrawlSpec,
        scope: Scope,
        page: _StartPage | None,
        report: SitemapReport,
    ) -> list[str]:
        """The start page (as asked for and as redirected to), then its links, then the
        sitemaps' URLs: in scope, each once. A start page that could not be fetched is not
        listed: the map says what the site has, and it did not answer for that one."""
        ordered: dict[str, None] = {}
        if page is not None:
            for own in (crawl_key(request.url), crawl_key(page.final_url)):
                if scope.check_key(own) is Verdict.IN_SCOPE:
                    ordered.setdefault(own, None)
            found = discover(page.final_url, page.links, page.canonical, 0, spec, scope)
            for candidate in found.candidates:
                ordered.setdefault(candidate.key, None)
        candidates, _rejected = sitemap_candidates(report.urls, spec, scope)
        for candidate in candidates:
            ordered.setdefault(candidate.key, None)
        return list(ordered)

    async def _start_page(self, url: str) -> _StartPage:
        fetched = await self.fetcher.fetch(url)
        extraction = await asyncio.to_thread(
            extract,
            fetched.body,
            url=fetched.final_url,
            charset=fetched.charset,
            formats=("links",),
        )
        canonical = extraction.metadata.get("canonical_url")
        return _StartPage(
            links=extraction.links,
            canonical=canonical if isinstance(canonical, str) else None,
            final_url=fetched.final_url,
        )


async def map_once(fetcher: Fetcher, settings: Settings, url: str, **options: Any) -> MapResult:
    """One map in the foreground (``taskcrawler map``) with ``fetcher``, closed afterwards."""
    try:
        service = MapService(fetcher, settings)
        return await service.map(service.request(url, **options))
    finally:
        await fetcher.close()


def _sitemap_warnings(report: SitemapReport) -> list[str]:
    warnings = [f"sitemap {url}: {error}" for url, error in report.errors]
    warnings.extend(
        f"sitemaps: the {cap} cap was reached, the rest was not read"
        for cap in sorted(report.capped)
    )
    return warnings


__all__ = [
    "DEFAULT_MAP_LIMIT",
    "MapRefused",
    "MapRequest",
    "MapResult",
    "MapService",
    "map_once",
    "matches_search",
]
