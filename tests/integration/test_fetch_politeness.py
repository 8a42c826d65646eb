"""Politeness through the real Redis: shared by limiter instances and by separate processes."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from taskcrawler.domain import ErrorCode, FetchError
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.politeness import (
    HostBusyError,
    MemoryHostLimiter,
    RedisHostLimiter,
    SlotAsk,
    make_host_limiter,
)
from tests.support.hostile import HostileServer, fetch_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def redis(redis_url: str, redis_prefix: str) -> AsyncIterator[tuple[Redis, str]]:
    """The session's Redis and a key prefix of this test's own (deleted afterwards)."""
    client = Redis.from_url(redis_url)
    yield client, redis_prefix
    await client.aclose()


@pytest.fixture
async def server() -> AsyncIterator[HostileServer]:
    running = await HostileServer().start()
    yield running
    await running.stop()


def _limiter(redis: tuple[Redis, str], **options: float) -> RedisHostLimiter:
    client, prefix = redis
    values: dict[str, float] = {"concurrency": 3, "lease_seconds": 30.0}
    values.update(options)
    return RedisHostLimiter(
        client,
        concurrency=int(values["concurrency"]),
        delay_seconds=values.get("delay_seconds", 0.0),
        lease_seconds=values["lease_seconds"],
        prefix=prefix,
    )


async def test_instances_sharing_redis_share_the_limit(
    redis: tuple[Redis, str], server: HostileServer
) -> None:
    """Three fetchers (as three workers would) and 90 fetches: the host sees at most 3."""
    server.page_delay = 0.02
    settings = fetch_settings(allow_private_networks=True)
    fetchers = [Fetcher(settings, limiter=_limiter(redis)) for _ in range(3)]
    try:
        await asyncio.gather(*(fetchers[i % 3].fetch(server.url(f"/page/{i}")) for i in range(90)))
    finally:
        for fetcher in fetchers:
            await fetcher.close()
    assert server.max_in_flight == 3
    client, _prefix = redis
    leases = _limiter(redis).keys("127.0.0.1")[0]
    assert await client.zcard(leases) == 0  # every slot was handed back


async def test_starts_are_spaced_by_the_delay(redis: tuple[Redis, str]) -> None:
    """Starts are spaced on Redis's clock, where the script grants them: each lease's score is
    its grant time plus the lease. A time taken in this process after a grant would be late by
    however long the loaded machine took to hand the reply on, and a late first start makes the
    next gap look short; Redis's clock has no such lateness."""
    lease_seconds, delay_seconds, count = 30.0, 0.05, 6
    limiters = [
        _limiter(redis, concurrency=10, delay_seconds=delay_seconds, lease_seconds=lease_seconds)
        for _ in range(2)
    ]
    client, _prefix = redis
    leases = limiters[0].keys("a.test")[0]
    held, all_held = 0, asyncio.Event()
    granted_ms: list[float] = []

    async def one(limiter: RedisHostLimiter) -> None:
        nonlocal held
        async with limiter.slot("a.test"):
            held += 1
            if held == count:
                # Every lease is still held (none released yet), so all six scores are there.
                scores = await client.zrange(leases, 0, -1, withscores=True)
                granted_ms.extend(score - lease_seconds * 1000 for _token, score in scores)
                all_held.set()
            await all_held.wait()

    await asyncio.wait_for(asyncio.gather(*(one(limiters[i % 2]) for i in range(count))), 60)
    assert len(granted_ms) == count
    gaps_ms = [b - a for a, b in itertools.pairwise(sorted(granted_ms))]
    assert min(gaps_ms) >= delay_seconds * 1000, gaps_ms


async def test_a_crashed_holders_slot_frees_itself(redis: tuple[Redis, str]) -> None:
    crashed = _limiter(redis, concurrency=1, lease_seconds=1.0)
    await crashed._acquire("a.test")  # taken and never released: the process "died"
    survivor = _limiter(redis, concurrency=1, lease_seconds=1.0)
    with pytest.raises(HostBusyError):
        async with survivor.slot("a.test", max_wait=0.1):
            pass
    # Without the lease's expiry this would wait the whole 10 s and raise HostBusyError; no
    # timing is asserted, so a loaded machine cannot make it flaky.
    async with survivor.slot("a.test", max_wait=10):
        pass


