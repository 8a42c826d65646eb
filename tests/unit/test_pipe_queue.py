"""The embedded mode's queue between the API process and its worker process, over a socket pair."""

from __future__ import annotations

import asyncio
import socket
from uuid import UUID, uuid4

from taskcrawler.queue.pipe import PipeReceiver, PipeSender


async def _pair() -> tuple[PipeSender, PipeReceiver, socket.socket]:
    ours, theirs = socket.socketpair()
    sender = PipeSender()
    await sender.attach(ours)
    receiver = PipeReceiver(theirs)
    await receiver.open()
    return sender, receiver, theirs


async def _consume_all(receiver: PipeReceiver, count: int) -> list[UUID]:
    got: list[UUID] = []
    while len(got) < count:
        batch = await receiver.consume(count, wait_seconds=5)
        assert batch, f"only {len(got)} of {count} ids arrived"
        got += batch
    return got


async def test_published_ids_reach_the_receiver_in_order() -> None:
    sender, receiver, _ = await _pair()
    ids = [uuid4() for _ in range(5000)]  # far more than one read of the socket
    for start in range(0, len(ids), 7):
        await sender.publish(ids[start : start + 7])
    assert await _consume_all(receiver, len(ids)) == ids
    await sender.close()
    await receiver.close()


async def test_an_id_split_across_reads_is_put_together() -> None:
    ours, theirs = socket.socketpair()
    receiver = PipeReceiver(theirs)
    await receiver.open()
    job_id = uuid4()
    ours.sendall(job_id.bytes[:5])
    await asyncio.sleep(0.05)
    assert await receiver.depth() == 0
    ours.sendall(job_id.bytes[5:])
    assert await receiver.consume(10, wait_seconds=5) == [job_id]
    ours.close()
    await receiver.close()


async def test_the_receiver_learns_that_the_sender_is_gone() -> None:
    sender, receiver, _ = await _pair()
    assert not receiver.closed.is_set()
    await sender.close()
    async with asyncio.timeout(5):
        await receiver.closed.wait()
    await receiver.close()


async def test_the_workers_own_publishes_stay_in_its_process() -> None:
    sender, receiver, _ = await _pair()
    job_id = uuid4()
    await receiver.publish([job_id])  # handed back, or the sweeper's
    assert await receiver.consume(10, wait_seconds=0) == [job_id]
    await sender.close()
    await receiver.close()


async def test_without_a_worker_process_ids_are_dropped_not_kept() -> None:
    """The database keeps the job; the next worker's first sweep publishes it again."""
    sender = PipeSender()
    await sender.publish([uuid4(), uuid4()])
    assert sender.dropped == 2
    assert await sender.depth() == 0

    sender, receiver, _ = await _pair()
    sender.detach()  # the worker process died
    await sender.publish([uuid4()])
    assert sender.dropped == 1
    await receiver.close()


async def test_a_new_worker_process_gets_the_ids_published_after_it_started() -> None:
    sender, first, _ = await _pair()
    await first.close()
    ours, theirs = socket.socketpair()
    await sender.attach(ours)
    second = PipeReceiver(theirs)
    await second.open()
    job_id = uuid4()
    await sender.publish([job_id])
    assert await second.consume(10, wait_seconds=5) == [job_id]
    await sender.close()
    await second.close()
