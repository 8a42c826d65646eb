"""Webhooks: what is sent when a job finishes, and how it is signed. Pure: no I/O here.

A delivery is a POST of the job's JSON (:func:`~taskcrawler.domain.views.job_document`, exactly as
``GET /api/v1/jobs/{id}`` shows it) with:

* ``X-TaskCrawler-Event``: ``job.completed`` or ``job.failed``; ``crawl.page`` for a page of a
  crawl that asked for them, completed or failed (the body is the page's job, its ``status``
  says which); ``crawl.completed``, whose body is the crawl; for a monitor's change,
  ``page.changed``, ``page.added`` or ``page.removed``, whose body is the change as
  ``GET /api/v1/monitors/{id}/changes`` lists it (:func:`change_webhook`)
* ``X-TaskCrawler-Delivery``: the delivery's id (the same on every retry of it: deduplicate on it)
* ``X-TaskCrawler-Timestamp``: Unix seconds when this attempt was sent
* ``X-TaskCrawler-Signature``: ``v1=<hex HMAC-SHA256 of f"{timestamp}.{body}">`` keyed with the
  owner's webhook secret (absent when the owner has none configured)

A receiver recomputes the HMAC over the raw body bytes it got, compares in constant time, and
refuses a timestamp too far from its clock (replays): :func:`verify_signature` does all three.
"""

from __future__ import annotations

import hashlib
import hmac
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any
from uuid import UUID

import orjson

from taskcrawler.domain.backoff import backoff_delay
from taskcrawler.domain.crawls import CRAWL_COMPLETED_EVENT, CRAWL_PAGE_EVENT
from taskcrawler.domain.jobs import JobStatus

if TYPE_CHECKING:
    from taskcrawler.domain.monitors import Change

EVENT_HEADER = "X-TaskCrawler-Event"
DELIVERY_HEADER = "X-TaskCrawler-Delivery"
TIMESTAMP_HEADER = "X-TaskCrawler-Timestamp"
SIGNATURE_HEADER = "X-TaskCrawler-Signature"
SIGNATURE_VERSION = "v1"
#: Firecrawl's signature of its webhooks: ``sha256=<hex HMAC-SHA256 of the raw body>``.
FIRECRAWL_SIGNATURE_HEADER = "X-Firecrawl-Signature"
#: The delivery style (the outbox's ``style``) of a webhook signed as Firecrawl signs.
FIRECRAWL_STYLE = "firecrawl"
#: A receiver should refuse signatures older (or newer) than this, against replays.
DEFAULT_TOLERANCE_SECONDS = 300


class WebhookEvent(StrEnum):
    JOB_COMPLETED = "job.completed"
    JOB_FAILED = "job.failed"
    PAGE_CHANGED = "page.changed"
    PAGE_ADDED = "page.added"
    PAGE_REMOVED = "page.removed"
    CRAWL_COMPLETED = CRAWL_COMPLETED_EVENT
    CRAWL_PAGE = CRAWL_PAGE_EVENT


class DeliveryStatus(StrEnum):
    PENDING = "PENDING"
    DELIVERED = "DELIVERED"
    FAILED = "FAILED"
    #: Never sent: the callback URL was refused before any connection (a blocked address, or a
    #: URL no request can be made to). Final; ``attempts`` does not count it.
    BLOCKED = "BLOCKED"


def event_for(status: JobStatus, *, crawl_page: bool = False) -> WebhookEvent | None:
    """The event a job in ``status`` announces; None for states that announce nothing. A
    crawl's page announces ``crawl.page`` for either outcome (it has a callback URL only when
    its crawl asked for them)."""
    if crawl_page and status in (JobStatus.COMPLETED, JobStatus.FAILED):
        return WebhookEvent.CRAWL_PAGE
    if status is JobStatus.COMPLETED:
        return WebhookEvent.JOB_COMPLETED
    if status is JobStatus.FAILED:
        return WebhookEvent.JOB_FAILED
    return None


#: A change's event by its kind (a ChangeKind's value).
_CHANGE_EVENTS = {
    "changed": WebhookEvent.PAGE_CHANGED,
    "added": WebhookEvent.PAGE_ADDED,
    "removed": WebhookEvent.PAGE_REMOVED,
}


