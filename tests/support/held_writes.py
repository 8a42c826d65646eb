"""A worker whose first outcome write is held back until every job waits for its own, so the
writes after it show how many transitions one write takes (``outcome_batch``): used by
tests/integration/test_outcome_batches.py and ``python -m bench.outcome_hold``."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from taskcrawler import bootstrap
from taskcrawler.domain.transitions import Transition
from taskcrawler.fetch import Fetcher
from taskcrawler.fetch.politeness import MemoryHostLimiter
from taskcrawler.queue import MemoryQueue
from taskcrawler.settings import Settings
from taskcrawler.storage.ports import WorkRepository
from taskcrawler.worker.worker import Worker
from tests.support.hostile import StaticResolver, fetch_settings


class HeldFirstWrite:
    """The worker's store with the bound ``outcome_batch``, keeping the ids of each write (one
    transaction each); its first write waits for ``release``, so the transitions decided
    meanwhile pile up."""

    def __init__(self, inner: WorkRepository, jobs: int, bound: int) -> None:
        self._inner = inner
        self.jobs = jobs
        self.outcome_batch = bound
        self.writes: list[list[UUID]] = []
        self.first_write = asyncio.Event()
        self.release = asyncio.Event()
        self.final = asyncio.Event()

    async def record_transitions(
        self, transitions: Sequence[Transition], **options: Any
    ) -> list[UUID]:
        if not self.first_write.is_set():
            self.first_write.set()
            await self.release.wait()
        added = await self._inner.record_transitions(transitions, **options)
        self.writes.append([t.job.id for t in transitions])
        if sum(map(len, self.writes)) >= self.jobs:
            self.final.set()
        return added

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class SavesCounted(Worker):
    """A worker that says when ``jobs`` of its attempts have asked for their write."""

    def __init__(self, *args: Any, jobs: int, **options: Any) -> None:
        super().__init__(*args, **options)
        self.jobs = jobs
        self.asked = 0
        self.all_asked = asyncio.Event()

    async def _save(self, transition: Transition) -> None:
        self.asked += 1
        if self.asked >= self.jobs:
            self.all_asked.set()  # this one is handed to the writer before the caller goes on
        await super()._save(transition)


def held_worker(
    store: HeldFirstWrite, queue: MemoryQueue, host: str
) -> tuple[SavesCounted, Fetcher]:
    """A worker of ``store.jobs`` slots for pages of ``host`` (at 127.0.0.1): every job is
    fetched at once, so all of them wait behind the held write."""
    settings = Settings(_env_file=None, worker_concurrency=store.jobs)
    fetcher = Fetcher(
        fetch_settings(allow_private_networks=True),
        resolver=StaticResolver({host: ["127.0.0.1"]}),
        limiter=MemoryHostLimiter(store.jobs),
    )
    worker = SavesCounted(
        bootstrap.worker_config(settings),
        store,
        queue,
        fetcher,
        bootstrap.page_parser(settings),
        jobs=store.jobs,
    )
    return worker, fetcher
