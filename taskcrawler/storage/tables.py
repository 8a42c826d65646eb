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
    # Set while a job waits to be published (a scheduled retry, a failed publish, a job handed
    # back); NULL once published, and only then is it claimable (a claim compares no clocks).
    sa.Column("next_attempt_at", UTCDateTime()),
    # When the sweeper should (re)publish this PENDING job if nobody has claimed it by then.
    sa.Column("dispatch_at", UTCDateTime()),
    sa.Column("lease_token", sa.Uuid()),
    sa.Column("lease_expires_at", UTCDateTime()),
    # what the job asked for, and what a re-scrape needs
    sa.Column("formats", JSONType),  # e.g. ["metadata", "markdown"]; NULL means ["metadata"]
    sa.Column("callback_url", sa.Text()),  # webhook on COMPLETED / FAILED
    sa.Column("etag", sa.Text()),  # validators of the last 200, for If-None-Match / -Modified-Since
    sa.Column("last_modified", sa.Text()),
    sa.Column("run_count", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("unchanged", sa.Boolean()),  # the last run got 304 Not Modified
    # Position of the job's latest finish (COMPLETED or FAILED) in its owner's export stream, set
    # by a trigger in the finishing transaction (migration 0008 says why and how).
    sa.Column("export_seq", sa.BigInteger()),
    sa.UniqueConstraint("owner", "url_key"),
    sa.Index("ix_jobs_owner_created", "owner", "created_at", "id"),
    sa.Index("ix_jobs_owner_status_created", "owner", "status", "created_at", "id"),
    # Partial indexes: only the rows the sweeper looks at are indexed, so they stay small. The
    # key column's IS NOT NULL keeps them to the sweeper's range queries: a claim or an outcome
    # write that could use them would scan every PENDING or PROCESSING row when statistics
    # misjudge how many there are (migration 0003).
    sa.Index(
        "ix_jobs_export",
        "owner",
        "export_seq",
        "id",
        postgresql_where=sa.text("export_seq IS NOT NULL"),
        sqlite_where=sa.text("export_seq IS NOT NULL"),
    ),
    sa.Index(
        "ix_jobs_dispatch",
        "dispatch_at",
        postgresql_where=sa.text("status = 'PENDING' AND dispatch_at IS NOT NULL"),
        sqlite_where=sa.text("status = 'PENDING' AND dispatch_at IS NOT NULL"),
    ),
    sa.Index(
        "ix_jobs_lease",
        "lease_expires_at",
        postgresql_where=sa.text("status = 'PROCESSING' AND lease_expires_at IS NOT NULL"),
        sqlite_where=sa.text("status = 'PROCESSING' AND lease_expires_at IS NOT NULL"),
    ),
)


# --- content, links, archive, runs (what a page says, and the history of re-scrapes) ----------

job_contents = sa.Table(
    "job_contents",
    metadata,
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("format", sa.String(16), primary_key=True),  # markdown | text | html
    sa.Column("body", sa.Text(), nullable=False),
)

job_links = sa.Table(
    "job_links",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    sa.Column("url", sa.Text(), nullable=False),
    sa.Column("url_key", sa.String(64), nullable=False),  # sha256 of the normalized target
    sa.Column("text", sa.Text()),
    sa.Column("rel", sa.String(255)),
    sa.Column("internal", sa.Boolean(), nullable=False),
    sa.Column("nofollow", sa.Boolean(), nullable=False),
    sa.Index("ix_job_links_job_id", "job_id", "id"),
    sa.Index("ix_job_links_target", "owner", "url_key", "id"),
)

page_archive = sa.Table(
    "page_archive",
    metadata,
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("fetched_at", UTCDateTime(), nullable=False),
    sa.Column("final_url", sa.Text(), nullable=False),
    sa.Column("http_status", sa.Integer(), nullable=False),
    sa.Column("headers", JSONType, nullable=False),
    sa.Column("content_type", sa.String(255)),
    sa.Column("charset", sa.String(64)),
    sa.Column("sha256", sa.String(64), nullable=False),  # of the uncompressed body
    sa.Column("size", sa.Integer(), nullable=False),
    sa.Column("body_gz", sa.LargeBinary(), nullable=False),  # gzip of the body as fetched
)

job_runs = sa.Table(
    "job_runs",
    metadata,
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("run", sa.Integer(), primary_key=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("retry_count", sa.Integer(), nullable=False),
    sa.Column("http_status", sa.Integer()),
    sa.Column("scraped_title", sa.Text()),
    sa.Column("error_code", sa.String(64)),
    sa.Column("error_log", sa.Text()),
    sa.Column("content_hash", sa.String(80)),
    sa.Column("started_at", UTCDateTime()),
    sa.Column("finished_at", UTCDateTime()),
)

job_batches = sa.Table(
    "job_batches",
    metadata,
    # A batch of jobs submitted together (Firecrawl's batch scrape): its status is theirs.
    sa.Column("id", sa.Uuid(), primary_key=True),
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    sa.Column("job_ids", JSONType, nullable=False),  # in the order the URLs were given
    sa.Column("created_at", UTCDateTime(), nullable=False),
)

# --- tenancy (API keys, idempotent requests, webhooks) ----------------------------------------

api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),  # public part of the key: tc_<id>_<secret>
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("secret_hash", sa.String(64), nullable=False),  # sha256 of the secret part
    sa.Column("is_admin", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("requests_per_minute", sa.Integer()),
    sa.Column("max_pending_jobs", sa.Integer()),
    sa.Column("callback_url", sa.Text()),  # default webhook for this key's jobs
    sa.Column("webhook_secret", sa.String(64)),  # HMAC key of its webhooks
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("revoked_at", UTCDateTime()),
)

idempotent_requests = sa.Table(
    "idempotent_requests",
    metadata,
    sa.Column("owner", sa.String(64), primary_key=True),
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("request_hash", sa.String(64), nullable=False),
    sa.Column("status_code", sa.Integer(), nullable=False),
    sa.Column("response", JSONType, nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
)

webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    sa.Column("id", sa.Uuid(), primary_key=True),
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    sa.Column("url", sa.Text(), nullable=False),
    sa.Column("event", sa.String(32), nullable=False),  # job.completed | job.failed
    sa.Column("payload", JSONType, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # PENDING|DELIVERED|FAILED|BLOCKED
    sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("next_attempt_at", UTCDateTime()),
    sa.Column("last_status_code", sa.Integer()),
    sa.Column("last_error", sa.Text()),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("delivered_at", UTCDateTime()),
    sa.Column("lease_expires_at", UTCDateTime()),
    sa.Index("ix_webhook_deliveries_job", "job_id", "created_at"),
    sa.Index(
        "ix_webhook_deliveries_due",
        "next_attempt_at",
        postgresql_where=sa.text("status = 'PENDING'"),
        sqlite_where=sa.text("status = 'PENDING'"),
    ),
)
