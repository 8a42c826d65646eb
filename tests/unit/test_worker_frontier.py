"""The worker's host frontier over lines of its own process: ids wait for their host's slot
before they are claimed, a busy host holds up no other host, slots come back and are passed
on, and nothing is left behind. (The same over Redis: tests/integration/test_host_lines.py.)"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import pytest

from taskcrawler.domain import QueueUnavailable
from taskcrawler.fetch.politeness import MemoryHostLimiter, SlotAsk, Slots
from taskcrawler.queue import MemoryHostLines
from taskcrawler.queue.base import Ready
from taskcrawler.worker.frontier import HostFrontier, host_of


class Urls:
    """A WorkRepository that only answers which ids are claimable, and where they point."""

    def __init__(self) -> None:
        self.urls: dict[UUID, str] = {}
        self.reads = 0

    def add(self, url: str, n: int = 1) -> list[UUID]:
        ids = [uuid.uuid4() for _ in range(n)]
        self.urls |= dict.fromkeys(ids, url)
        return ids

    async def claimable_urls(self, job_ids: Sequence[UUID]) -> dict[UUID, str]:
        self.reads += 1
        return {i: self.urls[i] for i in job_ids if i in self.urls}


def frontier(
    urls: Urls, limiter: MemoryHostLimiter | None, robots: Any = None, **bounds: int
) -> HostFrontier:
    known = robots or (lambda url: (True, None))
    return HostFrontier(urls, MemoryHostLines(**bounds), limiter, known)  # type: ignore[arg-type]


async def test_a_busy_host_holds_up_no_other_host() -> None:
    urls = Urls()
    slow = urls.add("http://slow.test/p", 20)
    fast = urls.add("http://fast.test/p", 3)
    gate = frontier(urls, MemoryHostLimiter(2))
    await gate.park(slow + fast)

    first = await gate.take(10)
    assert [a.job_id for a in first] == slow[:2] + fast[:2]  # two slots each
    assert {a.host for a in first} == {"slow.test", "fast.test"}
    assert await gate.lines.size() == 19  # the rest wait, unclaimed
    assert await gate.take(10) == []  # no slot is free: nothing to claim

    for admitted in first:
        if admitted.host == "fast.test":
            gate.done(admitted)
    [last_fast] = await gate.take(10)
    assert last_fast.job_id == fast[2]


async def test_a_finished_fetch_passes_its_slot_to_the_next_id_of_its_host() -> None:
    urls = Urls()
    ids = urls.add("http://one.test/", 3)
    limiter = MemoryHostLimiter(1)
    gate = frontier(urls, limiter)
    await gate.park(ids)
    [first] = await gate.take(5)
    gate.done(first, pass_on=True)
    assert limiter.in_flight("one.test") == 1  # not handed back: passed on
    [second] = await gate.take(5)
    assert (second.job_id, second.token) == (ids[1], first.token)
    gate.done(second)  # not fetched (not claimed, say): handed back
    assert limiter.in_flight("one.test") == 0
    [third] = await gate.take(5)
    assert third.job_id == ids[2]
    gate.done(third, pass_on=True)  # nothing of its host is left to pass it to
    assert limiter.in_flight("one.test") == 0
    assert await gate.lines.size() == 0


async def test_a_host_that_spaces_its_requests_never_passes_a_slot_on() -> None:
    urls = Urls()
    ids = urls.add("http://polite.test/", 2)
    limiter = MemoryHostLimiter(4, delay_seconds=60)
    gate = frontier(urls, limiter)
    await gate.park(ids)
    [first] = await gate.take(5)  # one start per gap, however many slots
    gate.done(first, pass_on=True)
    assert limiter.in_flight("polite.test") == 0
    assert await gate.take(5) == []  # resting until its gap is over
    assert (await gate.lines.ready(5)).hosts == []
    assert gate.waiting  # one line has ids: the worker looks again soon


async def test_until_robots_txt_is_known_a_host_gets_one_fetch_at_a_time() -> None:
    urls = Urls()
    ids = urls.add("http://new.test/", 3)
    known = {"value": False}
    gate = frontier(urls, MemoryHostLimiter(8), robots=lambda url: (known["value"], None))
    await gate.park(ids)
    [first] = await gate.take(8)
    assert await gate.take(8) == []  # its robots.txt is being read by the first fetch
    known["value"] = True
    gate.done(first)
    assert [a.job_id for a in await gate.take(8)] == ids[1:]


async def test_ids_not_claimable_or_already_parked_are_not_parked_twice() -> None:
    urls = Urls()
    [job] = urls.add("http://a.test/")
    gone = uuid.uuid4()  # completed meanwhile: no longer claimable
    gate = frontier(urls, MemoryHostLimiter(1))
    await gate.park([job, gone])
    await gate.park([job])  # published again by the sweeper
    assert await gate.lines.size() == 1 and gate.left_out == 1


async def test_past_its_bounds_an_id_is_left_for_the_sweeper() -> None:
    urls = Urls()
    many = urls.add("http://big.test/", 5)
    other = urls.add("http://other.test/", 2)
    gate = frontier(urls, MemoryHostLimiter(1), max_per_host=3, max_total=4)
    await gate.park(many + other)
    assert await gate.lines.size() == 4 and gate.left_out == 3
    assert set(await gate.clear()) == set(many[:3] + other[:1])
    assert await gate.lines.size() == 0


async def test_ids_that_could_not_be_claimed_are_returned_with_their_slots_freed() -> None:
    urls = Urls()
    ids = urls.add("http://back.test/", 2)
    limiter = MemoryHostLimiter(1)
    gate = frontier(urls, limiter)
    await gate.park(ids)
    admitted = await gate.take(5)
    assert gate.give_back(admitted) == [ids[0]]  # the database was down: published again
    assert limiter.in_flight("back.test") == 0
    assert [a.job_id for a in await gate.take(5)] == [ids[1]]


async def test_without_politeness_every_id_goes_at_once() -> None:
    urls = Urls()
    ids = urls.add("http://free.test/", 3)
    gate = frontier(urls, None)
    await gate.park(ids)
    admitted = await gate.take(10)
    assert [a.token for a in admitted] == [None, None, None]


def test_the_host_of_a_url_is_its_politeness_key() -> None:
    assert host_of("http://Example.COM.:8080/x") == "example.com"
    assert host_of("not a url") == ""


async def test_a_host_is_forgotten_once_its_last_fetch_ends_and_no_other_host_is() -> None:
    """The frontier keeps state only for hosts with fetches under way: a crawl of many hosts
    must not leave one entry per host ever seen."""
    urls = Urls()
    ones = urls.add("http://one.test/", 2)
    [other] = urls.add("http://other.test/")
    gate = frontier(urls, MemoryHostLimiter(2))
    await gate.park([*ones, other])
    taken = {a.job_id: a for a in await gate.take(10)}
    assert set(taken) == {*ones, other}

    gate.done(taken[ones[0]])
    assert set(gate._hosts) == {"one.test", "other.test"}  # one of one.test's still runs
    gate.done(taken[other])
    assert set(gate._hosts) == {"one.test"}
    gate.done(taken[ones[1]])
    assert gate._hosts == {}


class FailingLines(MemoryHostLines):
    """Lines whose next look at the ready hosts fails (Redis went away)."""

    failing = False

    async def ready(self, max_hosts: int, *, wake: Sequence[str] = ()) -> Ready:
        if self.failing:
            self.failing = False
            raise QueueUnavailable("lines unreachable")
        return await super().ready(max_hosts, wake=wake)


class FailingLimiter(MemoryHostLimiter):
    """A limiter whose next ask for slots fails (Redis went away)."""

    failing = False

    async def try_slots_each(self, asks: Sequence[SlotAsk]) -> list[Slots]:
        if self.failing:
            self.failing = False
            raise QueueUnavailable("politeness unreachable")
        return await super().try_slots_each(asks)


async def spare_slot_of(gate: HostFrontier, ids: list[UUID], other: UUID) -> None:
    """``ids``' host holds one slot, passed on by its finished fetch to the next id;
    ``other``'s host waits for one."""
    await gate.park([*ids, other])
    [first] = await gate.take(1)
    gate.done(first, pass_on=True)


@pytest.mark.parametrize("failing", ["lines", "limiter"])
async def test_a_take_that_fails_hands_back_the_slots_it_took(failing: str) -> None:
    """The slot a finished fetch passed on is taken first; a look at the lines or an ask for
    more slots failing after it must hand it back, or the host has one slot less for good
    (an in-process limiter's slots never expire)."""
    urls = Urls()
    ids = urls.add("http://one.test/", 4)
    [other] = urls.add("http://two.test/")
    lines, limiter = FailingLines(), FailingLimiter(2)
    gate = HostFrontier(urls, lines, limiter, lambda url: (True, None))  # type: ignore[arg-type]
    await spare_slot_of(gate, ids, other)
    assert limiter.in_flight("one.test") == 1
    lines.failing = failing == "lines"
    limiter.failing = failing == "limiter"

    with pytest.raises(QueueUnavailable):
        await gate.take(5)

    assert limiter.in_flight("one.test") == 0
    assert limiter.in_flight("two.test") == 0
    taken = [a.job_id for a in await gate.take(5)]
    assert taken.count(other) == 1 and [i for i in taken if i != other] == ids[1:3]
