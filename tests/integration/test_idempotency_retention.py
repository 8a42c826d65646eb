"""An ``Idempotency-Key`` is remembered for its retention only, on both backends: an expired key
is a new request even before its answer is deleted, and the sweeper deletes expired answers in
bounded batches, keeping the younger ones (a client sending a new key with every request grew
the table for ever)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from prometheus_client import CollectorRegistry

from taskcrawler import bootstrap
from taskcrawler.bootstrap import Runtime
from taskcrawler.domain.errors import Conflict
from taskcrawler.domain.idempotency import IdempotencyRetention, StoredResponse
from taskcrawler.domain.keys import Caller
from taskcrawler.observability.metrics import WorkerMetrics
from taskcrawler.queue import MemoryQueue
from taskcrawler.service.idempotency import IdempotencyService
from taskcrawler.settings import Settings
from taskcrawler.storage import Storage
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.idempotency import IdempotencyStore
from taskcrawler.storage.tables import idempotent_requests
from taskcrawler.worker.sweeper import SweepConfig, Sweeper

T0 = datetime(2030, 1, 1, tzinfo=UTC)
DAY = IdempotencyRetention(keep_hours=24)


@pytest.fixture
async def storage(database_url: str) -> AsyncIterator[Storage]:
    store = Storage.on(open_database(database_url, pool_size=5))
    yield store
    await store.close()


class Clock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Counted:
    """The store, each deletion's count recorded."""

    def __init__(self, store: IdempotencyStore) -> None:
        self.store = store
        self.deleted: list[int] = []

    async def get(self, owner: str, key: str, *, since: datetime) -> StoredResponse | None:
        return await self.store.get(owner, key, since=since)

    async def forget_before(self, since: datetime, *, limit: int) -> int:
        done = await self.store.forget_before(since, limit=limit)
        self.deleted.append(done)
        return done


async def stored_at(storage: Storage, keys: list[str], at: datetime) -> None:
    for key in keys:
        answer = StoredResponse("hash", 201, {"key": key})
        assert (
            await storage.idempotency.claim("o", key, "hash", at=at, since=at, stale_before=at)
            is None
        )
        await storage.idempotency.fulfil("o", key, answer, at=at)


async def keys_held(storage: Storage) -> set[str]:
    async with storage.db.read() as conn:
        return set((await conn.execute(sa.select(idempotent_requests.c.key))).scalars())


def sweeper(storage: Storage, answers: Counted, clock: Clock, **config: Any) -> Sweeper:
    return Sweeper(
        SweepConfig(idempotency=DAY, **config),
        storage.work,
        MemoryQueue(),
        answers=answers,
        clock=clock,
    )


async def test_an_expired_key_is_answered_as_a_new_request(storage: Storage) -> None:
    """Its answer is not deleted yet: the key is new all the same, and its new answer is the
    one repeats get from then on."""
    clock = Clock()
    service = IdempotencyService(storage.idempotency, DAY, clock=clock)
    produced: list[int] = []

    async def produce() -> tuple[int, Any]:
        produced.append(len(produced))
        return 201, {"answer": len(produced)}

    assert await service.answer_once(Caller("o"), "k", "h1", produce) == (201, {"answer": 1})
    clock.now = T0 + timedelta(hours=23, minutes=59)
    assert await service.answer_once(Caller("o"), "k", "h1", produce) == (201, {"answer": 1})
    with pytest.raises(Conflict):
        await service.answer_once(Caller("o"), "k", "another", produce)

    clock.now = T0 + timedelta(hours=24, seconds=1)
    # Expired: another request with the key is no conflict, but a new request.
    assert await service.answer_once(Caller("o"), "k", "h2", produce) == (201, {"answer": 2})
    clock.now += timedelta(hours=23)
    assert await service.answer_once(Caller("o"), "k", "h2", produce) == (201, {"answer": 2})
    assert produced == [0, 1]
    assert await keys_held(storage) == {"k"}


