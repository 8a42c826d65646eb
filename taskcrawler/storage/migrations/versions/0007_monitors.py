"""monitors: watched pages, the slots fired, the changes found, and every run's content

Revision ID: 0007
Revises: 0003
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from taskcrawler.storage.tables import JSONType, UTCDateTime

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _fk(table: str) -> sa.ForeignKey:
    return sa.ForeignKey(f"{table}.id", ondelete="CASCADE")


def upgrade() -> None:
    op.create_table(
        "monitors",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("owner", sa.String(64), nullable=False, server_default=""),
        sa.Column("spec", JSONType, nullable=False),
        sa.Column("interval_seconds", sa.Float(), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("anchor_at", UTCDateTime(), nullable=False),
        sa.Column("last_slot_at", UTCDateTime()),
        sa.Column("next_due_at", UTCDateTime(), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("callback_url", sa.Text()),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_monitors_owner_created", "monitors", ["owner", "created_at", "id"])
    op.create_index(
        "ix_monitors_due",
        "monitors",
        ["next_due_at"],
        postgresql_where=sa.text("NOT paused"),
        sqlite_where=sa.text("NOT paused"),
    )
    op.create_table(
        "monitor_pages",
        sa.Column("monitor_id", sa.Uuid(), _fk("monitors"), primary_key=True),
        sa.Column("job_id", sa.Uuid(), _fk("jobs"), primary_key=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("evaluated_run", sa.Integer()),
        sa.Column("baseline_run", sa.Integer()),
        sa.Column("awaiting_read", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("reading_until", UTCDateTime()),
        sa.Column("run_due", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_index("ix_monitor_pages_job", "monitor_pages", ["job_id"])
    op.create_index(
        "ix_monitor_pages_awaiting",
        "monitor_pages",
        ["job_id"],
        postgresql_where=sa.text("awaiting_read"),
        sqlite_where=sa.text("awaiting_read"),
    )
    op.create_table(
        "monitor_rounds",
        sa.Column("monitor_id", sa.Uuid(), _fk("monitors"), primary_key=True),
        sa.Column("slot_at", UTCDateTime(), primary_key=True),
        sa.Column("fired_at", UTCDateTime(), nullable=False),
        sa.Column("missed", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("started", sa.Integer(), nullable=False, server_default="0"),
    )
    op.create_table(
        "monitor_changes",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("monitor_id", sa.Uuid(), _fk("monitors"), nullable=False),
        sa.Column("owner", sa.String(64), nullable=False, server_default=""),
        sa.Column("job_id", sa.Uuid(), _fk("jobs"), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("run", sa.Integer()),
        sa.Column("previous_run", sa.Integer()),
        sa.Column("detected_at", UTCDateTime(), nullable=False),
        sa.Column("diff", sa.Text()),
        sa.Column("diff_complete", sa.Boolean()),
        sa.Column("diff_coarse", sa.Boolean()),
        sa.Column("metadata", JSONType),
    )
    op.create_index(
        "ix_monitor_changes_monitor", "monitor_changes", ["monitor_id", "detected_at", "id"]
    )
    op.create_table(
        "run_contents",
        sa.Column("job_id", sa.Uuid(), _fk("jobs"), primary_key=True),
        sa.Column("run", sa.Integer(), primary_key=True),
        sa.Column("fetched_at", UTCDateTime(), nullable=False),
        sa.Column("http_status", sa.Integer()),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("fingerprint", sa.String(80)),
        sa.Column("digest", sa.String(80)),
        sa.Column("content_run", sa.Integer()),
        sa.Column("metadata", JSONType),
        sa.Column("blob", sa.LargeBinary()),
    )


def downgrade() -> None:
    for table in ("run_contents", "monitor_changes", "monitor_rounds", "monitor_pages"):
        op.drop_table(table)
    op.drop_index("ix_monitors_due", table_name="monitors")
    op.drop_index("ix_monitors_owner_created", table_name="monitors")
    op.drop_table("monitors")
