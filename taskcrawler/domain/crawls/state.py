"""A crawl as stored and as shown: its status, and its pages counted by state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from uuid import UUID

from taskcrawler.domain.crawls.spec import CrawlSpec


class CrawlStatus(StrEnum):
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    CANCELLED = "CANCELLED"

    @property
    def is_final(self) -> bool:
        return self is not CrawlStatus.RUNNING


@dataclass(frozen=True, slots=True)
class CrawlCounts:
    """A crawl's pages by state, counted in one statement, so they always add up:
    ``discovered == pending + completed + failed + cancelled`` (``pending`` includes the pages
    being fetched, ``processing`` of them)."""

    pending: int = 0
    processing: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0

    @property
    def discovered(self) -> int:
        return self.pending + self.completed + self.failed + self.cancelled

    @classmethod
    def of(cls, by_status: Mapping[str, int]) -> CrawlCounts:
        """From job counts by job status (``PENDING``, ``PROCESSING``, …)."""
        processing = by_status.get("PROCESSING", 0)
        return cls(
            pending=by_status.get("PENDING", 0) + processing,
            processing=processing,
            completed=by_status.get("COMPLETED", 0),
            failed=by_status.get("FAILED", 0),
            cancelled=by_status.get("CANCELLED", 0),
        )


@dataclass(frozen=True, slots=True)
class Crawl:
    """A crawl: its spec, its state, and (when read with them) its pages' counts."""

    id: UUID
    owner: str
    spec: CrawlSpec
    status: CrawlStatus
    created_at: datetime
    finished_at: datetime | None = None
    counts: CrawlCounts = field(default_factory=CrawlCounts)

    @property
    def url(self) -> str:
        return self.spec.url
