"""What the services and the worker may ask of storage: one Protocol per repository.

Callers depend on these, never on a class of ``storage/``: the repositories behind them are
shared by both backends, and a test or a new backend can stand in for any of them. Every method
raises :class:`~taskcrawler.domain.StorageUnavailable` when the database cannot be reached.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime
from typing import Protocol, Self
from uuid import UUID

from taskcrawler.domain.change_tracking import Previous
from taskcrawler.domain.chunks import (
    Chunk,
    PageChunks,
    Ranked,
    Reembedded,
    SearchHit,
    SearchQuery,
    StaleChunk,
    StoredChunk,
)
from taskcrawler.domain.crawls import Crawl, CrawlSpec
from taskcrawler.domain.exports import ExportPosition, GzippedResponse
from taskcrawler.domain.idempotency import StoredResponse
from taskcrawler.domain.jobs import (
    Cancelled,
    ClaimedJob,
    Created,
    Job,
    JobQuery,
    JobRun,
    JobStatus,
    NewJob,
    QueueCounts,
    Refused,
)
from taskcrawler.domain.keys import ApiKey, NewKey
from taskcrawler.domain.monitors import (
    Change,
    ChangeRetention,
    CrawlRound,
    CrawlRoundReading,
    FiredSlot,
    Monitor,
    MonitorSpec,
    PageRun,
    RunReading,
    Snapshot,
    StoredRun,
)
from taskcrawler.domain.pages import Archived, FetchedPage, Reextracted, Screenshot, StoredLink
from taskcrawler.domain.runs import RetentionPolicy, RunContent
from taskcrawler.domain.scrape_options import DEFAULT_OPTIONS, ScrapeOptions
from taskcrawler.domain.transitions import Transition
from taskcrawler.domain.webhooks import ClaimedDelivery, Delivery, DeliveryStatus


class JobRepository(Protocol):
    """Jobs as the API and the command line see them: submit idempotently, read, cancel, re-run."""

    def with_pinned_connection(self) -> Self:
        """This repository, for a caller that submits one batch at a time (a group commit):
        on PostgreSQL its inserts go through a connection of its own."""
        ...

    async def create_jobs(
        self, requests: Sequence[NewJob], *, redispatch_after: float, together: bool = False
    ) -> list[Created | Refused]:
        """A job per request, new or existing; :class:`Refused` for a request whose
        ``pending_limit`` its owner's unfinished jobs would pass, counted atomically with the
        insert. ``together``: each owner's requests are admitted or refused as one."""
        ...

    async def mark_dispatch_due(self, job_ids: Sequence[UUID]) -> None:
        """Publishing failed: the sweeper publishes these jobs instead."""
        ...

    async def get_job(self, job_id: UUID, *, owner: str = "") -> Job | None: ...

    async def monitor_of(self, job_id: UUID) -> UUID | None:
        """The monitor whose page the job is, if it is one."""
        ...

    async def list_jobs(self, query: JobQuery) -> tuple[list[Job], str | None]:
        """A page of jobs and the next page's cursor; InvalidCursor for a cursor it did not make."""
        ...

    async def count_unfinished(self, owner: str) -> int: ...

    async def queue_counts(self, owner: str) -> QueueCounts: ...

    async def cancel(self, job_id: UUID, *, owner: str = "") -> tuple[Job | None, bool]: ...

    async def cancel_matching(self, query: JobQuery, *, limit: int) -> Cancelled | None:
        """Cancel ``query.owner``'s matching jobs, each atomically; None for an unknown batch."""

    async def restart(
        self,
        job_ids: Sequence[UUID],
        *,
        owner: str,
        redispatch_after: float,
        pending_limit: int | None = None,
    ) -> list[Job] | Refused:
        """Run ``owner``'s finished jobs among ``job_ids`` again; :class:`Refused` (none run)
        when they would make its unfinished jobs more than ``pending_limit``, counted
        atomically with the restart, as :meth:`create_jobs` counts."""
        ...

    async def restart_matching(
        self,
        query: JobQuery,
        *,
        redispatch_after: float,
        limit: int = 10_000,
        pending_limit: int | None = None,
    ) -> list[Job] | Refused:
        """Run ``query.owner``'s matching finished jobs again, refused as :meth:`restart`
        is."""
        ...

    async def runs(self, job_id: UUID, *, limit: int) -> list[JobRun]: ...


