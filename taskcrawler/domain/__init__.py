"""The vocabulary of TaskCrawler: jobs, their states, errors and URLs. No I/O lives here."""

from taskcrawler.domain.backoff import backoff_delay
from taskcrawler.domain.errors import (
    ErrorCode,
    FetchError,
    InvalidURL,
    QueueUnavailable,
    ServiceUnavailable,
    StorageUnavailable,
    UnstorableData,
)
from taskcrawler.domain.jobs import ClaimedJob, Job, JobStatus, Outcome
from taskcrawler.domain.urls import normalize_url, validate_url

__all__ = [
    "ClaimedJob",
    "ErrorCode",
    "FetchError",
    "InvalidURL",
    "Job",
    "JobStatus",
    "Outcome",
    "QueueUnavailable",
    "ServiceUnavailable",
    "StorageUnavailable",
    "UnstorableData",
    "backoff_delay",
    "normalize_url",
    "validate_url",
]
