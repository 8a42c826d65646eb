"""Responses remembered by ``Idempotency-Key``, so a client may safely repeat a request."""

from __future__ import annotations

import sqlalchemy as sa

from taskcrawler.domain.idempotency import StoredResponse
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.rows import utcnow
from taskcrawler.storage.tables import idempotent_requests


class IdempotencyStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @unavailable_on_connection_errors
    async def get(self, owner: str, key: str) -> StoredResponse | None:
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(idempotent_requests).where(
                        idempotent_requests.c.owner == owner, idempotent_requests.c.key == key
                    )
                )
            ).first()
        return StoredResponse(row.request_hash, row.status_code, row.response) if row else None

    @unavailable_on_connection_errors
    async def remember(self, owner: str, key: str, response: StoredResponse) -> StoredResponse:
        """Store the first answer for this key; if another request stored one first, that one
        is returned, so concurrent repeats all see the same answer."""
        async with self.db.write() as conn:
            await conn.execute(
                self.db.backend.insert(idempotent_requests)
                .values(
                    owner=owner,
                    key=key,
                    request_hash=response.request_hash,
                    status_code=response.status_code,
                    response=response.body,
                    created_at=utcnow(),
                )
                .on_conflict_do_nothing(index_elements=["owner", "key"])
            )
        return await self.get(owner, key) or response
