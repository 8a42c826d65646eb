from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from taskcrawler.common.errors import translate_errors
from taskcrawler.domain import QueueUnavailable


def _queue_error(exc: Exception) -> Exception | None:
    if isinstance(exc, RedisConnectionError | RedisTimeoutError | OSError):
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
            items = [popped[1]]
            if max_items > 1:
                items += _as_list(await self.client.lpop(self.key, max_items - 1))
        return [UUID(item if isinstance(item, str) else item.decode()) for item in items]

    @_unavailable_on_connection_errors
    async def depth(self) -> int:
        return int(await self.client.llen(self.key))

    @_unavailable_on_connection_errors
    async def ping(self) -> None:
        await self.client.ping()

    async def close(self) -> None:
        if self._owns_client:
            await self.client.aclose()
