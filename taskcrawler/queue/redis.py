from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any
from uuid import UUID

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, ReadOnlyError
from redis.exceptions import TimeoutError as RedisTimeoutError

from taskcrawler.common.errors import translate_errors
from taskcrawler.domain import QueueUnavailable
from taskcrawler.queue.base import Ready, Taken, Waiting

#: What the client raises when Redis cannot be reached or does not answer in time (a pool with
#: every connection busy past its wait raises a ConnectionError too).
UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)
#: What a Redis that answers but takes no writes raises: a replica (after a failover, until
#: the client reconnects to the new primary), or one past its ``maxmemory``. Unavailable too:
#: a job it refuses to queue is left for the sweeper, not failed.
REFUSING_WRITES = (ReadOnlyError, OutOfMemoryError)


def _queue_error(exc: Exception) -> Exception | None:
    if isinstance(exc, UNREACHABLE + REFUSING_WRITES):
        return QueueUnavailable(f"redis: {exc}")
    return None


_unavailable_on_connection_errors = translate_errors(_queue_error)

#: How long a command waits for a free pooled connection before Redis counts as unavailable.
POOL_WAIT_SECONDS = 5.0


def redis_client(url: str) -> aioredis.Redis:
    """The client a process shares between its queue, rate limits, politeness and robots cache.

    A blocking pool: when all connections are busy (a worker's fetches each take a politeness
    slot and hand it back), a caller waits briefly for one instead of failing with "Too many
    connections", which would turn a busy moment into failed jobs.
    """
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        decode_responses=True,
        socket_connect_timeout=2,
        health_check_interval=10,
        max_connections=64,
        timeout=POOL_WAIT_SECONDS,
    )
    return aioredis.Redis.from_pool(pool)


def _as_list(reply: Any) -> list[Any]:
    """LPOP with a count answers a list, or None when the list is empty."""
    return list(reply) if reply else []


class RedisQueue:
    """A Redis list of job ids, ``<prefix>:queue``.

    A list and not a stream: the database already records who holds which job (the lease), so
    the transport needs no acknowledgements, and LPOP with a count is the cheapest batch read.
    """

    durable = True

    def __init__(self, client: aioredis.Redis, *, prefix: str, owns_client: bool = False) -> None:
        self.client = client
        self.prefix = prefix
        self.key = f"{prefix}:queue"
        self._owns_client = owns_client

    @classmethod
    def from_url(cls, url: str, *, prefix: str) -> RedisQueue:
        """A queue with a client of its own, closed with it."""
        return cls(redis_client(url), prefix=prefix, owns_client=True)

    @_unavailable_on_connection_errors
    async def publish(self, job_ids: Sequence[UUID]) -> None:
        if job_ids:
            await self.client.rpush(self.key, *map(str, job_ids))

    @_unavailable_on_connection_errors
    async def consume(self, max_items: int, wait_seconds: float) -> list[UUID]:
        items = _as_list(await self.client.lpop(self.key, max_items))
        if not items and wait_seconds > 0:  # BLPOP's 0 would wait for good
            # Block for the first id only, then take whatever else is already there.
            popped = await self.client.blpop([self.key], timeout=wait_seconds)
            if popped is None:
                return []
            items = [popped[1], *await self._more(max_items - 1)]
        return [UUID(item if isinstance(item, str) else item.decode()) for item in items]

    async def _more(self, count: int) -> list[Any]:
        """Up to ``count`` ids more, after one BLPOP took: none when Redis fails now, for an
        error raised here would lose the id BLPOP already took out of the list."""
        if count < 1:
            return []
        try:
            return _as_list(await self.client.lpop(self.key, count))
        except UNREACHABLE:
            return []

    @_unavailable_on_connection_errors
    async def depth(self) -> int:
        """Ids waiting, in the queue and in the hosts' lines (:class:`RedisHostLines`): where
        the backlog of a busy host waits is not a reason to count it less."""
        pipe = self.client.pipeline(transaction=False)
        pipe.llen(self.key)
        pipe.scard(_waiting_ids_key(self.prefix))
        queued, waiting = await pipe.execute()
        return int(queued) + int(waiting)

    @_unavailable_on_connection_errors
    async def ping(self) -> None:
        await self.client.ping()

    async def close(self) -> None:
        if self._owns_client:
            await self.client.aclose()


#: Redis's own clock (ms), so that worker hosts whose clocks differ agree on when a host rests.
_NOW = """
local clock = redis.call('TIME')
local now = clock[1] * 1000 + math.floor(clock[2] / 1000)
"""

# KEYS: ids set, ready hosts (scored by when each may be asked next, ms), hosts' URLs.
# ARGV: line key prefix, then (host, url, id) triples.
_PARK = (
    _NOW
    + """
local added = 0
for i = 2, #ARGV, 3 do
  local host, url, id = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if redis.call('SADD', KEYS[1], id) == 1 then
    redis.call('RPUSH', ARGV[1] .. host, id)
    redis.call('HSETNX', KEYS[3], host, url)
    redis.call('ZADD', KEYS[2], 'NX', now, host)
    added = added + 1
  end
end
return added
"""
)

