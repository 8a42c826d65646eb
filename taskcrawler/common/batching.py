"""Group commit: many concurrent callers, few round trips.

While ``concurrency`` flushes run, new items wait; the next free flush takes all of them (up to
``max_batch``). Under load, batches grow by themselves and round trips per item fall; when idle,
an item is flushed at once, so there is no added latency to tune.

A failure is its own item's, as far as it can be told: a batch of several that fails is
flushed again one item at a time, so that a request the flush cannot take (a value the
database refuses, a bug one input reaches) fails its own caller, not every caller that
happened to wait beside it. The failures that are every item's (a dependency's outage, named
by ``shared``) reach the whole batch at once: flushing each alone would only fail each again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


class Coalescer(Generic[T, R]):
    def __init__(
        self,
        flush: Callable[[Sequence[T]], Awaitable[Sequence[R]]],
        *,
        max_batch: int = 500,
        concurrency: int = 1,
        shared: tuple[type[Exception], ...] = (),
    ) -> None:
        """``flush`` answers each item of a batch, in order; it must write a batch whole or not
        at all, or be safe to repeat, since a failed batch is flushed again item by item (see
        the module). ``shared``: the failures that concern every item of a batch."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._flush = flush
        self._shared = shared
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
            # Paired here, where a flush answering too few or too many results fails its
            # callers: past this point their futures would never settle.
            settled = list(zip(batch, await self._flush([item for item, _ in batch]), strict=True))
        except Exception as exc:
            if len(batch) > 1 and not isinstance(exc, self._shared):
                await self._flush_each(batch, exc)
            else:
                _fail(batch, exc)
            return
        except BaseException as exc:
            _fail(batch, exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        for (_, future), result in settled:
            if not future.done():
                future.set_result(result)

    async def _flush_each(self, batch: list[tuple[T, asyncio.Future[R]]], exc: Exception) -> None:
        """A batch that failed, flushed again one item at a time: the failure reaches the
        callers whose item causes it, and the others get their results."""
        log.warning("a batch of %d failed, flushing each alone: %r", len(batch), exc)
        try:
            for pair in batch:
                await self._flush_batch([pair])
        except BaseException as stopped:  # cancelled: those not flushed yet get it too
            _fail(batch, stopped)
            raise


def _fail(batch: list[tuple[T, asyncio.Future[R]]], exc: BaseException) -> None:
    for _, future in batch:
        if not future.done():
            future.set_exception(exc)
