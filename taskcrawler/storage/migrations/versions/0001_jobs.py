"""jobs table

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from taskcrawler.storage.tables import JSONType, UTCDateTime

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("owner", sa.String(64), nullable=False, server_default=""),
        sa.Column("url", sa.Text(), nullable=False),
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
        sa.Column("next_attempt_at", UTCDateTime()),
        sa.Column("dispatch_at", UTCDateTime()),
        sa.Column("lease_token", sa.Uuid()),
        sa.Column("lease_expires_at", UTCDateTime()),
        sa.PrimaryKeyConstraint("id", name="pk_jobs"),
        sa.UniqueConstraint("owner", "url_key", name="uq_jobs_owner_url_key"),
    )
    op.create_index("ix_jobs_owner_created", "jobs", ["owner", "created_at", "id"])
    op.create_index(
        "ix_jobs_dispatch",
        "jobs",
        ["dispatch_at"],
        postgresql_where=sa.text("status = 'PENDING'"),
        sqlite_where=sa.text("status = 'PENDING'"),
    )
    op.create_index(
        "ix_jobs_lease",
        "jobs",
        ["lease_expires_at"],
        postgresql_where=sa.text("status = 'PROCESSING'"),
        sqlite_where=sa.text("status = 'PROCESSING'"),
    )


def downgrade() -> None:
    op.drop_table("jobs")
