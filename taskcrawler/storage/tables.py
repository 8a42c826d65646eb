"""The schema, as SQLAlchemy Core tables. Alembic migrations in ``migrations/`` create it."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class UTCDateTime(sa.TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite has no time zones of its own)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored: pass an aware UTC datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", sa.Uuid(), primary_key=True),
    # Who submitted it; deduplication is per owner so tenants learn nothing of each other.
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    sa.Column("url", sa.Text(), nullable=False),
    # sha256 of the normalized URL: a fixed-size unique key whatever the URL's length.
    sa.Column("url_key", sa.String(64), nullable=False),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("retry_count", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("scraped_title", sa.Text()),
    sa.Column("error_code", sa.String(64)),
    sa.Column("error_log", sa.Text()),
    sa.Column("http_status", sa.Integer()),
    sa.Column("final_url", sa.Text()),
    sa.Column("content_type", sa.String(255)),
    sa.Column("result", JSONType),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("started_at", UTCDateTime()),
    sa.Column("finished_at", UTCDateTime()),
    # When a scheduled retry is due; NULL means "due now" (so a claim never compares clocks).
    sa.Column("next_attempt_at", UTCDateTime()),
    # When the sweeper should (re)publish this PENDING job if nobody has claimed it by then.
    sa.Column("dispatch_at", UTCDateTime()),
    sa.Column("lease_token", sa.Uuid()),
    sa.Column("lease_expires_at", UTCDateTime()),
    sa.UniqueConstraint("owner", "url_key"),
    sa.Index("ix_jobs_owner_created", "owner", "created_at", "id"),
    # Partial indexes: only the rows the sweeper looks at are indexed, so they stay small.
    sa.Index(
        "ix_jobs_dispatch",
        "dispatch_at",
        postgresql_where=sa.text("status = 'PENDING'"),
        sqlite_where=sa.text("status = 'PENDING'"),
    ),
    sa.Index(
        "ix_jobs_lease",
        "lease_expires_at",
        postgresql_where=sa.text("status = 'PROCESSING'"),
        sqlite_where=sa.text("status = 'PROCESSING'"),
    ),
)
