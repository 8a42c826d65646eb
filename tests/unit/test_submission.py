"""The API's submissions: answered once the rows are committed, published afterwards, grouped;
a queue that is down leaves the jobs to the sweeper, marked due at once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast
from uuid import UUID

import pytest

from taskcrawler.domain import Job, JobStatus, QueueUnavailable, StorageUnavailable
from taskcrawler.queue import JobQueue
from taskcrawler.service.submission import Submitter
from taskcrawler.storage import Created, JobStore, NewJob, WorkStore


class Jobs:
    """Every request a new job."""

    def with_pinned_connection(self) -> Jobs:
        return self

    async def create_jobs(self, requests: Sequence[NewJob], **_: Any) -> list[Created]:
        now = datetime.now(UTC)
        return [
            Created(Job(uuid.uuid4(), r.url, JobStatus.PENDING, 0, now), created=True)
            for r in requests
        ]


class Queue:
    def __init__(self) -> None:
        self.published: list[list[UUID]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.down = False

    async def publish(self, job_ids: Sequence[UUID]) -> None:
        await self.gate.wait()
        if self.down:
            raise QueueUnavailable("redis: connection refused")
        self.published.append(list(job_ids))


class Work:
    def __init__(self, *, down: bool = False) -> None:
        self.marked: list[UUID] = []
        self.down = down

    async def mark_dispatch_due(self, job_ids: Sequence[UUID]) -> None:
        if self.down:
            raise StorageUnavailable("database down")
        self.marked += job_ids


def submitter(queue: Queue, work: Work | None = None) -> Submitter:
    return Submitter(
        cast(JobStore, Jobs()),
        cast(WorkStore, work or Work()),
        cast(JobQueue, queue),
        redispatch_after=30,
    )


async def test_a_submission_is_answered_before_its_id_is_published() -> None:
    queue = Queue()
    queue.gate.clear()  # Redis is slow
    sub = submitter(queue)
    created = await asyncio.wait_for(sub.submit(NewJob("http://a.test/")), 5)
    assert queue.published == []
    queue.gate.set()
    await sub.close()
    assert queue.published == [[created.job.id]]


async def test_ids_committed_while_a_publish_is_out_are_published_together() -> None:
    queue = Queue()
    queue.gate.clear()
    sub = submitter(queue)
    first = await sub.submit(NewJob("http://a.test/1"))
    later = await asyncio.gather(*(sub.submit(NewJob(f"http://a.test/{n}")) for n in range(2, 6)))
    queue.gate.set()
    await sub.close()
    assert queue.published[0] == [first.job.id]
    assert sorted(queue.published[1]) == sorted(c.job.id for c in later)
    assert len(queue.published) == 2


async def test_with_the_queue_down_the_jobs_are_marked_due_for_the_sweeper() -> None:
    queue, work = Queue(), Work()
    queue.down = True
    sub = submitter(queue, work)
    created = await sub.create_now([NewJob("http://a.test/1"), NewJob("http://a.test/2")])
    await sub.close()
    assert work.marked == [c.job.id for c in created]
    # and the publisher is not stuck: the next ids go out once the queue is back
    queue.down = False
    again = await sub.submit(NewJob("http://a.test/3"))
    await sub.close()
    assert queue.published == [[again.job.id]]


async def test_queue_and_database_both_down_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = Queue()
    queue.down = True
    sub = submitter(queue, Work(down=True))
    await sub.submit(NewJob("http://a.test/"))
    await sub.close()
    assert "could not mark 1 jobs due" in caplog.text