async def test_a_cancelled_fetch_hands_its_slot_back(redis: tuple[Redis, str]) -> None:
    limiter = _limiter(redis, concurrency=1)
    holding = asyncio.Event()

    async def hold() -> None:
        async with limiter.slot("a.test"):
            holding.set()
            await asyncio.sleep(60)

    task = asyncio.create_task(hold())
    await asyncio.wait_for(holding.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Well under the 30 s lease: only a slot handed back comes within it.
    async with limiter.slot("a.test", max_wait=10):
        pass


async def test_slots_released_together_go_back_in_one_round_trip(
    redis: tuple[Redis, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    limiter = _limiter(redis, concurrency=20)
    round_trips = 0
    pipeline = limiter._redis.pipeline

    def counting_pipeline(*args: object, **kwargs: object) -> object:
        nonlocal round_trips
        round_trips += 1
        return pipeline(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(limiter._redis, "pipeline", counting_pipeline)
    release, all_held = asyncio.Event(), asyncio.Event()
    held = 0

    async def hold(host: str) -> None:
        nonlocal held
        async with limiter.slot(host):
            held += 1
            if held == 20:
                all_held.set()
            await release.wait()

    holders = [asyncio.create_task(hold(f"h{i % 2}.test")) for i in range(20)]
    await all_held.wait()
    release.set()
    await asyncio.gather(*holders)
    await limiter.close()
    assert round_trips == 1
    client, _prefix = redis
    for host in ("h0.test", "h1.test"):
        assert await client.zcard(limiter.keys(host)[0]) == 0
        assert limiter._local.in_flight(host) == 0


async def test_a_release_redis_refuses_still_opens_the_local_gate(
    redis: tuple[Redis, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease then expires in Redis; this process must not stay blocked until it does."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    limiter = _limiter(redis, concurrency=1)
    async with limiter.slot("a.test"):

        def broken_pipeline(*args: object, **kwargs: object) -> object:
            raise RedisConnectionError("gone")

        monkeypatch.setattr(limiter._redis, "pipeline", broken_pipeline)
    await limiter.close()
    assert limiter._local.in_flight("a.test") == 0


async def test_tasks_waiting_together_get_their_leases_in_one_round_trip(
    redis: tuple[Redis, str],
) -> None:
    limiter = _limiter(redis, concurrency=30)
    calls = 0
    script = limiter._acquire_script

    async def counting_script(**kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return await script(**kwargs)

    limiter._acquire_script = counting_script  # type: ignore[assignment]
    tokens = await asyncio.gather(*(limiter.hold("a.test", None) for _ in range(25)))
    assert calls == 1
    client, _prefix = redis
    assert await client.zcard(limiter.keys("a.test")[0]) == 25
    for token in tokens:
        limiter.release("a.test", token)
    await limiter.close()
    assert await client.zcard(limiter.keys("a.test")[0]) == 0


async def test_only_the_free_slots_are_granted_and_the_rest_wait_their_turn(
    redis: tuple[Redis, str],
) -> None:
    limiter = _limiter(redis, concurrency=3)
    in_flight = peak = 0
    order: list[int] = []

    async def one(i: int) -> None:
        nonlocal in_flight, peak
        async with limiter.slot("a.test"):
            order.append(i)
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1

    await asyncio.gather(*(one(i) for i in range(12)))
    await limiter.close()
    assert peak == 3
    assert sorted(order) == list(range(12))


async def test_a_lease_granted_to_a_task_that_gave_up_is_handed_back(
    redis: tuple[Redis, str],
) -> None:
    limiter = _limiter(redis, concurrency=2)
    script = limiter._acquire_script
    waiter: asyncio.Task[str] | None = None

    async def cancelling_script(**kwargs: Any) -> Any:
        assert waiter is not None
        waiter.cancel()  # gives up while Redis is granting its lease
        return await script(**kwargs)

    limiter._acquire_script = cancelling_script  # type: ignore[assignment]
    waiter = asyncio.create_task(limiter.hold("a.test", None))
    with pytest.raises(asyncio.CancelledError):
        await waiter
    # The asker hands out (queueing the release) and ends; closing flushes the release.
    await asyncio.wait_for(asyncio.gather(*limiter._askers.values()), 30)
    await limiter.close()
    client, _prefix = redis
    assert await client.zcard(limiter.keys("a.test")[0]) == 0
    assert limiter._local.in_flight("a.test") == 0


async def test_an_unexpected_error_asking_reaches_every_waiting_task(
    redis: tuple[Redis, str],
) -> None:
    limiter = _limiter(redis, concurrency=5)

    async def broken_script(**kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    limiter._acquire_script = broken_script  # type: ignore[assignment]
    results = await asyncio.gather(
        *(limiter.hold("a.test", None) for _ in range(3)), return_exceptions=True
    )
    assert [type(r) for r in results] == [RuntimeError] * 3
    assert limiter._local.in_flight("a.test") == 0
    assert not limiter._askers


async def test_the_fetcher_reports_host_busy_instead_of_waiting(
    redis: tuple[Redis, str], server: HostileServer
) -> None:
    # The holder takes the one slot first (a wait as long as it needs), and its page answers
    # only once the other, asking with a short wait, has been refused: however slow the
    # machine, the slot is held all the while.
    gate = server.page_gate = asyncio.Event()
    limiter = _limiter(redis, concurrency=1)
    settings = fetch_settings(allow_private_networks=True)
    holder = Fetcher(settings, limiter=limiter)
    waiter = Fetcher(settings, limiter=limiter, host_wait_seconds=0.05)
    try:
        holding = asyncio.create_task(holder.fetch(server.url("/page")))
        async with asyncio.timeout(30):  # a bound on a hang, not on the machine's speed
            await server.page_reached.wait()
        with pytest.raises(FetchError) as refused:
            await waiter.fetch(server.url("/page"))
        gate.set()
        await holding
    finally:
        gate.set()
        await holder.close()
        await waiter.close()
    assert refused.value.code == ErrorCode.HOST_BUSY
    assert refused.value.transient is True
    assert server.hits["/page"] == 1


async def test_waiting_past_the_deadline_is_host_busy_not_timeout(
    server: HostileServer,
) -> None:
    # One host slot, held by a fetch that times out long after the waiter's own deadline: the
    # waiter spends all its time waiting (host_busy), the holder all its time fetching (timeout).
    # Deadlines far apart, so a slow machine cannot swap who runs out first.
    server.page_delay = 3.0
    limiter = MemoryHostLimiter(1)
    holder = Fetcher(
        fetch_settings(allow_private_networks=True, fetch_timeout_seconds=1.5), limiter=limiter
    )
    waiter = Fetcher(
        fetch_settings(allow_private_networks=True, fetch_timeout_seconds=0.5), limiter=limiter
    )
    try:
        holding = asyncio.create_task(holder.fetch(server.url("/page")))
        for _ in range(3000):  # until the holder has the slot (30 s at most)
            if limiter.in_flight("127.0.0.1"):
                break
            await asyncio.sleep(0.01)
        assert limiter.in_flight("127.0.0.1") == 1
        with pytest.raises(FetchError) as waited:
            await waiter.fetch(server.url("/page"))
        with pytest.raises(FetchError) as held:
            await holding
    finally:
        await holder.close()
        await waiter.close()
    assert waited.value.code is ErrorCode.HOST_BUSY
    assert held.value.code is ErrorCode.TIMEOUT


def test_the_settings_choose_redis_when_given(redis: tuple[Redis, str]) -> None:
    client, _prefix = redis
    limiter = make_host_limiter(fetch_settings(host_concurrency=4), client)
    assert isinstance(limiter, RedisHostLimiter)


WORKER_SCRIPT = """
import asyncio, json, sys
from redis.asyncio import Redis
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.politeness import RedisHostLimiter
from tests.support.hostile import fetch_settings

async def main(url, redis_url, prefix, count):
    redis = Redis.from_url(redis_url)
    limiter = RedisHostLimiter(redis, concurrency=4, lease_seconds=30, prefix=prefix)
    # The deadline covers the wait for a slot: 100 fetches queue behind 4 slots, so a loaded
    # host would fail the last ones on the usual 5 s; the limit is under test, not the deadline.
    fetcher = Fetcher(fetch_settings(allow_private_networks=True, worker_concurrency=50,
                                     fetch_timeout_seconds=60.0),
                      limiter=limiter)
    try:
        pages = await asyncio.gather(*(fetcher.fetch(f"{url}/page/{i}") for i in range(count)))
    finally:
        await fetcher.close()
        await redis.aclose()
    print(json.dumps({"ok": sum(p.status == 200 for p in pages)}))

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


@pytest.mark.slow
async def test_two_processes_never_exceed_the_host_limit(
    redis: tuple[Redis, str], redis_url: str, server: HostileServer
) -> None:
    """Two worker-like processes, 200 fetches to one host, limit 4: the host never sees 5."""
    _client, prefix = redis
    server.page_delay = 0.01
    base = f"http://127.0.0.1:{server.port}"
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WORKER_SCRIPT,
            base,
            redis_url,
            prefix,
            "100",
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outputs = [await asyncio.wait_for(p.communicate(), 60) for p in processes]
    assert [p.returncode for p in processes] == [0, 0]
    assert [json.loads(out)["ok"] for out, _err in outputs] == [100, 100]
    assert sum(n for path, n in server.hits.items() if path.startswith("/page/")) == 200
    assert server.max_in_flight == 4


async def test_slots_taken_without_waiting_are_shared_by_every_instance(
    redis: tuple[Redis, str],
) -> None:
    """What a worker asks before it claims: the free slots of many hosts in one round trip,
    never more than the host's limit across workers, each back in Redis once given back."""
    first, second = _limiter(redis), _limiter(redis)
    asks = [SlotAsk("a.test", 5), SlotAsk("b.test", 2)]
    got = await first.try_slots_each(asks)
    assert [len(slots.tokens) for slots in got] == [3, 2]
    [none] = await second.try_slots_each([SlotAsk("a.test", 5)])
    assert none.tokens == [] and none.retry_in is None  # full: nothing to wait for but a release
    first.give_back("a.test", got[0].tokens[0])
    await first.close()  # the release is flushed
    [one] = await second.try_slots_each([SlotAsk("a.test", 5)])
    assert len(one.tokens) == 1


async def test_slots_taken_without_waiting_keep_the_gap_between_starts(
    redis: tuple[Redis, str],
) -> None:
    limiter = _limiter(redis, delay_seconds=30)
    [first] = await limiter.try_slots_each([SlotAsk("gap.test", 3)])
    assert len(first.tokens) == 1
    [later] = await limiter.try_slots_each([SlotAsk("gap.test", 3)])
    assert later.tokens == [] and later.retry_in is not None and 25 < later.retry_in <= 30


async def test_a_fetch_in_a_slot_its_caller_holds_takes_no_other(server: HostileServer) -> None:
    """A host allowing one request at a time, its one slot taken before the fetch (as the
    worker does before it claims): robots.txt, the redirects and the page go out in that slot.
    Had the fetch asked for another, it would have waited for good (host_busy)."""
    server.robots_status, server.robots_body = 200, "User-agent: *\nAllow: /\n"
    limiter = MemoryHostLimiter(1)
    fetcher = Fetcher(
        fetch_settings(allow_private_networks=True, respect_robots=True),
        limiter=limiter,
        host_wait_seconds=0.2,
    )
    try:
        slots = await limiter.try_slots("127.0.0.1", 1)
        assert len(slots.tokens) == 1
        page = await fetcher.fetch(server.url("/chain/2"), held_host="127.0.0.1")
        assert page.status == 200
        assert fetcher.robots_known(server.url("/")) == (True, None)
        with pytest.raises(HostBusyError):  # without saying so, the fetch waits its turn
            await fetcher.fetch(server.url("/page"))
        limiter.give_back("127.0.0.1", slots.tokens[0])
        assert (await fetcher.fetch(server.url("/page"))).status == 200
    finally:
        await fetcher.close()