class WorkRepository(Protocol):
    """Jobs as the workers see them: claims, leases, transitions, and the sweeper's queries.
    Every write is guarded by the lease token it was claimed under."""

    @property
    def concurrent_writes(self) -> int: ...

    @property
    def outcome_batch(self) -> int:
        """How many transitions one :meth:`record_transitions` of the worker takes at most."""
        ...

    async def claim(
        self, job_ids: Sequence[UUID], *, lease_seconds: float, redispatch_after: float
    ) -> list[ClaimedJob]: ...

    async def claimable_urls(self, job_ids: Sequence[UUID]) -> dict[UUID, str]:
        """The URLs of those of ``job_ids`` a claim would take now (PENDING and due), read
        without claiming them: the worker claims only the jobs whose hosts can take a fetch.
        A job made from its stored copy fetches nothing: its URL is given as ''."""
        ...

    async def release(self, claimed: Sequence[ClaimedJob]) -> list[UUID]: ...

    async def renew_leases(self, tokens: Sequence[UUID], *, lease_seconds: float) -> int: ...

    async def record_transitions(
        self, transitions: Sequence[Transition], *, redispatch_after: float = 30.0
    ) -> list[UUID]:
        """All of ``transitions`` in one transaction, crawl pages with their frontier. Raises
        :class:`UnstorableData`, having written nothing, when the database refuses a value of
        one of them, and :class:`StorageUnavailable` when it cannot be reached. Returns the
        ids of the crawl pages it added, to publish (due for the sweeper after
        ``redispatch_after`` seconds if they are not claimed by then)."""
        ...

    async def archived_copy(self, job_id: UUID) -> Archived | None:
        """The job's stored raw page (and its formats and result), for a run that adds formats
        without fetching; None when none is kept."""
        ...

    async def recover_expired_leases(
        self,
        decide: Callable[[ClaimedJob, datetime], Transition],
        *,
        limit: int = 1000,
        redispatch_after: float = 30.0,
    ) -> list[Transition]: ...

    async def take_due_dispatches(
        self,
        *,
        redispatch_after: float,
        limit: int = 1000,
        include_undispatched: bool = False,
        include_published: bool = True,
    ) -> list[UUID]: ...

    async def mark_dispatch_due(self, job_ids: Sequence[UUID]) -> None: ...

    async def complete_idle_crawls(self, *, limit: int = 100) -> list[UUID]:
        """RUNNING crawls none of whose pages is PENDING or PROCESSING become COMPLETED."""
        ...


class CrawlRepository(Protocol):
    """Crawls as the API and the workers see them (their pages are jobs: JobRepository lists
    them; their frontier grows with the outcomes WorkRepository records)."""

    async def create(
        self,
        owner: str,
        spec: CrawlSpec,
        *,
        callback_url: str | None,
        redispatch_after: float,
        pending_limit: int | None = None,
    ) -> tuple[Crawl, UUID] | Refused:
        """A RUNNING crawl and its start page; the start page's job id, to publish.
        :class:`Refused` when the start page would pass ``owner``'s ``pending_limit``, counted
        atomically with the insert."""
        ...

    async def get(self, crawl_id: UUID, *, owner: str) -> Crawl | None: ...

    async def spec_of(self, crawl_id: UUID) -> CrawlSpec | None: ...

    async def reusable_page(
        self,
        crawl_id: UUID,
        *,
        owner: str,
        url: str,
        max_age: float,
        render: str,
        options: ScrapeOptions = DEFAULT_OPTIONS,
    ) -> FetchedPage | None:
        """The newest stored copy of ``url`` that ``owner`` scraped within ``max_age`` seconds
        (as a job, or a page of another crawl) with the same render mode and page options, or
        None."""
        ...

    async def list_crawls(
        self, owner: str, *, limit: int = 50, cursor: str | None = None, running: bool = False
    ) -> tuple[list[Crawl], str | None]:
        """A page of crawls (``running``: RUNNING ones only) and the next page's cursor;
        InvalidCursor for a cursor it did not make."""
        ...

    async def holds(self, crawl_id: UUID, *, owner: str, url: str) -> bool:
        """Whether the crawl has the page ``url`` other than waiting to be fetched."""
        ...

    async def finished_pages(
        self,
        crawl_id: UUID,
        *,
        owner: str,
        statuses: Sequence[JobStatus],
        after: ExportPosition,
        limit: int,
    ) -> tuple[list[tuple[ExportPosition, Job]], bool]:
        """The crawl's pages finished after ``after``, in the order they finished, and whether
        more follow."""
        ...

    async def cancel(self, crawl_id: UUID, *, owner: str) -> Crawl | None: ...


