"""Per-host lines, in this process and in Redis: ids wait in their host's line, a host served
goes to the back, a resting host is not offered until a slot wakes it, a duplicate waits once;
in Redis two frontiers (two worker hosts) take from the same lines, so no id waits where the
other cannot see it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from uuid import UUID

import pytest

from taskcrawler.fetch.politeness import MemoryHostLimiter
from taskcrawler.queue import HostLines, MemoryHostLines, Taken
from taskcrawler.queue.redis import RedisHostLines, RedisQueue, redis_client
from taskcrawler.worker.frontier import HostFrontier


class Urls:
    """A WorkRepository that only answers which ids are claimable, and where they point."""

    def __init__(self) -> None:
        self.urls: dict[UUID, str] = {}

    def add(self, url: str, n: int = 1) -> list[UUID]:
        ids = [uuid.uuid4() for _ in range(n)]
        self.urls |= dict.fromkeys(ids, url)
        return ids

    async def claimable_urls(self, job_ids: Sequence[UUID]) -> dict[UUID, str]:
        return {i: self.urls[i] for i in job_ids if i in self.urls}


@pytest.fixture(params=["memory", "redis"])
async def lines(
    request: pytest.FixtureRequest, redis_url: str, redis_prefix: str
) -> AsyncIterator[HostLines]:
    if request.param == "memory":
        yield MemoryHostLines()
        return
    client = redis_client(redis_url)
    try:
        yield RedisHostLines(client, prefix=redis_prefix)
    finally:
        await client.aclose()


def entries(host: str, ids: Sequence[UUID]) -> list[tuple[str, str, UUID]]:
    return [(host, f"http://{host}/", job_id) for job_id in ids]


async def test_hosts_are_served_in_turn_and_a_duplicate_waits_once(lines: HostLines) -> None:
    a, b = [uuid.uuid4() for _ in range(3)], [uuid.uuid4() for _ in range(2)]
    assert await lines.park(entries("a.test", a) + entries("b.test", b)) == 5
    assert await lines.park(entries("a.test", a[:1])) == 0  # published again: left out
    assert await lines.size() == 5
    ready = await lines.ready(10)
    assert ready.lines == 2
    assert [(w.host, w.url, w.count) for w in ready.hosts] == [
        ("a.test", "http://a.test/", 3),
        ("b.test", "http://b.test/", 2),
    ]
    assert await lines.take({"a.test": 2}) == {"a.test": Taken(a[:2], 1)}
    assert [w.host for w in (await lines.ready(10)).hosts] == ["b.test", "a.test"]  # a.test last
    taken = await lines.take({"a.test": 5, "b.test": 5})
    assert taken == {"a.test": Taken(a[2:], 0), "b.test": Taken(b, 0)}
    assert (await lines.ready(10)).lines == 0 and await lines.size() == 0


async def test_a_resting_host_is_offered_again_once_woken(lines: HostLines) -> None:
    ids = [uuid.uuid4() for _ in range(2)]
    await lines.park(entries("busy.test", ids))
    assert await lines.take({}, {"busy.test": 60.0}) == {}
    resting = await lines.ready(10)
    assert resting.hosts == [] and resting.lines == 1  # no worker asks it for a slot yet
    [woken] = (await lines.ready(10, wake=["busy.test"])).hosts  # a slot of it came back
    assert (woken.host, woken.count) == ("busy.test", 2)


async def test_two_worker_hosts_take_from_the_same_lines(redis_url: str, redis_prefix: str) -> None:
    """Ids the first worker parked for a busy host are taken by the second once a slot is free:
    nothing waits in the memory of the worker that read it from the queue."""
    urls = Urls()
    ids = urls.add("http://shared.test/p", 4)
    limiter = MemoryHostLimiter(2)  # the one politeness both workers share (Redis's in production)
    clients = [redis_client(redis_url) for _ in range(2)]
    try:
        first, second = (
            HostFrontier(
                urls,  # type: ignore[arg-type]
                RedisHostLines(client, prefix=redis_prefix),
                limiter,
                lambda url: (True, None),
            )
            for client in clients
        )
        await first.park(ids)
        taken = await first.take(10)
        assert [a.job_id for a in taken] == ids[:2]  # the host's two slots
        assert await first.take(10) == []  # none free: the other two wait, unclaimed
        for admitted in taken:
            first.done(admitted)  # fetched: slots back, the host woken for every worker
        # The wake goes to Redis with this worker's next look, the host's rest over for both.
        assert [a.job_id for a in await first.take(1)] == ids[2:3]
        assert [a.job_id for a in await second.take(10)] == ids[3:]
    finally:
        for client in clients:
            await client.aclose()


async def test_the_queue_depth_counts_ids_waiting_in_the_lines(
    redis_url: str, redis_prefix: str
) -> None:
    """The backlog (the queue depth metric, the sweeper's drained check) includes a busy host's
    ids waiting in its line."""
    client = redis_client(redis_url)
    try:
        queue = RedisQueue(client, prefix=redis_prefix)
        await queue.publish([uuid.uuid4()])
        await RedisHostLines(client, prefix=redis_prefix).park(
            entries("a.test", [uuid.uuid4(), uuid.uuid4()])
        )
        assert await queue.depth() == 3
    finally:
        await client.aclose()
