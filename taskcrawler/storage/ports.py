"""What the services and the worker may ask of storage: one Protocol per repository.

Callers depend on these, never on a class of ``storage/``: the repositories behind them are
shared by both backends, and a test or a new backend can stand in for any of them. Every method
raises :class:`~taskcrawler.domain.StorageUnavailable` when the database cannot be reached.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Protocol, Self
from uuid import UUID

from taskcrawler.domain.exports import ArchivedResponse, ExportPosition
from taskcrawler.domain.jobs import ClaimedJob, Created, Job, JobQuery, JobRun, NewJob
from taskcrawler.domain.keys import ApiKey, NewKey
from taskcrawler.domain.pages import StoredLink
from taskcrawler.domain.transitions import Transition
from taskcrawler.domain.webhooks import ClaimedDelivery, Delivery, DeliveryStatus
from taskcrawler.storage.content import Archived, Reextracted
from taskcrawler.storage.idempotency import StoredResponse


class JobRepository(Protocol):
    """Jobs as the API and the command line see them: submit idempotently, read, cancel, re-run."""

    def with_pinned_connection(self) -> Self:
        """This repository, for a caller that submits one batch at a time (a group commit):
        on PostgreSQL its inserts go through a connection of its own."""
        ...

    async def create_jobs(
        self, requests: Sequence[NewJob], *, redispatch_after: float
    ) -> list[Created]: ...

    async def mark_dispatch_due(self, job_ids: Sequence[UUID]) -> None:
        """Publishing failed: the sweeper publishes these jobs instead."""
        ...

    async def get_job(self, job_id: UUID, *, owner: str = "") -> Job | None: ...

    async def list_jobs(self, query: JobQuery) -> tuple[list[Job], str | None]:
        """A page of jobs and the next page's cursor; ValueError for a cursor it did not make."""
        ...

    async def count_unfinished(self, owner: str) -> int: ...

    async def cancel(self, job_id: UUID, *, owner: str = "") -> tuple[Job | None, bool]: ...

    async def restart(
        self, job_ids: Sequence[UUID], *, owner: str, redispatch_after: float
    ) -> list[Job]: ...

    async def restart_matching(
        self, query: JobQuery, *, redispatch_after: float, limit: int = 10_000
    ) -> list[Job]: ...

    async def runs(self, job_id: UUID) -> list[JobRun]: ...


class WorkRepository(Protocol):
    """Jobs as the workers see them: claims, leases, transitions, and the sweeper's queries.
    Every write is guarded by the lease token it was claimed under."""

    @property
    def concurrent_writes(self) -> int: ...

    async def claim(
        self, job_ids: Sequence[UUID], *, lease_seconds: float, redispatch_after: float
    ) -> list[ClaimedJob]: ...

    async def release(self, claimed: Sequence[ClaimedJob]) -> list[UUID]: ...

    async def renew_leases(self, tokens: Sequence[UUID], *, lease_seconds: float) -> int: ...

    async def record_transitions(self, transitions: Sequence[Transition]) -> None:
        """All of ``transitions`` in one transaction. Raises :class:`UnstorableData`, having
        written nothing, when the database refuses a value of one of them, and
        :class:`StorageUnavailable` when it cannot be reached."""
        ...

    async def recover_expired_leases(
        self, *, max_retries: int, limit: int = 1000
    ) -> list[UUID]: ...

    async def take_due_dispatches(
        self,
        *,
        redispatch_after: float,
        limit: int = 1000,
        include_undispatched: bool = False,
        include_published: bool = True,
    ) -> list[UUID]: ...

    async def mark_dispatch_due(self, job_ids: Sequence[UUID]) -> None: ...


class ContentRepository(Protocol):
    """What pages say beyond their metadata: texts, links, the raw archive."""

    async def text(self, job_id: UUID, fmt: str) -> str | None: ...

    async def links_of(
        self, job_id: UUID, *, after: int = 0, limit: int = 100
    ) -> list[StoredLink]: ...

    async def backlinks(
        self, owner: str, target_url: str, *, after: int = 0, limit: int = 100
    ) -> list[StoredLink]: ...

    def archived(self, *, batch: int = 200) -> AsyncIterator[list[Archived]]: ...

    async def rewrite_results(self, results: Sequence[Reextracted]) -> None: ...


class KeyRepository(Protocol):
    async def create(
        self,
        name: str,
        *,
        is_admin: bool = False,
        requests_per_minute: int | None = None,
        max_pending_jobs: int | None = None,
        callback_url: str | None = None,
    ) -> tuple[NewKey, ApiKey]: ...

    async def find_active(self, key_id: str) -> tuple[ApiKey, str] | None: ...

    async def list_keys(self) -> list[ApiKey]: ...

    async def revoke(self, key_id: str) -> bool: ...

    async def rotate_webhook_secret(self, key_id: str) -> ApiKey | None:
        """The active key with a new webhook secret; None when unknown or revoked."""
        ...


class IdempotencyRepository(Protocol):
    async def get(self, owner: str, key: str) -> StoredResponse | None: ...

    async def remember(self, owner: str, key: str, response: StoredResponse) -> StoredResponse: ...


class WebhookRepository(Protocol):
    """The webhook outbox, as dispatchers and the API see it (rows are added with outcomes)."""

    async def claim_due(
        self, *, limit: int, lease_seconds: float, default_secret: str | None
    ) -> list[ClaimedDelivery]: ...

    async def finish_attempt(
        self,
        delivery: ClaimedDelivery,
        *,
        status: DeliveryStatus,
        status_code: int | None,
        error: str | None,
        next_attempt_at: datetime | None = None,
    ) -> bool:
        """Fenced by the attempt number. BLOCKED (refused before connecting) takes the claim's
        count back: ``attempts`` counts POSTs sent."""
        ...

    async def list_for_job(self, job_id: UUID, *, owner: str) -> list[Delivery]: ...


class ExportRepository(Protocol):
    """Finished jobs in export order: by ``export_seq``, which the database gives in commit
    order, so that no finish can appear behind a position a reader has passed."""

    async def end(
        self, owner: str, after: ExportPosition, limit: int | None
    ) -> ExportPosition | None:
        """Where an export after ``after`` stops: the ``limit``-th position after it, or the
        last one that is final now. None when there is none."""
        ...

    async def jobs_between(
        self, owner: str, after: ExportPosition, end: ExportPosition, *, limit: int
    ) -> list[tuple[ExportPosition, Job]]: ...

    async def texts(self, job_ids: Sequence[UUID]) -> dict[UUID, dict[str, str]]: ...

    async def archives(self, job_ids: Sequence[UUID]) -> dict[UUID, ArchivedResponse]: ...


class BatchRepository(Protocol):
    """Jobs submitted together, read back by the batch's id."""

    async def create(self, owner: str, job_ids: Sequence[UUID]) -> UUID: ...

    async def jobs_of(self, owner: str, batch_id: UUID) -> list[Job] | None: ...
