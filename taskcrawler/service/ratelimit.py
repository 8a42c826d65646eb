"""Requests per minute per key: in memory (embedded), or in Redis (shared by API processes).

A fixed one-minute window per key: one INCR per request, no scans, nothing that grows. A burst
of up to twice the limit across a window boundary is the accepted price of that simplicity.
"""

from __future__ import annotations

import time
from typing import Protocol

import redis.asyncio as aioredis

WINDOW_SECONDS = 60


class RateLimiter(Protocol):
    async def hit(self, key: str, limit: int) -> float | None:
        """Count one request; None if allowed, else seconds until the next window."""
        ...


def _window(now: float) -> tuple[int, float]:
    start = int(now // WINDOW_SECONDS) * WINDOW_SECONDS
    return start, start + WINDOW_SECONDS - now


class MemoryRateLimiter:
    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, int]] = {}

    async def hit(self, key: str, limit: int) -> float | None:
        window, remaining = _window(time.time())
        start, count = self._counts.get(key, (window, 0))
        count = count + 1 if start == window else 1
        self._counts[key] = (window, count)
        return None if count <= limit else remaining


class RedisRateLimiter:
    def __init__(self, client: aioredis.Redis, *, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    async def hit(self, key: str, limit: int) -> float | None:
        window, remaining = _window(time.time())
        name = f"{self.prefix}:ratelimit:{key}:{window}"
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.incr(name)
            pipe.expire(name, WINDOW_SECONDS + 5)
            count, _ = await pipe.execute()
        return None if int(count) <= limit else remaining
