"""Group commit: many concurrent callers, few round trips.

While ``concurrency`` flushes run, new items wait; the next free flush takes all of them (up to
``max_batch``). Under load, batches grow by themselves and round trips per item fall; when idle,
an item is flushed at once, so there is no added latency to tune.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Coalescer(Generic[T, R]):
    def __init__(
        self,
        flush: Callable[[Sequence[T]], Awaitable[Sequence[R]]],
        *,
        max_batch: int = 500,
        concurrency: int = 1,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._flush = flush
        self._max_batch = max_batch
        self._concurrency = concurrency
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._drainers: set[asyncio.Task[None]] = set()  # strong references while they run
        self._draining = 0  # counted down inside the task, not in a done callback: see _drain

    async def submit(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._draining < self._concurrency:
            self._draining += 1
            drainer = asyncio.create_task(self._drain())
            self._drainers.add(drainer)
            drainer.add_done_callback(self._drainers.discard)
        return await future

    async def submit_many(self, items: Sequence[T]) -> list[R]:
        return list(await asyncio.gather(*(self.submit(item) for item in items)))

    async def _drain(self) -> None:
        # The count drops in the same step that finds nothing pending: a drainer that has
        # stopped looking must not be counted, or an item submitted before its done callback
        # runs would wait with nobody to flush it.
        try:
            while self._pending:
                batch = self._pending[: self._max_batch]
                del self._pending[: self._max_batch]
                await self._flush_batch(batch)
        finally:
            self._draining -= 1

    async def _flush_batch(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            results = await self._flush([item for item, _ in batch])
        except BaseException as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)
