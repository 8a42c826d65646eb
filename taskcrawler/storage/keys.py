"""API keys in the database."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from taskcrawler.domain.keys import (
    ApiKey,
    NewKey,
    generate_key,
    generate_webhook_secret,
    hash_secret,
)
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.rows import utcnow
from taskcrawler.storage.tables import api_keys

_KEY_COLUMNS = (
    api_keys.c.id,
    api_keys.c.name,
    api_keys.c.is_admin,
    api_keys.c.created_at,
    api_keys.c.requests_per_minute,
    api_keys.c.max_pending_jobs,
    api_keys.c.callback_url,
    api_keys.c.webhook_secret,
    api_keys.c.revoked_at,
)


def _row_to_key(row: Any) -> ApiKey:
    mapping = row._mapping  # a new view at each access: one for the row
    return ApiKey(**{column.name: mapping[column.name] for column in _KEY_COLUMNS})


class KeyStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @unavailable_on_connection_errors
    async def create(
        self,
        name: str,
        *,
        is_admin: bool = False,
        requests_per_minute: int | None = None,
        max_pending_jobs: int | None = None,
        callback_url: str | None = None,
    ) -> tuple[NewKey, ApiKey]:
        """A new key; its token is returned once and never stored."""
        new = generate_key()
        values = {
            "id": new.id,
            "name": name,
            "secret_hash": hash_secret(new.secret),
            "is_admin": is_admin,
            "requests_per_minute": requests_per_minute,
            "max_pending_jobs": max_pending_jobs,
            "callback_url": callback_url,
            "webhook_secret": generate_webhook_secret(),
            "created_at": utcnow(),
        }
        async with self.db.write() as conn:
            row = (
                await conn.execute(api_keys.insert().values(values).returning(*_KEY_COLUMNS))
            ).one()
        return new, _row_to_key(row)

    @unavailable_on_connection_errors
    async def find_active(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key and its secret hash, unless unknown or revoked."""
        async with self.db.read() as conn:
            row = (
                await conn.execute(
                    sa.select(*_KEY_COLUMNS, api_keys.c.secret_hash).where(
                        api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None)
                    )
                )
            ).first()
        return (_row_to_key(row), row.secret_hash) if row else None

    @unavailable_on_connection_errors
    async def list_keys(self) -> list[ApiKey]:
        async with self.db.read() as conn:
            rows = await conn.execute(sa.select(*_KEY_COLUMNS).order_by(api_keys.c.created_at))
        return [_row_to_key(row) for row in rows]

    @unavailable_on_connection_errors
    async def revoke(self, key_id: str) -> bool:
        async with self.db.write() as conn:
            result = await conn.execute(
                api_keys.update()
                .where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
        return result.rowcount > 0

    @unavailable_on_connection_errors
    async def rotate_webhook_secret(self, key_id: str) -> ApiKey | None:
        """Give an active key a new webhook secret (returned once, in the key); None when the
        key is unknown or revoked. Deliveries are signed at send time, so every POST from now
        on, retries of older deliveries included, carries the new signature."""
        async with self.db.write() as conn:
            row = (
                await conn.execute(
                    api_keys.update()
                    .where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
                    .values(webhook_secret=generate_webhook_secret())
                    .returning(*_KEY_COLUMNS)
                )
            ).first()
        return _row_to_key(row) if row is not None else None
