"""Responses remembered by ``Idempotency-Key``, so a client may safely repeat a request, until
they expire (:class:`taskcrawler.domain.idempotency.IdempotencyRetention`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from taskcrawler.domain.idempotency import PENDING, StoredResponse
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.tables import idempotent_requests

_ANSWER = ("request_hash", "status_code", "response", "created_at")


def _claimed_by(owner: str, key: str, request_hash: str, at: datetime) -> list[Any]:
    """The row of the claim made at ``at``, still unanswered."""
    table = idempotent_requests
    return [
        table.c.owner == owner,
        table.c.key == key,
        table.c.request_hash == request_hash,
        table.c.status_code == PENDING,
        table.c.created_at == at,
    ]


class IdempotencyStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @unavailable_on_connection_errors
    async def get(self, owner: str, key: str, *, since: datetime) -> StoredResponse | None:
        """The answer stored for this key at ``since`` or later: an older one has expired,
        even while the sweeper has yet to delete it."""
        table = idempotent_requests
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(table).where(
                        table.c.owner == owner, table.c.key == key, table.c.created_at >= since
                    )
                )
            ).first()
        return StoredResponse(row.request_hash, row.status_code, row.response) if row else None

    @unavailable_on_connection_errors
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
        """Claim the key for a request about to be answered: None when this request holds it
        now, else what the key holds (an answer, or another request's claim: its status code
        is :data:`PENDING`). An expired answer, or a claim older than ``stale_before`` (its
        request died unanswered), is taken over."""
        table = idempotent_requests
        insert = self.db.backend.insert(table).values(
            owner=owner,
            key=key,
            request_hash=request_hash,
            status_code=PENDING,
            response={},
            created_at=at,
        )
        taken_over = (table.c.created_at < since) | (
            (table.c.status_code == PENDING) & (table.c.created_at < stale_before)
        )
        async with self.db.write() as conn:
            claimed = await conn.execute(
                insert.on_conflict_do_update(
                    index_elements=["owner", "key"],
                    set_={column: insert.excluded[column] for column in _ANSWER},
                    where=taken_over,
                )
            )
        if claimed.rowcount == 1:
            return None
        held = await self.get(owner, key, since=since)
        # Released between the two statements: the key is free again, so the claim is retried.
        return held or StoredResponse(request_hash, PENDING, {})

    @unavailable_on_connection_errors
    async def fulfil(self, owner: str, key: str, response: StoredResponse, *, at: datetime) -> None:
        """Store the answer of the request that claimed the key at ``at``."""
        async with self.db.write() as conn:
            await conn.execute(
                idempotent_requests.update()
                .where(*_claimed_by(owner, key, response.request_hash, at))
                .values(status_code=response.status_code, response=response.body)
            )

    @unavailable_on_connection_errors
    async def release(self, owner: str, key: str, request_hash: str, *, at: datetime) -> None:
        """Free the key the request claimed at ``at``, which failed: it stored no answer."""
        async with self.db.write() as conn:
            await conn.execute(
                idempotent_requests.delete().where(*_claimed_by(owner, key, request_hash, at))
            )

    @unavailable_on_connection_errors
    async def forget_before(self, since: datetime, *, limit: int) -> int:
        """Delete at most ``limit`` answers stored before ``since``, the oldest first (their
        own index finds them), in a transaction of its own; how many."""
        table = idempotent_requests
        oldest = (
            sa.select(table.c.owner, table.c.key)
            .where(table.c.created_at < since)
            .order_by(table.c.created_at)
            .limit(limit)
            # Rows another sweeper holds are passed over rather than waited for (PostgreSQL).
            .with_for_update(skip_locked=True)
        )
        async with self.db.write() as conn:
            deleted = await conn.execute(
                table.delete().where(sa.tuple_(table.c.owner, table.c.key).in_(oldest))
            )
        return int(deleted.rowcount or 0)
