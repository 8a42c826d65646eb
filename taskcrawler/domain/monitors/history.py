"""What a monitor keeps: the changes it detected (:class:`Change`, as the API and webhooks show
them: :func:`change_document`), for how long (:class:`ChangeRetention`), and each run's record
(:class:`StoredRun`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from uuid import UUID

from pydantic_core import to_jsonable_python

from taskcrawler.domain.diffs import TextDiff
from taskcrawler.domain.runs import RunContent


@dataclass(frozen=True, slots=True)
class PageDiff:
    """Between two runs: the unified diff of their Markdown and the metadata that changed
    (``{field: {"old": …, "new": …}}``)."""

    markdown: TextDiff
    metadata: dict[str, dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {**self.markdown.to_dict(), "metadata": self.metadata}


class ChangeKind(StrEnum):
    CHANGED = "changed"
    ADDED = "added"  # crawl monitors: a page this round found and the last did not
    REMOVED = "removed"  # crawl monitors: a page the last round found and this one did not


@dataclass(frozen=True, slots=True)
class Change:
    """A change a monitor detected. ``run`` / ``previous_run``: the job runs compared (a
    ``changed`` page has both, an ``added`` one only ``run``, a ``removed`` one only
    ``previous_run``); ``diff`` is set for ``changed`` only. ``previous_job_id``: the job of
    ``previous_run`` for a ``changed`` page: ``job_id`` itself for a URL monitor's page, the
    last round's job for a crawl monitor's."""

    id: UUID
    monitor_id: UUID
    kind: ChangeKind
    url: str
    job_id: UUID
    detected_at: datetime
    run: int | None = None
    previous_run: int | None = None
    diff: PageDiff | None = None
    previous_job_id: UUID | None = None


#: Changes kept per monitor, and their age at most. A change's diff is cut at 256 Ki characters
#: (domain.diffs), so 1,000 of them hold at most 250 MiB of ASCII diffs.
DEFAULT_CHANGE_RETENTION_COUNT = 1_000


DEFAULT_CHANGE_RETENTION_DAYS = 30.0


@dataclass(frozen=True, slots=True)
class ChangeRetention:
    """Which changes of a monitor are kept: its newest ``keep_changes`` (None: any number),
    none older than ``keep_days`` (None: any age)."""

    keep_changes: int | None = DEFAULT_CHANGE_RETENTION_COUNT
    keep_days: float | None = DEFAULT_CHANGE_RETENTION_DAYS

    def __post_init__(self) -> None:
        if self.keep_changes is not None and self.keep_changes < 0:
            raise ValueError("keep_changes must be 0 or more, or None")
        if self.keep_days is not None and not self.keep_days > 0:
            raise ValueError("keep_days must be a positive number of days or None")

    def oldest_kept(self, now: datetime) -> datetime | None:
        """Changes detected before this are dropped (None: none for their age)."""
        return None if self.keep_days is None else now - timedelta(days=self.keep_days)


def change_document(change: Change) -> dict[str, Any]:
    """A change as ``GET /api/v1/monitors/{id}/changes`` lists it and its webhook sends it
    (JSON-ready, encoded as the job documents are)."""
    diff = change.diff
    document: dict[str, Any] = to_jsonable_python(
        {
            "id": change.id,
            "monitor_id": change.monitor_id,
            "kind": change.kind,
            "url": change.url,
            "job_id": change.job_id,
            "detected_at": change.detected_at,
            "run": change.run,
            "previous_run": change.previous_run,
            "previous_job_id": change.previous_job_id,
            "diff": diff.markdown.text if diff is not None else None,
            "diff_complete": diff.markdown.complete if diff is not None else None,
            "metadata": diff.metadata if diff is not None else {},
        }
    )
    return document


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A run's record in the run history: when it ran, how it ended, and what it read (the
    content of run ``content_run``, None when it read nothing)."""

    job_id: UUID
    run: int
    fetched_at: datetime
    status: str
    http_status: int | None
    fingerprint: str | None
    digest: str | None
    content_run: int | None
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RunView:
    """A run's record and the content it read."""

    record: StoredRun
    content: RunContent
