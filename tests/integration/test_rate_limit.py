"""Requests per minute per key, in memory and through the real Redis, on a clock of the test's
own: no test waits, and none depends on where the wall clock's minute falls."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pytest
from redis.asyncio import BlockingConnectionPool, Redis

from taskcrawler.service.ratelimit import (
    WINDOW_SECONDS,
    MemoryRateLimiter,
    RateLimiter,
    RedisRateLimiter,
)
from tests.support.servers import free_port

#: A multiple of 60 (a minute of the clock, where a fixed window would start).
MINUTE_MARK = 1_800_000_000.0


@dataclass
class FakeClock:
    now: float = MINUTE_MARK

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()


MakeLimiter = Callable[[FakeClock], RateLimiter]


@pytest.fixture(params=["memory", "redis"])
def make_limiter(request: pytest.FixtureRequest) -> MakeLimiter:
    """A limiter of each backend in turn, on the given clock."""
    if request.param == "memory":
        return lambda clock: MemoryRateLimiter(clock)
    redis: Redis = request.getfixturevalue("redis")
    prefix: str = request.getfixturevalue("redis_prefix")
    return lambda clock: RedisRateLimiter(redis, prefix=prefix, clock=clock)


async def _hits(limiter: RateLimiter, key: str, limit: int, count: int) -> list[float | None]:
    return [await limiter.hit(key, limit) for _ in range(count)]


async def test_a_quiet_key_may_send_its_whole_limit_at_once(make_limiter: MakeLimiter) -> None:
    clock = FakeClock()
    limiter = make_limiter(clock)
    assert await _hits(limiter, "k", 3, 4) == [None, None, None, WINDOW_SECONDS]


async def test_no_burst_across_a_minute_of_the_clock(make_limiter: MakeLimiter) -> None:
    clock = FakeClock(MINUTE_MARK - 1)
    limiter = make_limiter(clock)
    assert await _hits(limiter, "k", 3, 3) == [None, None, None]
    clock.advance(2)  # a new minute of the clock: a fixed window would allow 3 more
    assert await limiter.hit("k", 3) == WINDOW_SECONDS - 2


async def test_retry_after_is_exact_and_the_key_recovers_then(make_limiter: MakeLimiter) -> None:
    clock = FakeClock()
    limiter = make_limiter(clock)
    for _ in range(3):
        assert await limiter.hit("k", 3) is None
        clock.advance(10)
    assert await limiter.hit("k", 3) == 30  # the first request leaves the window at +60
    clock.advance(29.5)
    assert await limiter.hit("k", 3) == 0.5  # refused requests did not move it
    clock.advance(0.5)
    assert await limiter.hit("k", 3) is None
    assert await limiter.hit("k", 3) == 10  # now the second one's turn, at +70


async def test_keys_are_limited_independently(make_limiter: MakeLimiter) -> None:
    clock = FakeClock()
    limiter = make_limiter(clock)
    assert await _hits(limiter, "alice", 2, 3) == [None, None, WINDOW_SECONDS]
    assert await _hits(limiter, "bob", 2, 2) == [None, None]
    clock.advance(1)
    assert await limiter.hit("alice", 2) == WINDOW_SECONDS - 1


async def test_a_changed_limit_holds_from_the_next_request(make_limiter: MakeLimiter) -> None:
    clock = FakeClock()
    limiter = make_limiter(clock)
    for _ in range(5):
        assert await limiter.hit("k", 5) is None
        clock.advance(1)
    # Lowered to 2: the 2 newest requests (at +3 and +4) fill it until the one at +3 leaves.
    assert await limiter.hit("k", 2) == 3 + WINDOW_SECONDS - 5
    # Raised to 7: room for 2 more, counting the 5 made.
    assert await _hits(limiter, "k", 7, 3) == [None, None, WINDOW_SECONDS - 5]


def _allowed_by_definition(allowed_times: list[float], now: float, limit: int) -> bool:
    return sum(1 for t in allowed_times if t > now - WINDOW_SECONDS) < limit


async def test_a_random_trace_matches_the_definition(make_limiter: MakeLimiter) -> None:
    """Whatever the pace, a request is allowed exactly when fewer than the limit were allowed
    in the 60 seconds before it, and a refusal names the moment the next one would be."""
    rng = random.Random(20261207)
    clock = FakeClock()
    limiter = make_limiter(clock)
    allowed: dict[str, list[float]] = {"a": [], "b": []}
    for _ in range(400):
        clock.advance(rng.choice([0, 0, 0.25, 1, 5, 20]))
        key = rng.choice(["a", "b"])
        limit = rng.choice([4, 4, 4, 2, 6])
        retry_after = await limiter.hit(key, limit)
        times = allowed[key]
        assert (retry_after is None) == _allowed_by_definition(times, clock.now, limit)
        if retry_after is None:
            times.append(clock.now)
        else:
            assert retry_after > 0
            counted = [t for t in times if t > clock.now - WINDOW_SECONDS]
            assert retry_after == counted[-limit] + WINDOW_SECONDS - clock.now
    assert sum(len(times) for times in allowed.values()) > 100  # the trace allowed many


async def test_redis_keeps_one_list_per_key_bounded_by_its_limit(
    redis: Redis, redis_prefix: str
) -> None:
    clock = FakeClock()
    limiter = RedisRateLimiter(redis, prefix=redis_prefix, clock=clock)
    for _ in range(50):  # refused requests are not logged
        await limiter.hit("alice", 3)
        clock.advance(0.5)
    await limiter.hit("bob", 3)
    names = sorted(str(name) for name in await redis.keys(f"{redis_prefix}:*"))
    assert names == [limiter.log_key("alice"), limiter.log_key("bob")]
    assert await redis.llen(limiter.log_key("alice")) == 3
    assert 0 < await redis.pttl(limiter.log_key("alice")) <= WINDOW_SECONDS * 1000


async def test_redis_on_its_own_clock(redis: Redis, redis_prefix: str) -> None:
    """Without a clock of the test's, the time is Redis's: the same answers, within the
    time the calls take."""
    limiter = RedisRateLimiter(redis, prefix=redis_prefix)
    assert await _hits(limiter, "k", 2, 2) == [None, None]
    retry_after = await limiter.hit("k", 2)
    assert retry_after is not None and 0 < retry_after <= WINDOW_SECONDS


async def test_memory_forgets_keys_a_window_after_their_last_request() -> None:
    clock = FakeClock()
    limiter = MemoryRateLimiter(clock)
    for n in range(1000):
        assert await limiter.hit(f"key{n}", 1) is None
    clock.advance(30)
    assert await limiter.hit("key7", 5) is None  # still remembered: its first is counted
    assert await limiter.hit("late", 1) is None
    assert len(limiter) == 1001
    clock.advance(WINDOW_SECONDS - 30)
    assert await limiter.hit("next", 1) is None
    assert len(limiter) == 3  # key7 and late (last allowed 30 s ago) and next
    assert await limiter.hit("key7", 1) == 30  # its request at +30 still counts


async def test_a_limit_below_one_is_refused(make_limiter: MakeLimiter) -> None:
    with pytest.raises(ValueError, match="at least one"):
        await make_limiter(FakeClock()).hit("k", 0)


async def test_with_redis_unreachable_the_limit_is_counted_per_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The API takes jobs with Redis down (the sweepers publish them later): a request that
    cannot be counted in Redis is counted in the process, not failed, and not let through
    unlimited. The outage is logged once, not once a request."""
    client = Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=1)
    limiter = RedisRateLimiter(client, prefix="tc-test-down", clock=FakeClock())
    try:
        assert await _hits(limiter, "k", 2, 3) == [None, None, WINDOW_SECONDS]
    finally:
        await client.aclose()
    assert caplog.text.count("rate limit counted per process, redis unavailable") == 1


async def test_with_every_connection_busy_the_limit_still_holds(
    redis_url: str, redis_prefix: str
) -> None:
    """A pool whose connections are all taken past its wait (a flood) is no outage to exploit:
    the requests it cannot count are counted in the process."""
    pool = BlockingConnectionPool.from_url(
        redis_url, decode_responses=True, max_connections=1, timeout=0.05
    )
    client = Redis.from_pool(pool)
    limiter = RedisRateLimiter(client, prefix=redis_prefix, clock=FakeClock())
    taken = await pool.get_connection()  # type: ignore[no-untyped-call]  # redis-py: untyped
    try:
        assert await _hits(limiter, "k", 1, 3) == [None, WINDOW_SECONDS, WINDOW_SECONDS]
    finally:
        await pool.release(taken)
        await client.aclose()