class ContentRepository(Protocol):
    """What pages say beyond their metadata: texts, links, screenshots, the raw archive."""

    async def text(self, job_id: UUID, fmt: str) -> str | None: ...

    async def texts_of(
        self, job_ids: Sequence[UUID], formats: Sequence[str]
    ) -> dict[UUID, dict[str, str]]:
        """The ``formats`` the jobs have stored, by job, in one query."""
        ...

    async def screenshot(self, job_id: UUID) -> Screenshot | None: ...

    async def capture(self, job_id: UUID, kind: str, index: int) -> bytes | None:
        """The ``index``-th file of the job's ``kind`` actions (screenshot, pdf), if stored."""
        ...

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
    """Answers by ``Idempotency-Key``; one stored before ``since`` is expired: never answered,
    replaced by a new one, deleted by :meth:`forget_before`."""

    async def get(self, owner: str, key: str, *, since: datetime) -> StoredResponse | None: ...

    async def claim(
        self,
        owner: str,
        key: str,
        request_hash: str,
        *,
        at: datetime,
        since: datetime,
        stale_before: datetime,
    ) -> StoredResponse | None:
        """None when the request now holds the key; else the answer or claim it holds."""
        ...

    async def fulfil(
        self, owner: str, key: str, response: StoredResponse, *, at: datetime
    ) -> None: ...

    async def release(self, owner: str, key: str, request_hash: str, *, at: datetime) -> None: ...

    async def forget_before(self, since: datetime, *, limit: int) -> int:
        """Delete at most ``limit`` answers stored before ``since``, the oldest first; how many."""
        ...


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

    async def list_for_job(self, job_id: UUID, *, owner: str, limit: int) -> list[Delivery]: ...


