"""Shared pieces of the job queries: columns, row mapping, keys, time."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from taskcrawler.domain.jobs import FINAL_STATUSES as domain_final_statuses
from taskcrawler.domain.jobs import Job, JobStatus
from taskcrawler.domain.urls import normalize_url
from taskcrawler.storage.tables import jobs

PENDING = JobStatus.PENDING.value
PROCESSING = JobStatus.PROCESSING.value

JOB_COLUMNS = (
    jobs.c.id,
    jobs.c.url,
    jobs.c.status,
    jobs.c.retry_count,
    jobs.c.created_at,
    jobs.c.scraped_title,
    jobs.c.error_log,
    jobs.c.error_code,
    jobs.c.http_status,
    jobs.c.final_url,
    jobs.c.content_type,
    jobs.c.started_at,
    jobs.c.finished_at,
    jobs.c.next_attempt_at,
    jobs.c.result,
    jobs.c.formats,
    jobs.c.callback_url,
    jobs.c.run_count,
    jobs.c.host,
    jobs.c.unchanged,
)

FINAL_STATUSES = tuple(sorted(status.value for status in domain_final_statuses))
DEFAULT_FORMATS = ("metadata",)

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
)
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
)
#: What every outcome's write sets besides its transition's values: the lease is over.
LEASE_ENDED = {"lease_token": None, "lease_expires_at": None}


def utcnow() -> datetime:
    return datetime.now(UTC)


def url_key(url: str) -> str:
    return hashlib.sha256(normalize_url(url).encode()).hexdigest()


def row_to_job(row: Any) -> Job:
    m = row._mapping
    return Job(
        id=m["id"],
        url=m["url"],
        status=JobStatus(m["status"]),
        retry_count=m["retry_count"],
        created_at=m["created_at"],
        scraped_title=m["scraped_title"],
        error_log=m["error_log"],
        error_code=m["error_code"],
        http_status=m["http_status"],
        final_url=m["final_url"],
        content_type=m["content_type"],
        started_at=m["started_at"],
        finished_at=m["finished_at"],
        next_attempt_at=m["next_attempt_at"],
        result=m["result"],
        formats=tuple(m["formats"] or DEFAULT_FORMATS),
        callback_url=m["callback_url"],
        run_count=m["run_count"],
        host=m["host"],
        unchanged=bool(m["unchanged"]),
    )
