"""The fetcher: one long-lived aiohttp session per process, behind the address guard and limits.

Every URL TaskCrawler fetches was named by a stranger, so every fetch is bounded: a total deadline
(slow-drip bodies included), a body limit counted after decompression, a redirect limit with loop
detection, a content-type allowlist checked before the body is read, and header size limits. Every
failure becomes a :class:`FetchError` with a stable code; the worker decides on retries from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import aiohttp
from aiohttp.abc import AbstractResolver
from aiohttp.http_exceptions import ContentEncodingError
from protego import Protego
from yarl import URL

from taskcrawler.domain import ErrorCode, FetchError, InvalidURL
from taskcrawler.domain.pages import FetchedPage
from taskcrawler.domain.scrape_options import DEFAULT_OPTIONS, ScrapeOptions
from taskcrawler.domain.urls import request_target, shares_credentials
from taskcrawler.fetch.guard import (
    AddressGuard,
    BlockedSocketError,
)
from taskcrawler.fetch.limits import (
    check_content_type,
    check_declared_length,
    parse_retry_after,
    read_limited,
)
from taskcrawler.fetch.politeness import HostBusyError, HostLimiter, host_key
from taskcrawler.fetch.robots import (
    ROBOTS_MAX_REDIRECTS,
    RobotsBody,
    RobotsCache,
    read_robots_response,
    sitemaps_of,
)
from taskcrawler.fetch.session import guarded_session
from taskcrawler.settings import Settings

if TYPE_CHECKING:
    from redis.asyncio import Redis

_T = TypeVar("_T")

#: The host whose politeness slot the caller of this fetch already holds (the worker takes it
#: before it claims the job): requests to that host in this context, robots.txt's included,
#: go out in that slot instead of taking another, which a host allowing one could never give.
_HELD_HOST: ContextVar[str | None] = ContextVar("held_host", default=None)

ALLOWED_CONTENT_TYPES = frozenset(
    {"text/html", "application/xhtml+xml", "text/plain", "application/xml", "text/xml"}
)
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Resolved (and vetted) addresses are reused this long; vetting happens before caching, so the
# cache cannot hold an address the guard refused.
DNS_CACHE_SECONDS = 60
ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,text/plain;q=0.8,*/*;q=0.1"
#: Sitemaps are XML or text, often gzipped files served as such (``.xml.gz``); only the sitemap
#: fetch accepts these, so a page job still refuses a gzip download or an octet stream.
SITEMAP_CONTENT_TYPES = frozenset(
    {
        "application/xml",
        "text/xml",
        "text/plain",
        "application/gzip",
        "application/x-gzip",
        "application/octet-stream",
    }
)
SITEMAP_ACCEPT = "application/xml,text/xml;q=0.9,application/gzip;q=0.8,text/plain;q=0.7"


#: Documents a page job reads when its options ask for them (PDFs, by default).
DOCUMENT_CONTENT_TYPES = frozenset({"application/pdf"})


@dataclass(frozen=True, slots=True)
class _Kind:
    """What one kind of fetch accepts: content types, body size, the Accept header; and what
    the request asks of it (:class:`ScrapeOptions`)."""

    content_types: frozenset[str]
    max_bytes: int
    accept: str | None = None  # None: the session's default (pages)
    options: ScrapeOptions = DEFAULT_OPTIONS


class Fetcher:
    """Fetches one URL at a time with a shared session; raises :class:`FetchError` on failure.

    Everything is optional and has a production default:

    * ``guard``: the settings' policy (on unless ``allow_private_networks``). ``resolver``: the
      DNS resolver the guard wraps (aiohttp's default; tests inject a fake one). A ``session``
      passed in is used as it is, so its connector should carry a :class:`GuardedResolver`;
      URL hosts and redirect hops are vetted either way.
    * ``limiter``: politeness per host (see :func:`make_host_limiter`); none when ``None``.
      ``host_wait_seconds`` bounds the wait for a slot (``host_busy``, transient, after it);
      by default the wait is bounded only by the fetch deadline.
    * ``redis``: shares the robots.txt cache between processes, under ``redis_prefix``.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        session: aiohttp.ClientSession | None = None,
        guard: AddressGuard | None = None,
        resolver: AbstractResolver | None = None,
        limiter: HostLimiter | None = None,
        host_wait_seconds: float | None = None,
        redis: Redis | None = None,
        redis_prefix: str = "taskcrawler",
    ) -> None:
        self.settings = settings
        self.guard = guard or AddressGuard(enabled=not settings.allow_private_networks)
        self.limiter = limiter
        self.robots: RobotsCache | None = None
        if settings.respect_robots:
            self.robots = RobotsCache(
                self._fetch_robots,
                user_agent=settings.user_agent,
                ttl_seconds=settings.robots_cache_seconds,
                redis=redis,
                redis_prefix=redis_prefix,
            )
        self._host_wait = host_wait_seconds
        self._resolver = resolver
        self._session = session
        self._owns_session = session is None

    # --- session -------------------------------------------------------------------------

    def _session_or_new(self) -> aiohttp.ClientSession:
        # Created lazily because aiohttp needs a running loop; one per Fetcher, never per fetch.
        if self._session is None:
            self._session = self._new_session()
        return self._session

    def _new_session(self) -> aiohttp.ClientSession:
        return guarded_session(
            self.guard,
            limit=self.settings.worker_concurrency,
            connect_timeout=self.settings.connect_timeout_seconds,
            headers={"User-Agent": self.settings.user_agent, "Accept": ACCEPT},
            resolver=self._resolver,
            ttl_dns_cache=DNS_CACHE_SECONDS,
        )

    async def close(self) -> None:
        if self.limiter is not None:
            await self.limiter.close()
        if self._owns_session and self._session is not None:
            await self._session.close()
            self._session = None

    # --- fetching ------------------------------------------------------------------------

    async def fetch(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        options: ScrapeOptions = DEFAULT_OPTIONS,
        group: str | None = None,
        held_host: str | None = None,
    ) -> FetchedPage:
        """Fetch ``url``, following redirects; ``headers`` are extra request headers (for example
        ``If-None-Match`` for a conditional re-fetch, which then returns a 304 page).
        ``held_host``: a host whose politeness slot the caller holds (and hands back itself).

        ``options``: the request's own headers go to ``url``'s origin only (or its upgrade to
        https), never to another origin a redirect leads to; ``Accept-Language`` from its
        languages; its certificate is not verified when it says so (every address is still
        vetted); PDFs are accepted when they are read; ``delay`` spaces the requests to the
        host; ``max_concurrency`` bounds the fetches of ``group`` (a crawl's pages) under way
        at once, across every worker sharing the politeness limiter."""
        types = ALLOWED_CONTENT_TYPES
        if options.parse_pdf:
            types = types | DOCUMENT_CONTENT_TYPES
        kind = _Kind(types, self.settings.max_body_bytes, options=options)
        if language := options.accept_language():
            headers = {**(headers or {}), "Accept-Language": language}
        held = _HELD_HOST.set(held_host) if held_host is not None else None
        try:
            if group is None or options.max_concurrency is None or self.limiter is None:
                return await self._fetch_kind(url, headers, kind)
            # Waiting past the deadline for the group's own slot is no failure of the page:
            # it is host_busy, rescheduled without counting an attempt.
            slot = self.limiter.slot(
                group,
                max_wait=self.settings.fetch_timeout_seconds,
                concurrency=options.max_concurrency,
            )
            async with slot:
                return await self._fetch_kind(url, headers, kind)
        finally:
            if held is not None:
                _HELD_HOST.reset(held)

    def robots_known(self, url: str) -> tuple[bool, float | None]:
        """Whether this process knows the robots.txt rules of ``url``'s origin now (or obeys
        none), and the Crawl-delay they set, capped: what spaces the host's requests."""
        if self.robots is None:
            return True, None
        try:
            known, delay = self.robots.known(_parse_url(url))
        except FetchError:
            return True, None  # a URL no fetch can use fails without asking anyone
        return known, self._capped_crawl_delay(delay)

    async def fetch_sitemap(self, url: str) -> FetchedPage:
        """Fetch a sitemap: like a page (guard, robots.txt, politeness, deadline, redirects),
        but XML, text or gzip files are accepted, up to ``sitemap_max_bytes``. The body is
        returned as sent (a ``.xml.gz`` stays gzip); ``taskcrawler.extract.sitemaps`` reads it."""
        kind = _Kind(SITEMAP_CONTENT_TYPES, self.settings.sitemap_max_bytes, SITEMAP_ACCEPT)
        return await self._fetch_kind(url, None, kind)

    async def robots_sitemaps(self, url: str) -> list[str]:
        """The ``Sitemap:`` lines of the robots.txt of ``url``'s origin, absolute; none when it
        has no robots.txt. Read through the robots cache when robots.txt is obeyed, else
        fetched for the purpose (through the same guard and limits)."""
        target = _parse_url(url)
        if self.robots is not None:
            return await self.robots.sitemaps(target)
        body = await self._fetch_robots(target.with_path("/robots.txt").with_query(None))
        return sitemaps_of(Protego.parse(body.text) if body.text.strip() else None, target)

    async def _fetch_kind(
        self, url: str, headers: Mapping[str, str] | None, kind: _Kind
    ) -> FetchedPage:
        target = _parse_url(url)

        async def read(resp: aiohttp.ClientResponse) -> FetchedPage:
            return await self._read_page(url, resp, kind)

        if kind.accept is not None:
            headers = {**(headers or {}), "Accept": kind.accept}
        hops = _Hops(
            self.settings.max_redirects, obey_robots=self.robots is not None, options=kind.options
        )
        return await self._bounded(self._follow(target, headers, read, hops), hops)

    async def _fetch_robots(self, url: URL) -> RobotsBody:
        """robots.txt through the same guard, session, limits and politeness as a page."""
        hops = _Hops(ROBOTS_MAX_REDIRECTS, obey_robots=False)
        return await self._bounded(self._follow(url, None, read_robots_response, hops), hops)

    async def _bounded(self, work: Awaitable[_T], hops: _Hops) -> _T:
        """Run ``work`` under the total deadline and turn every failure into a FetchError."""
        deadline = self.settings.fetch_timeout_seconds
        try:
            async with asyncio.timeout(deadline):
                return await work
        except FetchError:
            raise
        except TimeoutError:
            if hops.waiting_for_host is not None:
                # Our own politeness made us wait, not the site: say so, so it is rescheduled.
                raise HostBusyError(hops.waiting_for_host, deadline, 1.0) from None
            raise FetchError(
                ErrorCode.TIMEOUT, f"the fetch did not finish within {deadline:g} s"
            ) from None
        except aiohttp.ClientError as exc:
            raise client_error(exc) from exc

    async def _follow(
        self,
        target: URL,
        headers: Mapping[str, str] | None,
        read: Callable[[aiohttp.ClientResponse], Awaitable[_T]],
        hops: _Hops,
    ) -> _T:
        """Request ``target`` and follow redirects ourselves: each hop is vetted (guard, robots),
        counted, and checked for a loop (aiohttp's own following cannot tell a loop from a
        long chain, and would not ask robots.txt about the next hop)."""
        page = target
        options = hops.options
        while True:
            self.guard.check_host(target.raw_host)
            delay = options.delay
            if hops.obey_robots and self.robots is not None:
                # Before taking a politeness slot: the robots fetch takes one of its own.
                robots_delay = self._capped_crawl_delay(await self.robots.check(target))
                delay = _larger(delay, robots_delay)
            host = target.raw_host or ""
            hops.waiting_for_host = host
            sent = headers
            if options.headers and shares_credentials(page, target):
                sent = {**(headers or {}), **options.header_map()}
            async with self._slot(host, delay):  # held until the body is read
                hops.waiting_for_host = None
                session = self._session_or_new()
                async with session.get(
                    target,
                    allow_redirects=False,
                    headers=sent,
                    # Not verifying a certificate is asked per request; the connection still
                    # goes to an address the guard vetted (resolver and socket factory).
                    ssl=not options.skip_tls_verification,
                ) as resp:
                    next_target = _redirect_target(resp)
                    if next_target is None:
                        return await read(resp)
            hops.add(target, next_target)
            target = next_target

    def _capped_crawl_delay(self, delay: float | None) -> float | None:
        """robots.txt's Crawl-delay, but never more than the deployment allows: a site must
        not be able to park a worker's fetches for hours."""
        if delay is None:
            return None
        return min(delay, self.settings.max_crawl_delay_seconds)

    def _slot(self, host: str, delay: float | None = None) -> AbstractAsyncContextManager[None]:
        """One politeness slot for ``host`` (or none, without a limiter); ``delay`` is the
        host's own gap between requests, when robots.txt sets one."""
        if self.limiter is None or (_HELD_HOST.get() == host_key(host) and host):
            return _NO_SLOT
        if delay is None:
            return self.limiter.slot(host, max_wait=self._host_wait)
        return self.limiter.slot(host, max_wait=self._host_wait, delay=delay)

    async def _read_page(self, url: str, resp: aiohttp.ClientResponse, kind: _Kind) -> FetchedPage:
        _check_status(resp)
        header_type = resp.headers.get("Content-Type")
        check_content_type(header_type, kind.content_types)
        max_bytes = kind.max_bytes
        if resp.status == 304:
            body = b""  # a conditional re-fetch: the page is unchanged and has no body
        else:
            check_declared_length(resp.headers, max_bytes)
            body = await read_limited(resp.content, max_bytes)
        return FetchedPage(
            url=url,
            final_url=str(resp.url),
            status=resp.status,
            headers={k.lower(): v for k, v in resp.headers.items()},
            content_type=resp.content_type if header_type else None,
            charset=resp.charset,
            body=body,
        )


