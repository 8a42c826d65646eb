from __future__ import annotations

from collections.abc import Sequence
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