class ChunkRepository(Protocol):
    """Pages' chunks and their vectors; searches over one owner's. Vector operations raise
    :class:`~taskcrawler.domain.errors.VectorsUnavailable` where the database has no vectors."""

    async def vectors_available(self) -> bool: ...

    async def enable_vectors(self, dim: int | None = None) -> bool:
        """Make the database store vectors if it can (PostgreSQL: pgvector's extension, column
        and an HNSW index for ``dim``); whether it does now."""
        ...

    async def source_hash(self, job_id: UUID) -> str | None:
        """What the page's chunks were made from: unchanged, nothing is embedded again."""
        ...

    async def replace(
        self, page: PageChunks, source_hash: str, *, lease_token: UUID | None = None
    ) -> None:
        """The page's chunks become ``page``'s; with a ``lease_token``, only while the job is
        still held under it (a cancelled job's worker writes none)."""

    async def remake(self, job_id: UUID, made: Sequence[Chunk], *, counted: bool = False) -> bool:
        """If the job has chunks, or ``counted`` (its result counts some, perhaps none), they
        become ``made``, not embedded (model :data:`~taskcrawler.domain.chunks.UNEMBEDDED`)
        until a re-index; whether they were made again."""
        ...

    async def list_for_job(self, job_id: UUID, *, owner: str) -> list[StoredChunk]: ...

    async def semantic(
        self, query: SearchQuery, *, model: str, vector: Sequence[float]
    ) -> list[SearchHit]:
        """The ``query.k`` chunks of model ``model`` nearest to ``vector`` (cosine)."""
        ...

    async def keyword(self, query: SearchQuery) -> list[SearchHit]:
        """The ``query.k`` chunks that best match any of the query's words, by BM25 over the
        chunk's context and text."""
        ...

    async def semantic_ranking(
        self, query: SearchQuery, *, model: str, vector: Sequence[float]
    ) -> list[Ranked]:
        """What :meth:`semantic` finds, as a ranking: the chunks' texts may be left unread."""
        ...

    async def keyword_ranking(self, query: SearchQuery) -> list[Ranked]:
        """What :meth:`keyword` finds, as a ranking: the chunks' texts may be left unread."""
        ...

    async def hits(self, ranked: Sequence[Ranked]) -> list[SearchHit]:
        """The chunks of ``ranked`` (of this store's rankings) in its order, each with its
        score there: one read for those left unread (a chunk deleted since is left out)."""
        ...

    async def stale(self, model: str, *, after_id: int = 0, limit: int = 256) -> list[StaleChunk]:
        """Chunks embedded by another model, or made before chunks carried their context, by
        id: what a re-index embeds."""
        ...

    async def set_embeddings(self, model: str, chunks: Sequence[Reembedded]) -> None:
        """Each chunk's new context (indexed for keywords too) and vector, of ``model``."""
        ...

    async def count(self, *, owner: str | None = None) -> int: ...

    async def settle(self) -> None:
        """Wait for the work a search left running in the background (closing the database
        under it would fail it)."""
        ...


class MonitorRepository(Protocol):
    """Monitors as the API sees them: their specs, pages (ordinary jobs), run history and
    changes. Every method that takes ``owner`` sees that tenant's monitors only."""

    async def create(
        self,
        owner: str,
        spec: MonitorSpec,
        *,
        now: datetime,
        redispatch_after: float,
        pending_limit: int | None = None,
    ) -> Monitor | Refused:
        """A monitor and its pages' jobs; :class:`Refused` (none created) when they would pass
        ``owner``'s ``pending_limit``, counted atomically with the insert."""
        ...

    async def get(self, monitor_id: UUID, *, owner: str) -> Monitor | None: ...

    async def list_monitors(
        self, owner: str, *, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[Monitor], str | None]:
        """A page, newest first, and the next page's cursor; InvalidCursor for a foreign cursor."""
        ...

    async def update(
        self,
        monitor_id: UUID,
        *,
        owner: str,
        now: datetime,
        paused: bool | None = None,
        interval_seconds: float | None = None,
    ) -> Monitor | None: ...

    async def add_formats(
        self,
        monitor_id: UUID,
        *,
        owner: str,
        formats: Sequence[str],
        now: datetime,
        redispatch_after: float,
    ) -> tuple[Monitor, list[UUID]] | None:
        """The monitor with ``formats`` added, and the ids of its pages' jobs sent to the
        workers again to make them (to publish)."""
        ...

    async def delete(self, monitor_id: UUID, *, owner: str) -> bool: ...

    async def changes(
        self,
        monitor_id: UUID,
        *,
        owner: str,
        limit: int = 50,
        cursor: str | None = None,
        max_bytes: int | None = None,
    ) -> tuple[list[Change], str | None]:
        """Newest first: ``limit`` changes, fewer when they pass ``max_bytes`` (never none)."""
        ...

    async def change(self, monitor_id: UUID, change_id: UUID, *, owner: str) -> Change | None: ...

    async def rounds(self, monitor_id: UUID) -> list[tuple[datetime, int]]: ...

    async def run(
        self, job_id: UUID, run: int, *, owner: str
    ) -> tuple[StoredRun, RunContent] | None: ...


