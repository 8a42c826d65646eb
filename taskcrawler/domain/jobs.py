from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from taskcrawler.domain.errors import DEFERRAL_CODES, log_line
from taskcrawler.domain.pages import Candidate, Link, PageContent
from taskcrawler.domain.rendering import DEFAULT_RENDER, RenderRequest
from taskcrawler.domain.scrape_options import DEFAULT_OPTIONS, ScrapeOptions


class JobStatus(StrEnum):
    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATUSES


#: A job in one of these states runs again only when asked to (a retry, ``max_age``, formats
#: it lacks, a submission of a FAILED or CANCELLED job's URL).
FINAL_STATUSES = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED})

#: What a job extracts when its submission names no formats: its metadata (title, description,
#: authorship, headings) and its main content as Markdown.
DEFAULT_FORMATS = ("metadata", "markdown")
#: The formats of a job stored without any (NULL): jobs made before new ones defaulted to
#: :data:`DEFAULT_FORMATS` asked for their metadata alone.
UNSTATED_FORMATS = ("metadata",)


@dataclass(frozen=True, slots=True)
class Job:
    """A job as the rest of the system sees it; storage rows never leave ``storage/``."""

    id: UUID
    url: str
    status: JobStatus
    retry_count: int
    created_at: datetime
    scraped_title: str | None = None
    error_log: str | None = None
    error_code: str | None = None
    http_status: int | None = None
    final_url: str | None = None
    content_type: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    next_attempt_at: datetime | None = None
    result: dict[str, Any] | None = None
    formats: tuple[str, ...] = DEFAULT_FORMATS
    callback_url: str | None = None
    run_count: int = 0
    host: str = ""
    unchanged: bool = False
    #: never | auto | always (see :mod:`taskcrawler.domain.rendering`)
    render: str = "never"
    render_options: RenderRequest | None = None
    #: What it asks of its page beyond its formats (headers, selectors, languages, PDFs).
    options: ScrapeOptions = DEFAULT_OPTIONS

    #: The crawl this job is a page of, and its link hops from the crawl's start.
    crawl_id: UUID | None = None
    depth: int | None = None
    #: When the page its result was made from was fetched (or confirmed by a 304): a format
    #: added later is made from that stored copy, and ``max_age`` counts from here.
    fetched_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """A job a worker holds a lease on. Every write about it is guarded by ``lease_token``."""

    id: UUID
    url: str
    retry_count: int
    lease_token: UUID
    formats: tuple[str, ...] = DEFAULT_FORMATS
    #: Validators of the last successful fetch, for a conditional re-fetch.
    etag: str | None = None
    last_modified: str | None = None
    owner: str = ""
    #: For the job latency metric (created -> finished, first runs only).
    created_at: datetime | None = None
    run_count: int = 0
    #: Gets a webhook when the job becomes COMPLETED or FAILED.
    callback_url: str | None = None
    render: str = "never"
    render_options: RenderRequest = DEFAULT_RENDER
    options: ScrapeOptions = DEFAULT_OPTIONS

    #: A crawl's page: its crawl, and its link hops from the crawl's start.
    crawl_id: UUID | None = None
    depth: int = 0
    #: This run adds formats to a finished job: it extracts the page's stored raw copy instead
    #: of fetching (and fetches when there is none).
    from_archive: bool = False

    @property
    def parse_formats(self) -> tuple[str, ...]:
        """What the page is parsed for: a crawl's page always for its links too, but for their
        texts only when ``formats`` asks for the links (then they are kept)."""
        if self.crawl_id is None or "links" in self.formats:
            return self.formats
        return (*self.formats, "link_targets")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one attempt of a job produced: a page, or an error (``error_code`` set)."""

    job: ClaimedJob
    http_status: int | None = None
    final_url: str | None = None
    content_type: str | None = None
    scraped_title: str | None = None
    result: dict[str, Any] | None = None
    error_code: str | None = None
    error_message: str | None = None
    transient: bool = False
    retry_after: float | None = None
    #: The server answered 304 Not Modified to a conditional re-fetch.
    unchanged: bool = False
    etag: str | None = None
    last_modified: str | None = None
    content: PageContent | None = None
    finished_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    #: A crawl's page: its links, read for the crawl's frontier (not stored as such) ...
    links: tuple[Link, ...] | None = None
    #: ... and what they add to it, decided by ``domain.crawls`` before the outcome is saved.
    frontier: tuple[Candidate, ...] = ()
    #: Made from the job's own stored copy, not fetched: the job's ``fetched_at`` is kept.
    from_archive: bool = False
    #: When the page was fetched, if before this attempt: a stored copy read again (a crawl
    #: reusing another job's page). None: the attempt fetched it.
    fetched_at: datetime | None = None

    @property
    def fetched(self) -> bool:
        """Whether this attempt got the page from its server (a 304 confirms the stored one)."""
        return not self.from_archive and (self.succeeded or self.unchanged)

    @property
    def succeeded(self) -> bool:
        return self.error_code is None

    @property
    def error_log(self) -> str | None:
        """What ``error_log`` says of this attempt: its code, a message, and how to fix it
        when a user can."""
        if self.error_code is None:
            return None
        return log_line(self.error_code, self.error_message or "")

    @property
    def deferred(self) -> bool:
        """Rescheduled without counting an attempt (the host was busy)."""
        return self.error_code in DEFERRAL_CODES


# --- what the API and the command line ask of jobs ------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class JobOptions:
    """What a submission asks of its job, beside its URL: the one list of a job's options (a
    crawl asks them of every page). Each None, or left out, is the default."""

    #: What to extract; an existing job of the URL is given those it lacks (see
    #: :mod:`taskcrawler.domain.resubmission`). None: :data:`DEFAULT_FORMATS`.
    formats: tuple[str, ...] | None = None
    #: Gets a signed POST when the job completes or fails; None: the API key's.
    callback_url: str | None = None
    #: Seconds: an existing job whose page was fetched longer ago is scraped again (same id,
    #: a new run).
    max_age: float | None = None
    render: str = "never"
    render_options: RenderRequest | None = None
    #: None: not asked (an existing job keeps its own); else what the page must be read with.
    options: ScrapeOptions | None = None


@dataclass(frozen=True, slots=True)
class NewJob(JobOptions):
    """A job to create: its URL, its owner, and its options with the defaults resolved."""

    url: str
    owner: str = ""
    formats: tuple[str, ...] = field(default=DEFAULT_FORMATS, kw_only=True)
    #: The owner's unfinished jobs at most, this one counted, or the submission is refused
    #: (:class:`Refused`); None: no limit. Checked where the job is inserted, atomically.
    pending_limit: int | None = field(default=None, kw_only=True)

    @classmethod
    def asking(
        cls,
        url: str,
        owner: str,
        options: JobOptions,
        *,
        default_callback: str | None,
        pending_limit: int | None = None,
    ) -> NewJob:
        """The job ``options`` ask for at ``url``, the formats and the callback URL left out
        given their defaults."""
        asked = {name: getattr(options, name) for name in _JOB_OPTION_NAMES}
        asked["formats"] = options.formats or DEFAULT_FORMATS
        asked["callback_url"] = options.callback_url or default_callback
        return cls(url, owner, pending_limit=pending_limit, **asked)


#: The fields of :class:`JobOptions`, listed once: ``fields()`` walks the class per call, on
#: every submission.
_JOB_OPTION_NAMES = tuple(option.name for option in fields(JobOptions))


@dataclass(frozen=True, slots=True)
class Created:
    job: Job
    created: bool
    #: An existing job that this submission sent to the workers again: a new run (``max_age``
    #: had passed, it had FAILED, or it lacked formats), or an attempt under way replaced by
    #: one with the formats it lacked. Its id is to be published.
    restarted: bool = False


@dataclass(frozen=True, slots=True)
class Refused:
    """A submission its owner's pending-jobs limit refused: it would have made the owner's
    unfinished jobs more than ``limit``; ``unfinished`` of them there were when it was checked."""

    limit: int
    unfinished: int


@dataclass(frozen=True, slots=True)
class JobQuery:
    owner: str = ""
    statuses: tuple[JobStatus, ...] = ()
    host: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    error_code: str | None = None
    limit: int = 50
    cursor: str | None = None
    #: The pages of this crawl only.
    crawl_id: UUID | None = None
    #: These jobs only (a bulk cancel's ids).
    ids: tuple[UUID, ...] = ()
    #: The jobs of this batch (a Firecrawl batch scrape) only.
    batch_id: UUID | None = None
    #: The jobs whose id starts with these hex digits (a short id, as the command line shows).
    id_prefix: str | None = None


#: The fewest hex digits a short id may have (git's rule): fewer would match too many.
MIN_ID_PREFIX = 4


def id_range(prefix: str) -> tuple[UUID, UUID]:
    """The first and last UUID that start with the hex digits ``prefix`` (dashes ignored):
    a range any index on the id serves, on every database. ValueError for anything else."""
    digits = prefix.replace("-", "").lower()
    if not MIN_ID_PREFIX <= len(digits) <= 32 or any(c not in "0123456789abcdef" for c in digits):
        raise ValueError(
            f"a short id is {MIN_ID_PREFIX} to 32 hexadecimal digits (dashes allowed), "
            "the start of an id"
        )
    return UUID(digits.ljust(32, "0")), UUID(digits.ljust(32, "f"))


#: What a cancel stops: a job not finished yet. A PROCESSING job's worker finds its lease gone
#: when it comes to write, and its outcome is dropped.
CANCELLABLE_STATUSES = (JobStatus.PENDING, JobStatus.PROCESSING)
#: A bulk cancel stops at most this many jobs per call; the answer says when more are left.
MAX_BULK_CANCEL = 10_000


class InvalidJobFilter(ValueError):
    """A bulk operation's filter that would match too much or nothing sensible; ``field``
    names the offending field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def cancel_query(query: JobQuery) -> JobQuery:
    """``query`` as a bulk cancel runs it: at least one criterion (an empty filter would stop
    every job of the tenant, which nobody asks for by leaving everything out), its statuses
    those that can be cancelled (PENDING and PROCESSING when none is named)."""
    criteria = (
        query.ids,
        query.batch_id,
        query.crawl_id,
        query.statuses,
        query.host,
        query.created_after,
        query.created_before,
    )
    if not any(criterion for criterion in criteria):
        raise InvalidJobFilter(
            "filter",
            "name at least one of ids, batch_id, crawl_id, status, host, created_after, "
            'created_before (status: ["PENDING", "PROCESSING"] stops every unfinished job)',
        )
    refused = [status for status in query.statuses if status not in CANCELLABLE_STATUSES]
    if refused:
        raise InvalidJobFilter(
            "status", f"only PENDING and PROCESSING jobs can be cancelled, not {refused[0]}"
        )
    return replace(query, statuses=query.statuses or CANCELLABLE_STATUSES)


@dataclass(frozen=True, slots=True)
class Cancelled:
    """What a bulk cancel stopped, and whether more jobs matched than one call stops."""

    ids: list[UUID]
    more: bool


@dataclass(frozen=True, slots=True)
class QueueCounts:
    """A tenant's jobs not finished yet, and when its last job completed."""

    pending: int
    processing: int
    last_completed_at: datetime | None


class JobRun(BaseModel):
    """An earlier run of a job, kept when it was run again. A model, not a dataclass: the API
    shows it as it is (:class:`~taskcrawler.contract.jobs.RunOut`), from this one declaration."""

    model_config = ConfigDict(frozen=True)

    run: int
    status: str
    retry_count: int
    http_status: int | None
    scraped_title: str | None
    error_code: str | None
    error_log: str | None
    content_hash: str | None
    started_at: datetime | None
    finished_at: datetime | None
