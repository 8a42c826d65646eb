"""content, links, archive, runs; API keys, idempotent requests, webhooks

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from taskcrawler.storage.tables import JSONType, UTCDateTime

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _job_fk() -> sa.ForeignKey:
    return sa.ForeignKey("jobs.id", ondelete="CASCADE")


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("formats", JSONType))
        batch.add_column(sa.Column("callback_url", sa.Text()))
        batch.add_column(sa.Column("etag", sa.Text()))
        batch.add_column(sa.Column("last_modified", sa.Text()))
        batch.add_column(sa.Column("run_count", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("unchanged", sa.Boolean()))
    op.create_index("ix_jobs_owner_status_created", "jobs", ["owner", "status", "created_at", "id"])

    op.create_table(
        "job_contents",
        sa.Column("job_id", sa.Uuid(), _job_fk(), primary_key=True),
        sa.Column("format", sa.String(16), primary_key=True),
        sa.Column("body", sa.Text(), nullable=False),
    )
    op.create_table(
        "job_links",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("job_id", sa.Uuid(), _job_fk(), nullable=False),
        sa.Column("owner", sa.String(64), nullable=False, server_default=""),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("url_key", sa.String(64), nullable=False),
        sa.Column("text", sa.Text()),
        sa.Column("rel", sa.String(255)),
        sa.Column("internal", sa.Boolean(), nullable=False),
        sa.Column("nofollow", sa.Boolean(), nullable=False),
    )
    op.create_index("ix_job_links_job_id", "job_links", ["job_id", "id"])
    op.create_index("ix_job_links_target", "job_links", ["owner", "url_key", "id"])
    op.create_table(
        "page_archive",
        sa.Column("job_id", sa.Uuid(), _job_fk(), primary_key=True),
        sa.Column("fetched_at", UTCDateTime(), nullable=False),
        sa.Column("final_url", sa.Text(), nullable=False),
        sa.Column("http_status", sa.Integer(), nullable=False),
        sa.Column("headers", JSONType, nullable=False),
        sa.Column("content_type", sa.String(255)),
        sa.Column("charset", sa.String(64)),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("body_gz", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "job_runs",
        sa.Column("job_id", sa.Uuid(), _job_fk(), primary_key=True),
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

    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("is_admin", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("requests_per_minute", sa.Integer()),
        sa.Column("max_pending_jobs", sa.Integer()),
        sa.Column("callback_url", sa.Text()),
        sa.Column("webhook_secret", sa.String(64)),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime()),
    )
    op.create_table(
        "idempotent_requests",
        sa.Column("owner", sa.String(64), primary_key=True),
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("response", JSONType, nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("job_id", sa.Uuid(), _job_fk(), nullable=False),
        sa.Column("owner", sa.String(64), nullable=False, server_default=""),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("payload", JSONType, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("next_attempt_at", UTCDateTime()),
        sa.Column("last_status_code", sa.Integer()),
        sa.Column("last_error", sa.Text()),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("delivered_at", UTCDateTime()),
        sa.Column("lease_expires_at", UTCDateTime()),
    )
    op.create_index("ix_webhook_deliveries_job", "webhook_deliveries", ["job_id", "created_at"])
    op.create_index(
        "ix_webhook_deliveries_due",
        "webhook_deliveries",
        ["next_attempt_at"],
        postgresql_where=sa.text("status = 'PENDING'"),
        sqlite_where=sa.text("status = 'PENDING'"),
    )


def downgrade() -> None:
    for table in (
        "webhook_deliveries",
        "idempotent_requests",
        "api_keys",
        "job_runs",
        "page_archive",
        "job_links",
        "job_contents",
    ):
        op.drop_table(table)
    op.drop_index("ix_jobs_owner_status_created", "jobs")
    with op.batch_alter_table("jobs") as batch:
        for column in (
            "unchanged",
            "run_count",
            "last_modified",
            "etag",
            "callback_url",
            "formats",
        ):
            batch.drop_column(column)
