from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from uuid import UUID

from taskcrawler.queue.base import Ready, Taken, Waiting


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


#: Bounds of the lines of one process: past them an id is left PENDING, for the sweeper to
#: publish again later, rather than held.
MAX_PER_HOST = 5_000
MAX_TOTAL = 50_000


@dataclass(slots=True)
class _Line:
    url: str
    ids: dict[UUID, None] = field(default_factory=dict)  # insertion-ordered, no duplicates
    not_before: float = 0.0


class MemoryHostLines:
    """Per-host lines in this process (no Redis: the process's queue is its own too). The
    dict's order is the order hosts are served in: a host served goes to its end."""

    shared = False

    def __init__(self, *, max_per_host: int = MAX_PER_HOST, max_total: int = MAX_TOTAL) -> None:
        self.max_per_host = max_per_host
        self.max_total = max_total
        self._lines: dict[str, _Line] = {}
        self._size = 0

    async def park(self, entries: Sequence[tuple[str, str, UUID]]) -> int:
        added = 0
        for host, url, job_id in entries:
            line = self._lines.get(host)
            if line is None:
                line = self._lines[host] = _Line(url)
            if job_id in line.ids:
                continue
            if len(line.ids) >= self.max_per_host or self._size >= self.max_total:
                continue
            line.ids[job_id] = None
            self._size += 1
            added += 1
        self._drop_empty()
        return added

    async def ready(self, limit: int, *, wake: Sequence[str] = ()) -> Ready:
        for host in wake:
            if (line := self._lines.get(host)) is not None:
                line.not_before = 0.0
        now = time.monotonic()
        ready: list[Waiting] = []
        next_in = float("inf")
        for host, line in self._lines.items():
            if line.not_before > now:
                next_in = min(next_in, line.not_before - now)
            elif len(ready) < limit:
                ready.append(Waiting(host, line.url, len(line.ids)))
        return Ready(ready, len(self._lines), 0.0 if ready or not self._lines else next_in)

    async def take(
        self, counts: Mapping[str, int], rest: Mapping[str, float] = MappingProxyType({})
    ) -> dict[str, Taken]:
        taken: dict[str, Taken] = {}
        for host, count in counts.items():
            line = self._lines.get(host)
            if line is None or count <= 0:
                continue
            ids = list(itertools.islice(line.ids, count))
            for job_id in ids:
                del line.ids[job_id]
            self._size -= len(ids)
            taken[host] = Taken(ids, len(line.ids))
            del self._lines[host]
            if line.ids:  # served: behind the hosts that waited longer
                self._lines[host] = line
        now = time.monotonic()
        for host, seconds in rest.items():
            if (line := self._lines.get(host)) is not None:
                line.not_before = now + seconds
        return taken

    async def size(self) -> int:
        return self._size

    async def clear(self) -> list[UUID]:
        ids = [job_id for line in self._lines.values() for job_id in line.ids]
        self._lines.clear()
        self._size = 0
        return ids

    def _drop_empty(self) -> None:
        for host in [h for h, line in self._lines.items() if not line.ids]:
            del self._lines[host]