_NO_SLOT: AbstractAsyncContextManager[None] = nullcontext()


class _Hops:
    """The state of one fetch across its redirect hops."""

    def __init__(
        self, max_redirects: int, *, obey_robots: bool, options: ScrapeOptions = DEFAULT_OPTIONS
    ) -> None:
        self.max_redirects = max_redirects
        self.obey_robots = obey_robots
        self.options = options
        self.redirects = 0
        self.seen: set[URL] = set()
        self.waiting_for_host: str | None = None

    def add(self, current: URL, next_target: URL) -> None:
        """Count a redirect; refuse a loop (checked first: it says more) or one too many."""
        self.seen.add(current)
        self.redirects += 1
        if next_target in self.seen:
            raise FetchError(
                ErrorCode.REDIRECT_LOOP,
                f"redirect loop: {current} redirects back to {next_target}",
            )
        if self.redirects > self.max_redirects:
            raise FetchError(
                ErrorCode.TOO_MANY_REDIRECTS,
                f"more than {self.max_redirects} redirects (last to {next_target})",
            )


def _larger(a: float | None, b: float | None) -> float | None:
    """The larger of two gaps, either of which may be unset."""
    if a is None or b is None:
        return b if a is None else a
    return max(a, b)


def _parse_url(url: str) -> URL:
    return _checked_target(url, "the URL")


