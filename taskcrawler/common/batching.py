"""Group commit: many concurrent callers, one round trip.

While one flush runs, new items wait; the next flush takes all of them (up to ``max_batch``).
Under load, batches grow by themselves and round trips per item fall; when idle, an item is
flushed at once, so there is no added latency to tune.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Coalescer(Generic[T, R]):
    def __init__(
        self, flush: Callable[[Sequence[T]], Awaitable[Sequence[R]]], *, max_batch: int = 500
    ) -> None:
        self._flush = flush
        self._max_batch = max_batch
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._runner: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._drain())
        return await future

    async def submit_many(self, items: Sequence[T]) -> list[R]:
        return list(await asyncio.gather(*(self.submit(item) for item in items)))

    async def _drain(self) -> None:
        while self._pending:
            batch = self._pending[: self._max_batch]
            del self._pending[: self._max_batch]
            try:
                results = await self._flush([item for item, _ in batch])
            except BaseException as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)
