from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol
from uuid import UUID


class JobQueue(Protocol):
    """Carries job ids from whoever makes a job due to the workers."""

    #: Whether messages outlive this process. An in-process queue starts empty after a restart,
    #: so the sweeper must re-publish everything PENDING at once rather than wait.
    durable: bool

    async def publish(self, job_ids: Sequence[UUID]) -> None:
        """Append ids; raises :class:`~taskcrawler.domain.QueueUnavailable` when unreachable."""
        ...

    async def consume(self, max_items: int, wait_seconds: float) -> list[UUID]:
        """Up to ``max_items`` ids, waiting at most ``wait_seconds`` for the first one (0: only
        those there now)."""
        ...

    async def depth(self) -> int:
        """Messages waiting."""
        ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Waiting:
    """A site host with job ids waiting in its line: one of their URLs (its origin's robots.txt
    is the host's) and how many wait."""

    host: str
    url: str
    count: int


@dataclass(frozen=True, slots=True)
class Taken:
    """Ids taken from the front of a host's line, and how many are left in it."""

    ids: list[UUID]
    left: int


@dataclass(frozen=True, slots=True)
class Ready:
    """The hosts that may be asked for a slot now, and how many hosts have ids waiting (those
    resting included): while any has, a worker looks again soon rather than block on the queue."""

    hosts: list[Waiting]
    lines: int
    #: Seconds until the first resting host may be asked again (0 with hosts ready now).
    next_in: float = 0.0


class HostLines(Protocol):
    """Job ids waiting for a politeness slot, one line per site host (a crawler frontier's back
    queues). Ids here are not claimed: the database still has them PENDING."""

    #: Whether other processes see these lines: then they outlive this process (a stop leaves
    #: them for the others) and every worker sharing the Redis takes from them.
    shared: bool

    async def park(self, entries: Sequence[tuple[str, str, UUID]]) -> int:
        """Append each ``(host, url, job id)`` to its host's line, an id already waiting left
        out; returns how many were added (the rest are left PENDING, for the sweeper)."""
        ...

    async def ready(self, limit: int, *, wake: Sequence[str] = ()) -> Ready:
        """Up to ``limit`` hosts whose rest is over, the longest waiting first. ``wake``: hosts
        a slot just came back to, ready at once."""
        ...

    async def take(
        self, counts: Mapping[str, int], rest: Mapping[str, float] = MappingProxyType({})
    ) -> dict[str, Taken]:
        """Up to ``counts[host]`` ids from the front of each host's line (a host served goes
        to the back of the hosts); each host of ``rest`` is not ready for that many seconds."""
        ...

    async def size(self) -> int:
        """Ids waiting in all lines."""
        ...

    async def clear(self) -> list[UUID]:
        """Lines of this process only: empty them, returning their ids (to publish again on a
        graceful stop). Shared lines are left as they are (other workers take from them)."""
        ...