def change_webhook(change: Change) -> tuple[WebhookEvent, dict[str, Any]]:
    """The event and the payload a monitor's change is announced with; the payload is signed
    and delivered like a job's (:func:`encode_body`, :func:`delivery_headers`)."""
    # Imported here: delivery statuses are read by the API's client, which needs no monitors.
    from taskcrawler.domain.monitors import change_document

    return _CHANGE_EVENTS[change.kind], change_document(change)


def encode_body(payload: dict[str, Any]) -> bytes:
    """The bytes sent (and signed). Compact JSON; receivers must verify the raw bytes."""
    return orjson.dumps(payload)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """``v1=<hex>``: HMAC-SHA256 keyed with ``secret`` over ``f"{timestamp}.".encode() + body``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"{SIGNATURE_VERSION}={mac.hexdigest()}"


def verify_signature(
    secret: str,
    body: bytes,
    timestamp_header: str | None,
    signature_header: str | None,
    *,
    tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> bool:
    """What a receiver does: True only for a valid ``v1`` signature of a recent timestamp.

    ``signature_header`` may list several comma-separated signatures (as during a secret
    rotation); any valid one is enough.
    """
    if not timestamp_header or not signature_header:
        return False
    try:
        timestamp = int(timestamp_header)
    except ValueError:
        return False
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_seconds:
        return False
    expected = signature(secret, timestamp, body)
    return any(
        hmac.compare_digest(candidate.strip(), expected)
        for candidate in signature_header.split(",")
    )


def firecrawl_signature(secret: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 keyed with ``secret`` over the raw body, as Firecrawl
    signs its webhooks."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def delivery_headers(
    *,
    delivery_id: UUID,
    event: str,
    body: bytes,
    secret: str | None,
    timestamp: int,
    firecrawl: bool = False,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The headers of one attempt; unsigned when the owner has no secret. ``firecrawl``: also
    signed as Firecrawl signs (a Firecrawl crawl's or batch's webhook); ``extra``: the
    receiver's own headers, which never replace these."""
    headers = {
        "Content-Type": "application/json",
        EVENT_HEADER: event,
        DELIVERY_HEADER: str(delivery_id),
        TIMESTAMP_HEADER: str(timestamp),
    }
    if secret:
        headers[SIGNATURE_HEADER] = signature(secret, timestamp, body)
        if firecrawl:
            headers[FIRECRAWL_SIGNATURE_HEADER] = firecrawl_signature(secret, body)
    ours = {name.lower() for name in headers}
    return {
        **{name: value for name, value in (extra or {}).items() if name.lower() not in ours},
        **headers,
    }


def retry_delay(
    attempts: int, *, base: float, cap: float, rng: random.Random | None = None
) -> float:
    """Seconds before the next attempt after ``attempts`` failed ones: full jitter on
    ``min(cap, base * 2**(attempts-1))``, like job retries."""
    return backoff_delay(attempts, base=base, cap=cap, rng=rng)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One webhook delivery and what happened to it so far."""

    id: UUID
    job_id: UUID
    url: str
    event: str
    status: DeliveryStatus
    attempts: int
    created_at: datetime
    next_attempt_at: datetime | None = None
    last_status_code: int | None = None
    last_error: str | None = None
    delivered_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ClaimedDelivery:
    """A delivery a dispatcher holds for one attempt. ``attempts`` counts this one and fences
    the write of its result: a late dispatcher whose lease was taken over changes nothing."""

    id: UUID
    job_id: UUID
    url: str
    event: str
    payload: dict[str, Any]
    attempts: int
    secret: str | None
    #: :data:`FIRECRAWL_STYLE` for a Firecrawl webhook (signed its way too), else None.
    style: str | None = None
    #: The receiver's own headers (a Firecrawl webhook's ``headers``).
    headers: Mapping[str, str] | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """What one POST got: a status code, or an error (``error`` set), and whether to retry.
    ``sent`` is False when the POST was refused before any connection was made."""

    status_code: int | None = None
    error: str | None = None
    retryable: bool = True
    sent: bool = True

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
