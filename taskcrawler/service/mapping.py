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
  returned, with a warning. Fetching and parsing may use three quarters of it
  (:data:`READING_SHARE`); the rest is left to key the sitemaps' URLs read by then.
* Nothing of it holds the event loop for more than a few milliseconds: parsing the start page,
  parsing big sitemaps and keying their URLs (tens of microseconds a URL) run in the
  service's :class:`~taskcrawler.common.processes.CallRunner` (the API's pool of parser
  processes: bounded in number, each call under a deadline), and the loop only merges their
  answers, a slice at a time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from taskcrawler.common.processes import CallRunner, CallTimeout, ChildDied, InThreads
from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.domain.crawls import (
    CrawlSpec,
    InvalidCrawlSpec,
    SitemapMode,
    matches_search,
)
from taskcrawler.domain.crawls.discovery import DEFAULT_MAP_LIMIT, MAX_SEARCH_CHARS
from taskcrawler.domain.errors import log_line
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.sitemaps import (
    SitemapLimits,
    SitemapReport,
    default_sitemap_url,
    key_sitemap_urls,
    read_sitemaps,
)
from taskcrawler.service.map_parsing import start_page_keys
from taskcrawler.settings import Settings

log = logging.getLogger(__name__)

MAX_WARNINGS = 20
#: The share of the map's deadline its fetches and parses may use; the rest is left to key
#: what they found, so that it is listed in time.
READING_SHARE = 0.75


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


class MapService:
    def __init__(
        self, fetcher: Fetcher, settings: Settings, runner: CallRunner | None = None
    ) -> None:
        self.fetcher = fetcher
        self.settings = settings
        self.limits = SitemapLimits.from_settings(settings)
        self.runner = runner or InThreads()

    def request(self, url: str, *, limit: int | None = None, **options: Any) -> MapRequest:
        """A validated :class:`MapRequest` under this deployment's maximum ``limit`` (no
        ``limit``: 5,000, or the maximum when that is lower)."""
        max_limit = self.settings.map_max_limit
        if limit is None:
            limit = min(DEFAULT_MAP_LIMIT, max_limit)
        return MapRequest.create(url, max_limit=max_limit, limit=limit, **options)

    async def map(self, request: MapRequest) -> MapResult:
        timeout = self.settings.map_timeout_seconds
        now = asyncio.get_running_loop().time()
        deadline = now + timeout
        spec = request.crawl_spec()
        words = request.search.lower().split() if request.search else []
        warnings: list[str] = []
        report = SitemapReport()
        tasks: dict[str, asyncio.Task[Any]] = {}
        if request.sitemap is not SitemapMode.ONLY:
            tasks["page"] = asyncio.create_task(self._start_page(request.url, spec, words))
        if request.sitemap is not SitemapMode.SKIP:
            tasks["sitemaps"] = asyncio.create_task(
                read_sitemaps(self.fetcher, request.url, self.limits, report, runner=self.runner)
            )
        reading_stopped = await self._wait(tasks, now + timeout * READING_SHARE)

        page = self._page_outcome(tasks.get("page"), warnings)
        self._refuse_blocked(request, tasks.get("page"), report)
        # The start page's keys first: a start page that could not be fetched is not listed
        # (the map says what the site has, and it did not answer for that one).
        links = dict.fromkeys((page or [])[: request.limit])
        stopped = not await self._add_sitemaps(request, report, words, links, deadline, warnings)
        if stopped or reading_stopped:
            warnings.append(f"stopped after {timeout:g} s: the list holds what was found by then")
        warnings.extend(_sitemap_warnings(report))
        return MapResult(links=list(links), warnings=warnings[:MAX_WARNINGS])

    async def _add_sitemaps(
        self,
        request: MapRequest,
        report: SitemapReport,
        words: Sequence[str],
        links: dict[str, None],
        deadline: float,
        warnings: list[str],
    ) -> bool:
        """The keys of the sitemaps' URLs into ``links``, up to the request's limit; whether
        that ended before the deadline."""

        def take(keys: list[str]) -> bool:
            links.update(dict.fromkeys(keys[: request.limit - len(links)]))
            return len(links) < request.limit

        if len(links) >= request.limit:
            return True
        try:
            async with asyncio.timeout_at(deadline):
                await key_sitemap_urls(
                    report.urls, request.crawl_spec(), self.runner, take, words=words
                )
        except TimeoutError:
            return False
        except (CallTimeout, ChildDied) as exc:
            warnings.append(f"the sitemaps' URLs were cut short: {exc}")
        return True

    async def _start_page(self, url: str, spec: CrawlSpec, words: Sequence[str]) -> list[str]:
        """The start page (as asked for and as redirected to), then its links, in scope, each
        once, with the words searched for: fetched here, parsed and keyed by the runner."""
        page = await self.fetcher.fetch(url)
        try:
            return await self.runner.run(
                start_page_keys,
                page.body,
                asked=url,
                final_url=page.final_url,
                charset=page.charset,
                spec=spec,
                words=words,
            )
        except (CallTimeout, ChildDied) as exc:
            raise FetchError(ErrorCode.PARSE_TIMEOUT, f"not parsed: {exc}") from None

    async def _wait(self, tasks: dict[str, asyncio.Task[Any]], deadline: float) -> bool:
        """Whether the deadline stopped them."""
        if not tasks:
            return False
        timeout = max(0.0, deadline - asyncio.get_running_loop().time())
        _done, pending = await asyncio.wait(tasks.values(), timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        return bool(pending)

    @staticmethod
    def _page_outcome(
        task: asyncio.Task[list[str]] | None, warnings: list[str]
    ) -> list[str] | None:
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
        request: MapRequest, task: asyncio.Task[list[str]] | None, report: SitemapReport
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
    "start_page_keys",
]
