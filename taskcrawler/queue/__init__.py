"""The queue is a transport for job ids, never the truth: the database is.

A message may be lost (Redis restarted empty) or delivered twice; the sweeper and the guarded
claim make both harmless. That is why the transport is this small.
"""

from __future__ import annotations

from taskcrawler.queue.base import JobQueue
from taskcrawler.queue.memory import MemoryQueue
from taskcrawler.settings import Settings


def queue_from_settings(settings: Settings) -> JobQueue:
    """Redis when ``TASKCRAWLER_REDIS_URL`` is set, else the in-process queue."""
    if settings.redis_url:
        from taskcrawler.queue.redis import RedisQueue  # imported lazily: embedded needs no Redis

        return RedisQueue.from_url(settings.redis_url, prefix=settings.redis_prefix)
    return MemoryQueue()


__all__ = ["JobQueue", "MemoryQueue", "queue_from_settings"]
