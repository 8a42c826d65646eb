"""crawls: a crawl's row, and its pages as ordinary jobs that point at it

A crawl's pages are jobs with ``crawl_id`` and ``depth`` set. They are deduplicated per crawl by
the existing unique ``(owner, url_key)`` index: a crawl page's ``url_key`` is the hash of the
crawl's id and the page's crawl key, so two workers discovering one URL insert one row. The
partial indexes hold crawl pages only, so jobs outside crawls pay nothing for them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from taskcrawler.storage.tables import JSONType, UTCDateTime

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CRAWL_PAGES = "crawl_id IS NOT NULL"


def upgrade() -> None:
    op.create_table(
        "crawls",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("owner", sa.String(64), nullable=False, server_default=""),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("spec", JSONType, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("discovered", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("callback_url", sa.Text()),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime()),
        sa.PrimaryKeyConstraint("id", name="pk_crawls"),
    )
    op.create_index("ix_crawls_owner_created", "crawls", ["owner", "created_at", "id"])
    op.create_index(
        "ix_crawls_running",
        "crawls",
        ["created_at"],
        postgresql_where=sa.text("status = 'RUNNING'"),
        sqlite_where=sa.text("status = 'RUNNING'"),
    )
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("crawl_id", sa.Uuid()))
        batch.add_column(sa.Column("depth", sa.Integer()))
    for name, columns in (
        ("ix_jobs_crawl_status", ["crawl_id", "status"]),
        ("ix_jobs_crawl_created", ["crawl_id", "created_at", "id"]),
    ):
        op.create_index(
            name,
            "jobs",
            columns,
            postgresql_where=sa.text(_CRAWL_PAGES),
            sqlite_where=sa.text(_CRAWL_PAGES),
        )


def downgrade() -> None:
    op.drop_index("ix_jobs_crawl_created", table_name="jobs")
    op.drop_index("ix_jobs_crawl_status", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("depth")
        batch.drop_column("crawl_id")
    op.drop_index("ix_crawls_running", table_name="crawls")
    op.drop_index("ix_crawls_owner_created", table_name="crawls")
    op.drop_table("crawls")