class MonitorWorkRepository(Protocol):
    """Monitors as the workers see them: the slots fired, the runs and crawl rounds change
    detection claims and records, and the pruning of their history."""

    async def prune_history(self, retention: ChangeRetention, *, now: datetime, limit: int) -> int:
        """One bounded step of pruning monitors' history; rows touched (below ``limit``:
        nothing more to do for now)."""
        ...

    async def fire_due(
        self,
        *,
        now: datetime,
        redispatch_after: float,
        limit: int = 100,
        pending_limit: int | None = None,
    ) -> list[FiredSlot]:
        """Fire each due slot once across every worker; the jobs to publish. A round that
        would pass its owner's limit of unfinished jobs (its key's, else ``pending_limit``)
        runs none of its pages."""
        ...

    async def mark_dispatch_due(self, job_ids: Sequence[UUID]) -> None: ...

    async def claim_crawl_rounds(self, *, limit: int = 20) -> list[CrawlRound]:
        """Crawl monitors' rounds whose crawl stopped, taken under a lease for this caller."""
        ...

    async def crawl_baselines(
        self, job_ids: Sequence[UUID]
    ) -> dict[UUID, tuple[StoredRun, Snapshot]]: ...

    async def record_crawl_round(
        self, reading: CrawlRoundReading, pages: Sequence[RunReading]
    ) -> bool:
        """A claimed round's changes, page contents and kept pages, once; False when another
        worker recorded it."""
        ...

    async def claim_unread_runs(self, *, limit: int = 100) -> list[PageRun]:
        """Finished runs not read yet, taken for this caller alone."""
        ...

    async def archived_bodies(self, job_ids: Sequence[UUID]) -> dict[UUID, bytes]: ...

    async def baselines(
        self, keys: Sequence[tuple[UUID, int]]
    ) -> dict[tuple[UUID, int], tuple[StoredRun, Snapshot]]:
        """For each (job, run) that read something: the run and what it read."""
        ...

    async def record_readings(
        self, readings: Sequence[RunReading], *, retention: RetentionPolicy, redispatch_after: float
    ) -> list[UUID]:
        """The readings of claimed runs, with their changes and webhooks, in one transaction;
        the jobs of pages whose monitor fired meanwhile, run again: to publish."""
        ...


class ExportRepository(Protocol):
    """Finished jobs in export order: by ``export_seq``, which the database gives in commit
    order, so that no finish can appear behind a position a reader has passed."""

    async def end(
        self,
        owner: str,
        after: ExportPosition,
        limit: int | None,
        *,
        crawl_id: UUID | None = None,
    ) -> ExportPosition | None:
        """Where an export after ``after`` stops: the ``limit``-th position after it, or the
        last one that is final now (of one crawl's jobs, if ``crawl_id`` is given). None when
        there is none."""
        ...

    async def jobs_between(
        self,
        owner: str,
        after: ExportPosition,
        end: ExportPosition,
        *,
        limit: int,
        crawl_id: UUID | None = None,
    ) -> list[tuple[ExportPosition, Job]]: ...

    async def texts(self, job_ids: Sequence[UUID]) -> dict[UUID, dict[str, str]]: ...

    async def archives(self, job_ids: Sequence[UUID]) -> dict[UUID, GzippedResponse]: ...


class BatchRepository(Protocol):
    """Jobs submitted together, read back by the batch's id."""

    async def create(self, owner: str, job_ids: Sequence[UUID]) -> UUID: ...

    async def jobs_of(self, owner: str, batch_id: UUID) -> list[Job] | None: ...


class TrackingRepository(Protocol):
    """The run history Firecrawl's changeTracking compares a scrape with."""

    async def previous(self, job_id: UUID, before_run: int) -> Previous | None: ...

    async def keep(
        self,
        job_id: UUID,
        run: int,
        *,
        fetched_at: datetime,
        http_status: int | None,
        status: str,
        content: RunContent,
    ) -> None: ...
