"""The queue contract, on the in-process queue and on Redis."""

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from taskcrawler.domain import QueueUnavailable
from taskcrawler.queue import JobQueue, MemoryQueue
from taskcrawler.queue.redis import RedisQueue


@pytest.fixture(params=["memory", "redis"])
async def queue(
    request: pytest.FixtureRequest, redis_url: str, redis_prefix: str
) -> AsyncIterator[JobQueue]:
    q: JobQueue
    if request.param == "memory":
        q = MemoryQueue()
    else:
        q = RedisQueue.from_url(redis_url, prefix=redis_prefix)
    yield q
    await q.close()


async def test_publish_then_consume_in_order_and_in_batches(queue: JobQueue) -> None:
    ids = [uuid.uuid4() for _ in range(10)]
    await queue.publish(ids)
    assert await queue.depth() == 10
    first = await queue.consume(4, wait_seconds=1)
    rest = await queue.consume(100, wait_seconds=1)
    assert first + rest == ids
    assert len(first) == 4
    assert await queue.depth() == 0


async def test_consume_waits_then_returns_nothing(queue: JobQueue) -> None:
    assert await queue.consume(10, wait_seconds=0.1) == []


async def test_consume_wakes_up_on_publish(queue: JobQueue) -> None:
    job_id = uuid.uuid4()
    # Woken by the publish, well before the wait would end (however loaded the machine).
    waiter = asyncio.create_task(queue.consume(10, wait_seconds=60))
    await asyncio.sleep(0.05)
    await queue.publish([job_id])
    assert await asyncio.wait_for(waiter, 30) == [job_id]


async def test_duplicates_are_delivered_as_published(queue: JobQueue) -> None:
    job_id = uuid.uuid4()
    await queue.publish([job_id, job_id])
    assert await queue.consume(10, wait_seconds=1) == [job_id, job_id]


async def test_unreachable_redis_is_queue_unavailable() -> None:
    queue = RedisQueue.from_url("redis://127.0.0.1:1/0", prefix="nothing")
    with pytest.raises(QueueUnavailable):
        await queue.publish([uuid.uuid4()])
    with pytest.raises(QueueUnavailable):
        await queue.consume(1, wait_seconds=0.1)
    with pytest.raises(QueueUnavailable):
        await queue.ping()
    await queue.close()


async def test_an_id_blpop_took_is_delivered_when_the_lpop_after_it_fails(
    redis_url: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first id comes from BLPOP, the rest from an LPOP after it: an error of that LPOP
    must not lose the id BLPOP already took out of Redis."""
    queue = RedisQueue.from_url(redis_url, prefix=redis_prefix)
    job_id = uuid.uuid4()
    await queue.publish([job_id])
    real_lpop = queue.client.lpop
    calls = 0

    async def lpop(key: str, count: int | None = None) -> object:
        nonlocal calls
        calls += 1
        if calls == 1:
            return None  # seen empty: consume goes on to wait with BLPOP, which takes the id
        if calls == 2:
            raise RedisConnectionError("connection reset by peer")
        return await real_lpop(key, count)

    monkeypatch.setattr(queue.client, "lpop", lpop)
    try:
        delivered = await queue.consume(10, wait_seconds=5)
    except QueueUnavailable:
        delivered = []
    left = await queue.consume(10, wait_seconds=0)
    await queue.close()

    assert delivered + left == [job_id]
