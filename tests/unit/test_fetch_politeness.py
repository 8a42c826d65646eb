"""The in-memory politeness limiter (embedded mode): slots, delays, waits, cancellation."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from taskcrawler.domain import ErrorCode
from taskcrawler.fetch.politeness import HostBusyError, MemoryHostLimiter, make_host_limiter
from tests.support.hostile import fetch_settings


async def _hammer(limiter: MemoryHostLimiter, host: str, tasks: int, hold: float) -> int:
    """Run ``tasks`` holders of ``hold`` seconds each; return the most ever in flight at once."""
    in_flight = 0
    peak = 0

    async def one() -> None:
        nonlocal in_flight, peak
        async with limiter.slot(host):
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(hold)
            in_flight -= 1

    await asyncio.gather(*(one() for _ in range(tasks)))
    return peak


async def test_never_more_than_the_limit_in_flight() -> None:
    limiter = MemoryHostLimiter(3)
    assert await _hammer(limiter, "a.test", 30, 0.01) == 3
    assert limiter.in_flight("a.test") == 0
    assert limiter._hosts == {}  # idle hosts are forgotten


async def test_hosts_are_independent_and_case_insensitive() -> None:
    limiter = MemoryHostLimiter(1)
    async with limiter.slot("A.test"):
        assert limiter.in_flight("a.test.") == 1
        async with limiter.slot("b.test"):
            assert limiter.in_flight("b.test") == 1


async def test_starts_are_spaced_by_the_delay() -> None:
    limiter = MemoryHostLimiter(10, delay_seconds=0.05)
    loop = asyncio.get_running_loop()
    starts: list[float] = []

    async def one() -> None:
        async with limiter.slot("a.test"):
            starts.append(loop.time())

    await asyncio.gather(*(one() for _ in range(5)))
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.049


async def test_a_bounded_wait_gives_host_busy() -> None:
    limiter = MemoryHostLimiter(1)
    async with limiter.slot("a.test"):
        with pytest.raises(HostBusyError) as caught:
            async with limiter.slot("a.test", max_wait=0.05):
                pass
    assert caught.value.code == ErrorCode.HOST_BUSY
    assert caught.value.transient is True
    assert caught.value.retry_after is not None
    assert limiter.in_flight("a.test") == 0


async def test_a_cancelled_waiter_passes_its_wake_up_on() -> None:
    """The woken waiter is cancelled before it runs: the next waiter must still get the slot."""
    limiter = MemoryHostLimiter(1)
    got: list[str] = []

    async def waiter(name: str) -> None:
        async with limiter.slot("a.test"):
            got.append(name)

    held = limiter.slot("a.test")
    await held.__aenter__()
    second = asyncio.create_task(waiter("second"))
    third = asyncio.create_task(waiter("third"))
    await asyncio.sleep(0.01)  # both are parked now
    await held.__aexit__(None, None, None)  # wakes `second` (no await in between)...
    second.cancel()  # ...which is cancelled before it can run
    await asyncio.wait_for(third, 30)  # for ever if the wake-up were lost
    assert got == ["third"]
    assert second.cancelled()
    assert limiter.in_flight("a.test") == 0


async def test_the_settings_choose_the_memory_limiter_without_redis() -> None:
    limiter = make_host_limiter(fetch_settings(host_concurrency=2))
    assert isinstance(limiter, MemoryHostLimiter)
    assert await _hammer(limiter, "a.test", 10, 0.005) == 2
