from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from uuid import UUID


class MemoryQueue:
    """The embedded mode's queue: a deque in this process, shared by its API and its workers."""

    durable = False

    def __init__(self) -> None:
        self._items: deque[UUID] = deque()
        self._not_empty = asyncio.Event()

    async def publish(self, job_ids: Sequence[UUID]) -> None:
        if job_ids:
            self._items.extend(job_ids)
            self._not_empty.set()

    async def consume(self, max_items: int, wait_seconds: float) -> list[UUID]:
        if not self._items:
            self._not_empty.clear()
            try:
                async with asyncio.timeout(wait_seconds):
                    await self._not_empty.wait()
            except TimeoutError:
                return []
        batch = [self._items.popleft() for _ in range(min(max_items, len(self._items)))]
        return batch

    async def depth(self) -> int:
        return len(self._items)

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._items.clear()
