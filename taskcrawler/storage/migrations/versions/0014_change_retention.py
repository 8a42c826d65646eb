"""change retention: a monitor's changes are pruned by age as well as by count

The worker deletes changes older than ``TASKCRAWLER_CHANGE_RETENTION_DAYS`` across every
monitor, oldest first, a batch at a time; the monitor's index (monitor, time) cannot find those,
so they get an index of their own.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_monitor_changes_detected", "monitor_changes", ["detected_at"])


def downgrade() -> None:
    op.drop_index("ix_monitor_changes_detected", table_name="monitor_changes")
