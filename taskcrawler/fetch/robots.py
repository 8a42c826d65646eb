"""robots.txt: fetched once per origin, cached in memory and (in production) shared through Redis.

What an answer means (RFC 9309, with one deliberate deviation):

* 2xx: the rules are parsed with protego and obeyed. Only the first 512 KiB are read (the RFC's
  floor is 500 KiB); rules past that point are ignored rather than failing the job.
* 4xx (404, and 401/403 too, as the RFC says): there are no rules; everything is allowed.
* 5xx, a timeout, a refused connection, a redirect mess: **allowed**, and remembered only briefly
  (``UNAVAILABLE_CACHE_SECONDS``). RFC 9309 tells a *crawler* to assume "disallow all" here, but
  TaskCrawler fetches the one page a user asked for: failing that job permanently because a
  site's robots.txt endpoint hiccuped would be wrong, and the page fetch right after reports the
  outage itself (as a transient error) if the site is really down.
* A robots.txt the guard refuses (its host, or a redirect from it, leads to a blocked address)
  counts as unavailable: nothing was sent there, and the page fetch that follows is vetted by
  the guard on its own, so a page on a blocked host still fails as ``blocked_address``.
* ``host_busy`` (our own politeness limit) is not an answer: it is raised and nothing is cached.

Beyond allow and disallow, the same file gives the ``Crawl-delay`` of our user agent's group
(which the fetcher turns into a gap between requests to the host) and its ``Sitemap:`` lines.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aiohttp
from protego import Protego
from yarl import URL

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.fetch.limits import read_limited

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)

ROBOTS_MAX_BYTES = 512 * 1024
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 section 2.3.1.2
UNAVAILABLE_CACHE_SECONDS = 60.0
MEMORY_CACHE_ENTRIES = 10_000


@dataclass(frozen=True, slots=True)
class RobotsBody:
    """What fetching one robots.txt gave: its text ("" allows everything) and whether the
    answer is only provisional (the file was unavailable) and so cached briefly."""

    text: str
    provisional: bool = False


ALLOW_ALL = RobotsBody("")
UNAVAILABLE = RobotsBody("", provisional=True)

RobotsFetch = Callable[[URL], Awaitable[RobotsBody]]


def origin_of(url: URL) -> str:
    """The cache key: scheme, host and port (RFC 9309: robots.txt is per origin)."""
    return f"{url.scheme}://{url.raw_host}:{url.port}"


async def read_robots_response(resp: aiohttp.ClientResponse) -> RobotsBody:
    """Turn the final robots.txt response into a :class:`RobotsBody`, per the rules above."""
    if 200 <= resp.status < 300:
        body = await read_limited(resp.content, ROBOTS_MAX_BYTES, truncate=True)
        return RobotsBody(body.decode("utf-8", errors="replace"))
    if 400 <= resp.status < 500:
        return ALLOW_ALL
    return UNAVAILABLE


def crawl_delay_of(rules: Protego, user_agent: str) -> float | None:
    """The group's ``Crawl-delay`` for ``user_agent``: None when unset, negative or not a
    number (protego already drops what does not parse)."""
    try:
        delay = rules.crawl_delay(user_agent)
    except (TypeError, ValueError):
        return None
    if delay is None or not delay > 0 or delay != delay:  # NaN compares unequal to itself
        return None
    return float(delay)


def sitemaps_of(rules: Protego | None, url: URL) -> list[str]:
    """Absolute http(s) sitemap URLs from parsed rules, in order, without repeats."""
    if rules is None:
        return []
    base = url.with_path("/robots.txt").with_query(None).with_fragment(None)
    found: dict[str, None] = {}
    for line in rules.sitemaps:
        try:
            absolute = base.join(URL(str(line).strip()))
        except (ValueError, TypeError):
            continue
        if absolute.scheme in ("http", "https") and absolute.raw_host:
            found[str(absolute.with_fragment(None))] = None
    return list(found)


def disallows_nothing(rules: Protego, user_agent: str) -> bool:
    """Whether ``rules`` hold no Disallow line for ``user_agent``'s group (most sites'
    robots.txt, or none of its groups is ours): then every URL is allowed and none needs
    matching; ``can_fetch`` quotes and matches each one, about 2% of a worker's CPU. Read from
    protego's rule set (the version is pinned); a shape it does not know answers False."""
    try:
        group = rules._get_matching_rule_set(user_agent)
        return group is None or all(rule.field != "disallow" for rule in group._rules)
    except AttributeError:
        return False


@dataclass(slots=True)
class _Entry:
    rules: Protego | None  # None: everything is allowed
    expires_at: float
    #: The rules allow every URL to our user agent (see :func:`disallows_nothing`).
    allows_all: bool = False


