"""Shared pieces of the job queries: columns, row mapping, keys, time."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from taskcrawler.domain.jobs import FINAL_STATUSES as domain_final_statuses
from taskcrawler.domain.jobs import UNSTATED_FORMATS, Job, JobStatus
from taskcrawler.domain.rendering import RenderRequest
from taskcrawler.domain.scrape_options import ScrapeOptions
from taskcrawler.domain.urls import normalize_url
from taskcrawler.storage.tables import jobs

PENDING = JobStatus.PENDING.value
PROCESSING = JobStatus.PROCESSING.value

#: A job's columns: every field of :class:`Job` is stored in the column of its name.
JOB_COLUMNS = tuple(jobs.c[name] for name in Job.__dataclass_fields__)

FINAL_STATUSES = tuple(sorted(status.value for status in domain_final_statuses))

#: The columns a new job sets (``jobs._new_row``'s keys).
NEW_JOB_COLUMNS = (
    "id",
    "owner",
    "url",
    "url_key",
    "host",
    "status",
    "retry_count",
    "created_at",
    "dispatch_at",
    "formats",
    "callback_url",
    "render",
    "render_options",
    "options",
)
#: The columns a crawl's new page sets.
FRONTIER_JOB_COLUMNS = (*NEW_JOB_COLUMNS, "crawl_id", "depth")
#: What a claim reads of each job it takes.
CLAIMED_COLUMNS = (
    "id",
    "url",
    "retry_count",
    "formats",
    "etag",
    "last_modified",
    "callback_url",
    "created_at",
    "run_count",
    "owner",
    "render",
    "render_options",
    "options",
    "crawl_id",
    "depth",
    "from_archive",
)
#: What every outcome's write sets besides its transition's values: the lease is over.
LEASE_ENDED = {"lease_token": None, "lease_expires_at": None}


def utcnow() -> datetime:
    return datetime.now(UTC)


def url_key(url: str) -> str:
    return hashlib.sha256(normalize_url(url).encode()).hexdigest()


def frontier_key(crawl_id: UUID, key: str) -> str:
    """The ``url_key`` of a crawl's page: per crawl, so each crawl fetches its own pages, and
    never equal to a plain job's (whose key hashes the bare normalized URL)."""
    return hashlib.sha256(f"crawl:{crawl_id}:{key}".encode()).hexdigest()


def formats_of(stored: Any) -> tuple[str, ...]:
    """A job's formats as its row stores them (NULL: the formats of jobs that stated none)."""
    return tuple(stored or UNSTATED_FORMATS)


def row_to_job(row: Any) -> Job:
    """The job a row of :data:`JOB_COLUMNS` holds."""
    mapping = row._mapping  # a new view at each access: one for the row
    values = {column.name: mapping[column.name] for column in JOB_COLUMNS}
    values["status"] = JobStatus(values["status"])
    values["formats"] = formats_of(values["formats"])
    values["unchanged"] = bool(values["unchanged"])
    values["render"] = values["render"] or "never"
    options = values["render_options"]
    values["render_options"] = None if options is None else RenderRequest.from_json(options)
    values["options"] = ScrapeOptions.from_json(values["options"])
    return Job(**values)
