"""Webhook deliveries: an outbox written with the job's outcome, claimed by dispatchers.

The outbox row is inserted in the transaction that makes the job COMPLETED or FAILED, so a
delivery exists exactly for the outcomes that were persisted: never lost, never invented.

Dispatchers in many workers share the table safely: a claim is one UPDATE ... RETURNING over rows
locked with SKIP LOCKED (PostgreSQL; SQLite has one writer). The claim pushes ``next_attempt_at``
one lease ahead and counts the attempt, so a dispatcher that dies mid-POST lets the delivery come
due again after the lease (sent again: at least once), and its late result, fenced by the attempt
number, changes nothing. A claim that sent nothing (the callback URL was refused before any
connection) takes its count back when it records the refusal: ``attempts`` counts POSTs sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from taskcrawler.domain import JobStatus, Outcome
from taskcrawler.domain.views import job_document
from taskcrawler.domain.webhooks import (
    ClaimedDelivery,
    Delivery,
    DeliveryStatus,
    event_for,
)
from taskcrawler.storage.backend import Backend
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.rows import JOB_COLUMNS, row_to_job, utcnow
from taskcrawler.storage.tables import api_keys, jobs, webhook_deliveries

deliveries = webhook_deliveries
#: The states a job announces to its callback URL.
_ANNOUNCED = tuple(status.value for status in JobStatus if event_for(status) is not None)
_PENDING = DeliveryStatus.PENDING.value


# --- the outbox: called inside the transaction that records outcomes --------------------------


def enqueue_for_outcomes(conn: Connection, backend: Backend, outcomes: Sequence[Outcome]) -> int:
    """Queue a delivery for each outcome that, in this transaction, made its job final.

    Call after the guarded outcome UPDATEs, on the same connection. An outcome whose write
    matched no row (its lease was lost) is recognised by ``finished_at``: the row then holds
    another attempt's time, and that attempt queues its own delivery.
    """
    wanted = {(o.job.id, o.finished_at) for o in outcomes if o.job.callback_url}
    if not wanted:
        return 0
    rows = _final_jobs(conn, backend, {job_id for job_id, _ in wanted})
    return _insert(conn, (row for row in rows if (row.id, row.finished_at) in wanted))


def _final_jobs(conn: Connection, backend: Backend, job_ids: Iterable[UUID]) -> list[Any]:
    result = conn.execute(
        sa.select(*JOB_COLUMNS, jobs.c.owner).where(
            backend.any_of(jobs.c.id, list(job_ids)),
            jobs.c.status.in_(_ANNOUNCED),
            jobs.c.callback_url.is_not(None),
        )
    )
    return list(result)


def _insert(conn: Connection, rows: Iterable[Any]) -> int:
    now = utcnow()
    values: list[dict[str, Any]] = []
    for row in rows:
        job = row_to_job(row)
        # A crawl's page has a callback URL only when its crawl asked for crawl.page.
        event = event_for(job.status, crawl_page=job.crawl_id is not None)
        if event is None or not job.callback_url:
            continue
        values.append(
            {
                "id": uuid.uuid4(),
                "job_id": job.id,
                "owner": row.owner,
                "url": job.callback_url,
                "event": event.value,
                "payload": job_document(job),
                "status": _PENDING,
                "attempts": 0,
                "next_attempt_at": now,
                "created_at": now,
            }
        )
    if values:
        conn.execute(deliveries.insert(), values)
    return len(values)


# --- dispatchers and the API ------------------------------------------------------------------

_DELIVERY_COLUMNS = (
    deliveries.c.id,
    deliveries.c.job_id,
    deliveries.c.url,
    deliveries.c.event,
    deliveries.c.status,
    deliveries.c.attempts,
    deliveries.c.created_at,
    deliveries.c.next_attempt_at,
    deliveries.c.last_status_code,
    deliveries.c.last_error,
    deliveries.c.delivered_at,
)


def _row_to_delivery(row: Any) -> Delivery:
    m = row._mapping
    return Delivery(
        id=m["id"],
        job_id=m["job_id"],
        url=m["url"],
        event=m["event"],
        status=DeliveryStatus(m["status"]),
        attempts=m["attempts"],
        created_at=m["created_at"],
        # A PENDING delivery's next attempt; a claimed one's is its lease, shown as is.
        next_attempt_at=m["next_attempt_at"],
        last_status_code=m["last_status_code"],
        last_error=m["last_error"],
        delivered_at=m["delivered_at"],
    )


#: Whether a delivery is due, read by every worker each second: built once (SQLAlchemy caches
#: the compiled form, not the building).
_ANY_DUE = (
    sa.select(deliveries.c.id)
    .where(deliveries.c.status == _PENDING, deliveries.c.next_attempt_at <= sa.bindparam("now"))
    .limit(1)
)


class WebhookStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @unavailable_on_connection_errors
    async def claim_due(
        self, *, limit: int, lease_seconds: float, default_secret: str | None
    ) -> list[ClaimedDelivery]:
        """Take up to ``limit`` due deliveries for one attempt each, under a lease."""
        now = utcnow()
        lease_end = now + timedelta(seconds=lease_seconds)
        is_due = sa.and_(deliveries.c.status == _PENDING, deliveries.c.next_attempt_at <= now)
        # Every worker asks once a second and most find nothing: a read says so in one round
        # trip, without a transaction or the writer (SQLite's is the API's too).
        async with self.db.read_statement() as conn:
            if (await conn.execute(_ANY_DUE, {"now": now})).first() is None:
                return []
        due = (
            sa.select(deliveries.c.id)
            .where(is_due)
            .order_by(deliveries.c.next_attempt_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        stmt = (
            deliveries.update()
            .where(deliveries.c.id.in_(due.scalar_subquery()), is_due)
            .values(
                attempts=deliveries.c.attempts + 1,
                next_attempt_at=lease_end,
                lease_expires_at=lease_end,
            )
            .returning(
                deliveries.c.id,
                deliveries.c.job_id,
                deliveries.c.owner,
                deliveries.c.url,
                deliveries.c.event,
                deliveries.c.payload,
                deliveries.c.attempts,
                deliveries.c.style,
                deliveries.c.headers,
            )
        )
        async with self.db.write() as conn:
            rows = (await conn.execute(stmt)).all()
            owners = {row.owner for row in rows if row.owner}
            secrets: dict[str, str | None] = {}
            if owners:
                found = await conn.execute(
                    sa.select(api_keys.c.id, api_keys.c.webhook_secret).where(
                        api_keys.c.id.in_(owners)
                    )
                )
                secrets = {key_id: secret for key_id, secret in found}
        return [
            ClaimedDelivery(
                id=row.id,
                job_id=row.job_id,
                url=row.url,
                event=row.event,
                payload=row.payload,
                attempts=row.attempts,
                secret=secrets.get(row.owner) or default_secret,
                style=row.style,
                headers=dict(row.headers) if row.headers else None,
            )
            for row in rows
        ]

    @unavailable_on_connection_errors
    async def finish_attempt(
        self,
        delivery: ClaimedDelivery,
        *,
        status: DeliveryStatus,
        status_code: int | None,
        error: str | None,
        next_attempt_at: datetime | None = None,
    ) -> bool:
        """Record one attempt: DELIVERED, PENDING again (due at ``next_attempt_at``), FAILED, or
        BLOCKED (refused before connecting: the claim's count is taken back, as no POST went
        out). Fenced by the attempt number; returns whether the write applied."""
        values: dict[str, Any] = {
            "status": status.value,
            "last_status_code": status_code,
            "last_error": error,
            "lease_expires_at": None,
            "next_attempt_at": next_attempt_at if status is DeliveryStatus.PENDING else None,
        }
        if status is DeliveryStatus.DELIVERED:
            values["delivered_at"] = utcnow()
        if status is DeliveryStatus.BLOCKED:
            values["attempts"] = deliveries.c.attempts - 1
        async with self.db.write() as conn:
            result = await conn.execute(
                deliveries.update()
                .where(
                    deliveries.c.id == delivery.id,
                    deliveries.c.status == _PENDING,
                    deliveries.c.attempts == delivery.attempts,
                )
                .values(values)
            )
        return result.rowcount > 0

    @unavailable_on_connection_errors
    async def list_for_job(self, job_id: UUID, *, owner: str, limit: int) -> list[Delivery]:
        """A job's last ``limit`` deliveries, oldest first (one per COMPLETED/FAILED run of the
        job: a monitored page's grow without end)."""
        async with self.db.read() as conn:
            rows = await conn.execute(
                sa.select(*_DELIVERY_COLUMNS)
                .where(deliveries.c.job_id == job_id, deliveries.c.owner == owner)
                .order_by(deliveries.c.created_at.desc(), deliveries.c.id.desc())
                .limit(limit)
            )
        return [_row_to_delivery(row) for row in reversed(list(rows))]
