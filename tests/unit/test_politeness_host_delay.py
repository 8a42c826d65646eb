"""A request's own delay (robots.txt Crawl-delay) in the in-memory limiter: the larger of it
and the limiter's delay spaces the starts. Lower bounds only: slowness cannot fail them."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from taskcrawler.fetch.politeness import HostBusyError, MemoryHostLimiter


async def _starts(
    limiter: MemoryHostLimiter, host: str, count: int, delay: float | None
) -> list[float]:
    loop = asyncio.get_running_loop()
    starts: list[float] = []

    async def one() -> None:
        async with limiter.slot(host, delay=delay):
            starts.append(loop.time())

    await asyncio.gather(*(one() for _ in range(count)))
    return sorted(starts)


@pytest.mark.parametrize(
    ("configured", "asked", "gap"),
    [(0.0, 0.05, 0.05), (0.08, 0.02, 0.08), (0.0, None, 0.0), (0.05, None, 0.05)],
)
async def test_the_larger_delay_wins(configured: float, asked: float | None, gap: float) -> None:
    limiter = MemoryHostLimiter(10, configured)
    assert limiter.gap(asked) == gap
    starts = await _starts(limiter, "a.test", 4, asked)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= gap - 0.005  # the loop clock's resolution


async def test_another_host_is_not_delayed_by_it() -> None:
    limiter = MemoryHostLimiter(10)
    async with limiter.slot("slow.test", delay=30):
        pass
    async with limiter.slot("fast.test", max_wait=0.5):
        pass


async def test_a_busy_host_says_when_to_come_back() -> None:
    limiter = MemoryHostLimiter(10)
    async with limiter.slot("slow.test", delay=5):
        pass
    with pytest.raises(HostBusyError) as caught:
        async with limiter.slot("slow.test", max_wait=0.01, delay=5):
            pass
    assert caught.value.retry_after == 5
