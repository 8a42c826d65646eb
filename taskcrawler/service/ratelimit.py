"""Requests per minute per key: in memory (embedded), or in Redis (shared by API processes).

A sliding log: each key keeps the times of its requests allowed in the last 60 seconds. A
request is allowed while fewer than the limit were allowed in the 60 seconds before it, so no
60-second span ever holds more than the limit, and a key that was quiet may still send its whole
limit at once. A refused request is not logged, so a client that comes back too early is not
kept out longer for it. The answer to a refused one is exact: the seconds until the request that
frees a place leaves the window, whatever the clock's minute.

A changed limit holds from the next request, counting the requests already allowed: they are not
trimmed to a lowered limit, so raising it again does not forget them. The log costs one entry per
request allowed in the last minute, never more than the largest limit the key had in that
minute, and is gone a minute after the key's last allowed request.

GCRA (one time per key) would be smaller but cannot keep both promises: after a burst of the
limit it lets one more through every 60/limit seconds, nearly twice the limit in a minute.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import redis.asyncio as aioredis

log = logging.getLogger(__name__)

WINDOW_SECONDS = 60

#: Seconds now; only differences of it matter.
Clock = Callable[[], float]


class RateLimiter(Protocol):
    async def hit(self, key: str, limit: int) -> float | None:
        """Count one request of ``key``, allowed ``limit`` in any 60 seconds: None if it is
        allowed, else the seconds until one would be (it is then not counted)."""
        ...


def _retry_after(counted: float, now: float) -> float:
    """When a request allowed at ``counted`` leaves the window."""
    return counted + WINDOW_SECONDS - now


def _check_limit(limit: int) -> None:
    if limit < 1:
        raise ValueError(f"a rate limit allows at least one request, not {limit}")


class MemoryRateLimiter:
    """One API process's limits. Keys whose last allowed request is a window old are
    forgotten as others arrive, so the state holds only the keys active in the last minute."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        # Key -> times of its allowed requests, oldest first. Keys are ordered by their last
        # allowed request, so the ones whose whole log has expired are at the front.
        self._logs: OrderedDict[str, deque[float]] = OrderedDict()

    def __len__(self) -> int:
        """How many keys are remembered."""
        return len(self._logs)

    async def hit(self, key: str, limit: int) -> float | None:
        _check_limit(limit)
        now = self._clock()
        horizon = now - WINDOW_SECONDS
        self._forget_idle_keys(horizon)
        times = self._logs.get(key)
        if times is None:
            self._logs[key] = deque([now])
            return None
        while times and times[0] <= horizon:
            times.popleft()
        if len(times) >= limit:
            return _retry_after(times[len(times) - limit], now)
        times.append(now)
        self._logs.move_to_end(key)
        return None

    def _forget_idle_keys(self, horizon: float) -> None:
        while self._logs:
            key, times = next(iter(self._logs.items()))
            if times[-1] > horizon:
                return
            del self._logs[key]


# KEYS[1]: the key's log, a list of the times (µs) of its allowed requests, oldest first.
# ARGV: the limit, the window (µs), now (µs), or '' for Redis's clock, which every API process
# shares. Allowed: logs the request and returns nil. Refused: returns the µs until a request
# would be allowed. Times are whole µs and formatted by hand: Lua would print 15 digits as
# 1.7e+15, losing the µs.
_HIT = """
local log = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local oldest = tonumber(redis.call('LINDEX', log, 0))
while oldest and oldest <= now - window do
  redis.call('LPOP', log)
  oldest = tonumber(redis.call('LINDEX', log, 0))
end
local count = redis.call('LLEN', log)
if count < limit then
  redis.call('RPUSH', log, string.format('%.0f', now))
  redis.call('PEXPIRE', log, math.ceil(window / 1000))
  return false
end
return tonumber(redis.call('LINDEX', log, count - limit)) + window - now
"""

_MICROS = 1_000_000


class RedisRateLimiter:
    """Limits shared by every API process on the same Redis and prefix: one list per key,
    changed by one script call per request, expiring a window after the key's last allowed
    request. Without a ``clock`` the time is Redis's own, so processes with skewed clocks agree.

    A request that cannot be counted in Redis (down, or every connection of the pool busy
    past its wait: a flood, when the limit matters most) is counted in this process instead,
    so a key gets at most its limit per process, never an unlimited rate.
    """

    def __init__(self, client: aioredis.Redis, *, prefix: str, clock: Clock | None = None) -> None:
        # Imported here, not at the top: embedded mode has no Redis, and importing it costs
        # each process start about a tenth of a second of CPU.
        from taskcrawler.queue.redis import UNREACHABLE

        self.client = client
        self._down = UNREACHABLE
        self.prefix = prefix
        self._clock = clock
        self._hit = client.register_script(_HIT)
        self._fallback = MemoryRateLimiter() if clock is None else MemoryRateLimiter(clock)
        self._unreachable = False  # warned once per outage, not once per request

    def log_key(self, key: str) -> str:
        return f"{self.prefix}:ratelimit:{key}"

    async def hit(self, key: str, limit: int) -> float | None:
        _check_limit(limit)
        now = "" if self._clock is None else str(round(self._clock() * _MICROS))
        try:
            wait = await self._hit(
                keys=[self.log_key(key)], args=[limit, WINDOW_SECONDS * _MICROS, now]
            )
        except self._down as exc:
            # With Redis down the API still takes jobs (the sweepers publish them once it is
            # back): the request is counted here rather than failed.
            if not self._unreachable:
                log.warning("rate limit counted per process, redis unavailable: %s", exc)
            self._unreachable = True
            return await self._fallback.hit(key, limit)
        self._unreachable = False
        return None if wait is None else int(wait) / _MICROS