async def test_a_sweep_deletes_expired_answers_in_batches_and_keeps_younger_ones(
    storage: Storage,
) -> None:
    clock = Clock()
    await stored_at(storage, ["old1", "old2", "old3", "old4", "old5"], T0 - timedelta(days=2))
    await stored_at(storage, ["edge"], T0 - timedelta(hours=24, seconds=1))
    await stored_at(storage, ["young", "newest"], T0 - timedelta(hours=23))
    answers = Counted(storage.idempotency)  # type: ignore[arg-type]

    await sweeper(storage, answers, clock, forget_batch=2).sweep()

    assert answers.deleted == [2, 2, 2, 0]
    assert await keys_held(storage) == {"young", "newest"}
    assert await storage.idempotency.get("o", "young", since=DAY.oldest_kept(T0)) is not None


async def test_a_sweep_deletes_no_more_than_its_batches(storage: Storage) -> None:
    """What one pass leaves, the next sweep takes; then none until ``forget_seconds`` pass."""
    clock = Clock()
    await stored_at(storage, [f"old{n}" for n in range(5)], T0 - timedelta(days=2))
    answers = Counted(storage.idempotency)  # type: ignore[arg-type]
    sweeping = sweeper(storage, answers, clock, forget_batch=2, forget_batches=2)

    await sweeping.sweep()
    assert answers.deleted == [2, 2]
    assert len(await keys_held(storage)) == 1

    await sweeping.sweep()
    assert answers.deleted == [2, 2, 1]
    assert await keys_held(storage) == set()

    await stored_at(storage, ["later"], T0 - timedelta(days=2))
    await sweeping.sweep()  # within forget_seconds of the last pass, which ended the backlog
    assert answers.deleted == [2, 2, 1]
    clock.now += timedelta(seconds=SweepConfig().forget_seconds)
    await sweeping.sweep()
    assert answers.deleted == [2, 2, 1, 1]
    assert sweeping.forgotten == 6
    assert await keys_held(storage) == set()


@pytest.mark.parametrize("hours", [0, -1, 10 * 366 * 24 + 1])
def test_a_retention_is_positive_and_bounded(hours: float) -> None:
    with pytest.raises(ValueError, match="keep_hours"):
        IdempotencyRetention(keep_hours=hours)


async def test_every_sweeping_worker_deletes_expired_answers(sqlite_url: str) -> None:
    """The API deletes none (docs/architecture.md, the sweep): the worker a deployment runs is
    given the answers and their retention, or nothing ever deletes them."""
    settings = Settings(_env_file=None, database_url=sqlite_url, idempotency_retention_hours=5)
    runtime = Runtime.open(settings)
    fetcher = bootstrap.fetcher(settings)
    parser = bootstrap.page_parser(settings)
    try:
        metrics = WorkerMetrics(CollectorRegistry())
        worker = bootstrap.worker(runtime, fetcher, parser, metrics)
        assert worker.config.sweeps
        assert worker.sweeper.answers is runtime.storage.idempotency
        assert worker.sweeper.config.idempotency == IdempotencyRetention(keep_hours=5)
    finally:
        await parser.aclose()
        await fetcher.close()
        await runtime.close()


async def test_concurrent_requests_with_one_key_run_the_work_once(storage: Storage) -> None:
    """The key is claimed before the work runs: a repeat sent while the first is still being
    answered waits for its answer, and another request with the key is a conflict at once,
    rather than both creating their jobs."""
    service = IdempotencyService(storage.idempotency, DAY)
    produced: list[str] = []
    started = asyncio.Event()
    release = asyncio.Event()

    async def produce() -> tuple[int, Any]:
        produced.append("job")
        started.set()
        await release.wait()
        return 201, {"id": len(produced)}

    first = asyncio.create_task(service.answer_once(Caller("o"), "k", "h1", produce))
    await started.wait()
    with pytest.raises(Conflict):
        await service.answer_once(Caller("o"), "k", "other", produce)
    repeat = asyncio.create_task(service.answer_once(Caller("o"), "k", "h1", produce))
    await asyncio.sleep(0.05)
    release.set()
    assert await first == (201, {"id": 1})
    assert await repeat == (201, {"id": 1})
    assert produced == ["job"]


async def test_a_failed_request_frees_its_key(storage: Storage) -> None:
    service = IdempotencyService(storage.idempotency, DAY)

    async def fail() -> tuple[int, Any]:
        raise RuntimeError("boom")

    async def produce() -> tuple[int, Any]:
        return 201, {"id": 2}

    with pytest.raises(RuntimeError):
        await service.answer_once(Caller("o"), "k", "h1", fail)
    assert await service.answer_once(Caller("o"), "k", "h1", produce) == (201, {"id": 2})