# KEYS: ready hosts, hosts' URLs. ARGV: line key prefix, limit, hosts to wake... Answers how
# many hosts have lines, ms until the first may be asked, then (host, url, ids waiting) triples.
_READY = (
    _NOW
    + """
for i = 3, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', 'LT', now, ARGV[i])
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local next_in = 0
if first[2] then next_in = math.max(0, tonumber(first[2]) - now) end
local out = {redis.call('ZCARD', KEYS[1]), next_in}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now + 0.5, 'LIMIT', 0, ARGV[2])
for _, host in ipairs(due) do
  local waiting = redis.call('LLEN', ARGV[1] .. host)
  if waiting == 0 then
    redis.call('ZREM', KEYS[1], host)
    redis.call('HDEL', KEYS[2], host)
  else
    table.insert(out, host)
    table.insert(out, redis.call('HGET', KEYS[2], host) or '')
    table.insert(out, waiting)
  end
end
return out
"""
)

# KEYS: ids set, ready hosts, hosts' URLs. ARGV: line key prefix, how many hosts to take
# from, then (host, count) pairs, then (host, ms to rest) pairs. Answers, for each host taken
# from, its ids followed by how many are left in its line.
_TAKE = (
    _NOW
    + """
local out = {}
local last = 2 + 2 * tonumber(ARGV[2])
for i = 3, last, 2 do
  local host, line = ARGV[i], ARGV[1] .. ARGV[i]
  local ids = redis.call('LPOP', line, tonumber(ARGV[i + 1])) or {}
  for _, id in ipairs(ids) do redis.call('SREM', KEYS[1], id) end
  local left = redis.call('LLEN', line)
  if left == 0 then
    redis.call('ZREM', KEYS[2], host)
    redis.call('HDEL', KEYS[3], host)
  else
    -- Behind the hosts that were ready this millisecond: a host just served goes last.
    redis.call('ZADD', KEYS[2], 'XX', now + 0.5, host)
  end
  table.insert(ids, left)
  table.insert(out, ids)
end
for i = last + 1, #ARGV, 2 do
  redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[i + 1]), ARGV[i])
end
return out
"""
)


class RedisHostLines:
    """Per-host lines in Redis, shared by every worker of the deployment (Mercator's back
    queues): ``<prefix>:hosts:line:<host>`` a list of job ids, ``<prefix>:hosts:ready`` the
    hosts with ids waiting, scored by when each may be asked for a slot next (a host given
    none rests; a slot handed back wakes it), ``<prefix>:hosts:url`` one URL of each host,
    ``<prefix>:hosts:ids`` the ids waiting (a duplicate is parked once). A worker takes ids
    only of hosts that gave it slots, so no id waits where another worker cannot see it; ids
    taken by a worker that dies before claiming them are PENDING jobs the sweeper publishes
    again. Each call is one script, atomic."""

    shared = True

    def __init__(self, client: aioredis.Redis, *, prefix: str) -> None:
        self.client = client
        base = f"{prefix}:hosts"
        self._line = f"{base}:line:"
        self._ids, self._ready, self._urls = (
            _waiting_ids_key(prefix),
            f"{base}:ready",
            f"{base}:url",
        )
        self._park = client.register_script(_PARK)
        self._ready_script = client.register_script(_READY)
        self._take = client.register_script(_TAKE)

    @_unavailable_on_connection_errors
    async def park(self, entries: Sequence[tuple[str, str, UUID]]) -> int:
        if not entries:
            return 0
        args: list[str | int] = [self._line]
        for host, url, job_id in entries:
            args += [host, url, str(job_id)]
        keys = [self._ids, self._ready, self._urls]
        return int(await self._park(keys=keys, args=args))

    @_unavailable_on_connection_errors
    async def ready(self, limit: int, *, wake: Sequence[str] = ()) -> Ready:
        args: list[str | int] = [self._line, limit, *wake]
        lines, next_ms, *flat = await self._ready_script(keys=[self._ready, self._urls], args=args)
        hosts = [
            Waiting(_text(flat[i]), _text(flat[i + 1]), int(flat[i + 2]))
            for i in range(0, len(flat), 3)
        ]
        return Ready(hosts, int(lines), int(next_ms) / 1000)

    @_unavailable_on_connection_errors
    async def take(
        self, counts: Mapping[str, int], rest: Mapping[str, float] = MappingProxyType({})
    ) -> dict[str, Taken]:
        asked = [(host, count) for host, count in counts.items() if count > 0]
        if not asked and not rest:
            return {}
        args: list[str | int] = [self._line, len(asked)]
        for host, count in asked:
            args += [host, count]
        for host, seconds in rest.items():
            args += [host, max(1, int(seconds * 1000))]
        keys = [self._ids, self._ready, self._urls]
        replies = await self._take(keys=keys, args=args)
        return {
            host: Taken([UUID(_text(item)) for item in reply[:-1]], int(reply[-1]))
            for (host, _), reply in zip(asked, replies, strict=True)
        }

    @_unavailable_on_connection_errors
    async def size(self) -> int:
        return int(await self.client.scard(self._ids))

    async def clear(self) -> list[UUID]:
        return []


def _waiting_ids_key(prefix: str) -> str:
    return f"{prefix}:hosts:ids"


def _text(item: str | bytes | int) -> str:
    return item.decode() if isinstance(item, bytes) else str(item)