def _checked_target(url: str | URL, what: str) -> URL:
    """The URL to request, held to the rules submit applies (one function for both), so a host
    no fetch can use fails at once as invalid_url rather than as a retried DNS error."""
    try:
        return request_target(url)
    except InvalidURL as exc:
        raise FetchError(ErrorCode.INVALID_URL, f"{what} cannot be fetched: {exc}") from None


def _redirect_target(resp: aiohttp.ClientResponse) -> URL | None:
    """Where a redirect response points, or ``None`` when ``resp`` is the final response."""
    location = resp.headers.get("Location")
    if resp.status not in REDIRECT_STATUSES or not location:
        return None
    try:
        target = resp.url.join(URL(location))
    except (ValueError, TypeError) as exc:
        raise FetchError(ErrorCode.INVALID_URL, f"redirect to an invalid URL: {exc}") from None
    # Credentials in a redirect would go out as Basic auth: refused here as at submit.
    return _checked_target(target, f"the redirect target {location!r}")


def _check_status(resp: aiohttp.ClientResponse) -> None:
    status = resp.status
    if status >= 400:
        retry_after = parse_retry_after(resp.headers.get("Retry-After"))
        raise FetchError.for_status(status, resp.reason or "", retry_after)
    if 300 <= status < 400 and status != 304:
        # A redirect status without a Location, or 300 Multiple Choices: nothing to follow.
        raise FetchError(
            f"http_{status}",
            f"HTTP {status} without a redirect to follow",
            transient=False,
            http_status=status,
        )


