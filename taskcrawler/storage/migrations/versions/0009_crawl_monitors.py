"""crawl monitors: the crawl each round of a crawl monitor started, and the pages it found

A crawl monitor's round is an ordinary crawl. ``monitor_crawls`` links the round (monitor, slot
time) to that crawl; once the crawl is no longer running, change detection compares its pages
with the last round's, records the pages added and removed, and keeps the round's pages
(``pages``) for the next comparison, and ``read_at`` says it did.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from taskcrawler.storage.tables import JSONType, UTCDateTime

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "monitor_crawls",
        sa.Column(
            "monitor_id",
            sa.Uuid(),
            sa.ForeignKey("monitors.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("slot_at", UTCDateTime(), primary_key=True),
        sa.Column(
            "crawl_id",
            sa.Uuid(),
            sa.ForeignKey("crawls.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("read_at", UTCDateTime()),
        sa.Column("complete", sa.Boolean()),
        sa.Column("pages", JSONType),
    )
    op.create_index("ix_monitor_crawls_crawl", "monitor_crawls", ["crawl_id"])
    op.create_index(
        "ix_monitor_crawls_unread",
        "monitor_crawls",
        ["monitor_id"],
        postgresql_where=sa.text("read_at IS NULL"),
        sqlite_where=sa.text("read_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_monitor_crawls_unread", table_name="monitor_crawls")
    op.drop_index("ix_monitor_crawls_crawl", table_name="monitor_crawls")
    op.drop_table("monitor_crawls")