class RobotsCache:
    """Answers "may TaskCrawler fetch this URL?", fetching each origin's robots.txt once per TTL.

    ``fetch`` does the HTTP part (the Fetcher passes one that uses its guarded session and
    limits). Concurrent checks for one origin share a single fetch.
    """

    def __init__(
        self,
        fetch: RobotsFetch,
        *,
        user_agent: str,
        ttl_seconds: float,
        redis: Redis | None = None,
        redis_prefix: str = "taskcrawler",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self._user_agent = user_agent
        self._ttl = ttl_seconds
        self._redis = redis
        self._redis_failures = _redis_failures() if redis is not None else (OSError,)
        self._prefix = redis_prefix
        self._clock = clock
        self._memory: dict[str, _Entry] = {}
        self._loading: dict[str, asyncio.Task[Protego | None]] = {}

    async def check(self, url: URL) -> float | None:
        """Raise ``robots_disallowed`` (permanent) when robots.txt forbids ``url``; else return
        the ``Crawl-delay`` (seconds) it sets for our user agent, or None."""
        origin = origin_of(url)
        rules = await self._rules(origin, url)
        if rules is None:
            return None
        if not self._allows_all(origin, rules) and not rules.can_fetch(str(url), self._user_agent):
            raise FetchError(
                ErrorCode.ROBOTS_DISALLOWED,
                f"robots.txt of {url.host} disallows {url.path_qs} for our user agent",
                transient=False,
            )
        return crawl_delay_of(rules, self._user_agent)

    def _allows_all(self, origin: str, rules: Protego) -> bool:
        entry = self._memory.get(origin)
        return entry is not None and entry.rules is rules and entry.allows_all

    def known(self, url: URL) -> tuple[bool, float | None]:
        """Whether the rules of ``url``'s origin are in this process's memory, and the
        Crawl-delay they set for our user agent (nothing is fetched)."""
        entry = self._memory.get(origin_of(url))
        if entry is None or entry.expires_at <= self._clock():
            return False, None
        if entry.rules is None:
            return True, None
        return True, crawl_delay_of(entry.rules, self._user_agent)

    async def sitemaps(self, url: URL) -> list[str]:
        """The ``Sitemap:`` lines of the robots.txt of ``url``'s origin, made absolute."""
        rules = await self._rules(origin_of(url), url)
        return sitemaps_of(rules, url)

    def redis_key(self, origin: str) -> str:
        return f"{self._prefix}:robots:{origin}"

    async def _rules(self, origin: str, url: URL) -> Protego | None:
        entry = self._memory.get(origin)
        if entry is not None and entry.expires_at > self._clock():
            return entry.rules
        task = self._loading.get(origin)
        if task is None:
            task = asyncio.create_task(self._load(origin, url.with_path("/robots.txt")))
            self._loading[origin] = task
            task.add_done_callback(self._loaded)
        # Shielded: one caller hitting its deadline must not cancel the load the others await.
        return await asyncio.shield(task)

    def _loaded(self, task: asyncio.Task[Protego | None]) -> None:
        for origin, loading in list(self._loading.items()):
            if loading is task:
                del self._loading[origin]
        if not task.cancelled():
            task.exception()  # retrieved here: every waiter may have given up already

    async def _load(self, origin: str, robots_url: URL) -> Protego | None:
        shared = await self._from_redis(origin)
        if shared is not None:
            text, ttl = shared
        else:
            body = await self._fetch_body(robots_url)
            text = body.text
            ttl = min(self._ttl, UNAVAILABLE_CACHE_SECONDS) if body.provisional else self._ttl
            await self._to_redis(origin, text, ttl)
        rules = Protego.parse(text) if text.strip() else None
        self._remember(origin, rules, ttl)
        return rules

    async def _fetch_body(self, robots_url: URL) -> RobotsBody:
        try:
            return await self._fetch(robots_url)
        except FetchError as exc:
            if exc.code == ErrorCode.HOST_BUSY:
                raise  # our own politeness, not the site: decide later, cache nothing
            log.info("robots.txt at %s unavailable (%s); allowing", robots_url, exc.log_line)
            return UNAVAILABLE

    def _remember(self, origin: str, rules: Protego | None, ttl: float) -> None:
        if ttl <= 0:
            return
        now = self._clock()
        if len(self._memory) >= MEMORY_CACHE_ENTRIES:
            self._evict(now)
        allows_all = rules is None or disallows_nothing(rules, self._user_agent)
        self._memory[origin] = _Entry(rules, now + ttl, allows_all)

    def _evict(self, now: float) -> None:
        """Drop expired entries; if that is not enough, the oldest half (dicts keep order)."""
        for origin in [o for o, e in self._memory.items() if e.expires_at <= now]:
            del self._memory[origin]
        if len(self._memory) >= MEMORY_CACHE_ENTRIES:
            for origin in list(self._memory)[: MEMORY_CACHE_ENTRIES // 2]:
                del self._memory[origin]

    # --- sharing through Redis: an optimisation, so a Redis failure only costs a refetch ----

    async def _from_redis(self, origin: str) -> tuple[str, float] | None:
        if self._redis is None:
            return None
        key = self.redis_key(origin)
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.get(key)
                pipe.pttl(key)
                value, pttl = await pipe.execute()
        except self._redis_failures as exc:
            log.warning("robots cache: Redis read failed (%s); fetching robots.txt", exc)
            return None
        if value is None or pttl is None or pttl <= 0:
            return None
        text = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
        return str(text), pttl / 1000.0

    async def _to_redis(self, origin: str, text: str, ttl: float) -> None:
        if self._redis is None or ttl <= 0:
            return
        try:
            await self._redis.set(self.redis_key(origin), text, px=max(1, int(ttl * 1000)))
        except self._redis_failures as exc:
            log.warning("robots cache: Redis write failed (%s)", exc)


def _redis_failures() -> tuple[type[Exception], ...]:
    """What a Redis call raises when Redis fails. Imported here, not at the top: embedded mode
    has no Redis, and importing it costs each process start about a tenth of a second of CPU."""
    from redis.exceptions import RedisError

    return (RedisError, OSError)