def client_error(exc: aiohttp.ClientError) -> FetchError:
    """The typed error for an aiohttp failure. Order matters: the classes form a hierarchy."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return FetchError(ErrorCode.DNS, f"the host name did not resolve: {text}")
    if isinstance(exc, aiohttp.ClientConnectorCertificateError | aiohttp.ClientSSLError):
        return FetchError(ErrorCode.TLS, f"TLS failed: {text}")
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, BlockedSocketError):
            return FetchError(ErrorCode.BLOCKED_ADDRESS, str(exc.os_error), transient=False)
        return FetchError(ErrorCode.CONNECT, f"could not connect: {text}")
    if isinstance(exc, aiohttp.ClientPayloadError) and isinstance(
        exc.__cause__, ContentEncodingError
    ):
        return FetchError(ErrorCode.BAD_RESPONSE, f"the body cannot be decoded: {text}")
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return FetchError(ErrorCode.CONNECTION_CLOSED, f"the server closed the connection: {text}")
    if isinstance(exc, aiohttp.ClientOSError):
        return FetchError(ErrorCode.CONNECTION_CLOSED, f"the connection failed: {text}")
    if isinstance(exc, aiohttp.ClientResponseError):
        # Raised while parsing: a malformed status line, headers over the size limits.
        return FetchError(ErrorCode.BAD_RESPONSE, f"malformed response: {text}", transient=False)
    if isinstance(exc, aiohttp.InvalidURL):
        return FetchError(ErrorCode.INVALID_URL, f"invalid URL: {text}")
    return FetchError(ErrorCode.CONNECT, f"{type(exc).__name__}: {text}")


__all__ = [
    "ALLOWED_CONTENT_TYPES",
    "SITEMAP_CONTENT_TYPES",
    "FetchedPage",
    "Fetcher",
    "client_error",
]
