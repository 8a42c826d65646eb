"""Log context: every line logged while a worker handles a job carries that job's ``job_id``.

The worker binds the job id to a context variable at the start of the job's task; asyncio gives
each task its own copy of the context, so concurrent jobs never see each other's id. A
:class:`JobContextFilter` on the handler copies it onto each record, where the JSON formatter
makes it a key and :class:`TextFormatter` appends it.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import TYPE_CHECKING
from uuid import UUID

if TYPE_CHECKING:
    from taskcrawler.domain import Outcome
    from taskcrawler.observability.metrics import OutcomeKind

log = logging.getLogger("taskcrawler.jobs")

_job_id: ContextVar[UUID | str | None] = ContextVar("taskcrawler_job_id", default=None)

TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def bind_job(job_id: UUID | str | None) -> None:
    """Tag every log line of the current task (and the tasks it starts) with ``job_id``."""
    _job_id.set(job_id)


class JobContextFilter(logging.Filter):
    """Adds ``job_id`` from the context unless the call passed one with ``extra=``."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "job_id"):
            job_id = _job_id.get()
            if job_id is not None:
                record.job_id = job_id
        return True


class TextFormatter(logging.Formatter):
    """The terminal format, with ``[job <id>]`` after the message of a line about a job."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT, "%H:%M:%S")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        job_id = getattr(record, "job_id", None)
        return f"{line} [job {job_id}]" if job_id is not None else line


def log_outcome(outcome: Outcome, kind: OutcomeKind) -> None:
    """One line per persisted outcome: INFO for a job failed for good, DEBUG for the rest (a
    line per completed job at INFO would cost more than the job at thousands per second)."""
    level = logging.INFO if kind == "failed" else logging.DEBUG
    if not log.isEnabledFor(level):
        return
    job = outcome.job
    extra = {"job_id": job.id, "outcome": kind, "url": job.url}
    if outcome.error_code is None:
        log.log(level, "job %s (HTTP %s)", kind, outcome.http_status, extra=extra)
    else:
        extra["error_code"] = outcome.error_code
        message = "job %s: %s: %s"
        log.log(level, message, kind, outcome.error_code, outcome.error_message, extra=extra)
