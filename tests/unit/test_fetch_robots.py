"""The robots.txt cache on its own: a fake fetch and a fake clock, no network."""

from __future__ import annotations

import asyncio

import pytest
from protego import Protego
from yarl import URL

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.fetch.politeness import HostBusyError
from taskcrawler.fetch.robots import (
    ALLOW_ALL,
    UNAVAILABLE,
    UNAVAILABLE_CACHE_SECONDS,
    RobotsBody,
    RobotsCache,
    disallows_nothing,
    origin_of,
)

UA = "TaskCrawler/0.1 (+https://example.invalid)"
RULES = "User-agent: *\nDisallow: /private\n\nUser-agent: TaskCrawler\nDisallow: /no-tc\n"


class FakeFetch:
    def __init__(self, *answers: RobotsBody | FetchError, delay: float = 0.0) -> None:
        self.answers = list(answers)
        self.calls: list[URL] = []
        self.delay = delay

    async def __call__(self, url: URL) -> RobotsBody:
        self.calls.append(url)
        await asyncio.sleep(self.delay)
        answer = self.answers[min(len(self.calls), len(self.answers)) - 1]
        if isinstance(answer, FetchError):
            raise answer
        return answer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _cache(fetch: FakeFetch, clock: Clock | None = None, ttl: float = 3600) -> RobotsCache:
    return RobotsCache(fetch, user_agent=UA, ttl_seconds=ttl, clock=clock or Clock())


async def _disallowed(cache: RobotsCache, url: str) -> bool:
    error: FetchError | None = None
    try:
        await cache.check(URL(url))
    except FetchError as exc:
        error = exc
    if error is None:
        return False
    assert error.code == ErrorCode.ROBOTS_DISALLOWED
    assert error.transient is False
    return True


async def test_rules_are_obeyed_for_our_user_agent() -> None:
    cache = _cache(FakeFetch(RobotsBody(RULES)))
    assert await _disallowed(cache, "http://a.test/no-tc/page")
    assert not await _disallowed(cache, "http://a.test/private")  # our group replaces '*'
    assert not await _disallowed(cache, "http://a.test/")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("User-agent: *\nAllow: /\n", True),
        ("User-agent: *\nDisallow:\n", True),
        ("User-agent: SomeoneElse\nDisallow: /\n", True),  # no group of ours
        ("User-agent: *\nAllow: /\nDisallow: /x\n", False),
        (RULES, False),
    ],
)
def test_rules_that_disallow_nothing_to_us_are_told_apart(text: str, expected: bool) -> None:
    """Read from protego's rule set: True only where no URL can be disallowed to us (a
    protego whose rule set changed shape answers False, and the True cases here fail)."""
    assert disallows_nothing(Protego.parse(text), UA) is expected


async def test_rules_that_allow_everything_still_give_their_crawl_delay() -> None:
    cache = _cache(FakeFetch(RobotsBody("User-agent: *\nAllow: /\nCrawl-delay: 2\n")))
    assert await cache.check(URL("http://a.test/any/page")) == 2.0
    assert await cache.check(URL("http://a.test/robots.txt")) == 2.0


async def test_one_fetch_per_origin_and_ttl() -> None:
    clock = Clock()
    fetch = FakeFetch(RobotsBody("User-agent: *\nDisallow: /x\n"))
    cache = _cache(fetch, clock, ttl=100)
    for _ in range(5):
        assert await _disallowed(cache, "http://a.test/x")
    assert fetch.calls == [URL("http://a.test/robots.txt")]
    await cache.check(URL("https://a.test/"))  # another scheme: another origin
    await cache.check(URL("http://a.test:8080/"))  # another port: another origin
    assert len(fetch.calls) == 3
    clock.now += 101
    await cache.check(URL("http://a.test/"))
    assert len(fetch.calls) == 4


async def test_concurrent_checks_share_one_fetch() -> None:
    fetch = FakeFetch(RobotsBody("User-agent: *\nDisallow: /x\n"), delay=0.05)
    cache = _cache(fetch)
    results = await asyncio.gather(*(_disallowed(cache, "http://a.test/x") for _ in range(20)))
    assert all(results)
    assert len(fetch.calls) == 1


@pytest.mark.parametrize("answer", [ALLOW_ALL, UNAVAILABLE])
async def test_missing_or_unavailable_robots_allow_everything(answer: RobotsBody) -> None:
    cache = _cache(FakeFetch(answer))
    assert not await _disallowed(cache, "http://a.test/anything")


async def test_unavailable_is_remembered_only_briefly() -> None:
    clock = Clock()
    fetch = FakeFetch(UNAVAILABLE, RobotsBody("User-agent: *\nDisallow: /\n"))
    cache = _cache(fetch, clock)
    assert not await _disallowed(cache, "http://a.test/")
    clock.now += UNAVAILABLE_CACHE_SECONDS - 1
    assert not await _disallowed(cache, "http://a.test/")
    clock.now += 2
    assert await _disallowed(cache, "http://a.test/")
    assert len(fetch.calls) == 2


@pytest.mark.parametrize(
    "error",
    [
        FetchError(ErrorCode.TIMEOUT, "slow"),
        FetchError(ErrorCode.CONNECT, "refused"),
        FetchError(ErrorCode.BLOCKED_ADDRESS, "inward redirect", transient=False),
        FetchError(ErrorCode.TOO_MANY_REDIRECTS, "many"),
    ],
)
async def test_a_failed_robots_fetch_allows(error: FetchError) -> None:
    assert not await _disallowed(_cache(FakeFetch(error)), "http://a.test/x")


async def test_our_own_politeness_limit_is_not_an_answer() -> None:
    fetch = FakeFetch(HostBusyError("a.test", 1, 1), RobotsBody("User-agent: *\nDisallow: /\n"))
    cache = _cache(fetch)
    with pytest.raises(HostBusyError):
        await cache.check(URL("http://a.test/"))
    assert await _disallowed(cache, "http://a.test/")  # nothing was cached: fetched again


def test_origin_includes_scheme_host_and_port() -> None:
    assert origin_of(URL("https://A.test/x?y")) == "https://a.test:443"
    assert origin_of(URL("http://a.test:8080/")) == "http://a.test:8080"
