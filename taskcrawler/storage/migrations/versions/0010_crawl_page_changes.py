"""crawl page changes: a crawl monitor's round is read under a lease, and a change names the job
it was compared with

A crawl monitor reports content changes of the pages two rounds both found. Each round's pages
are read through the monitor's ignore selectors outside any transaction, so the round is taken
under a lease (``monitor_crawls.reading_until``) as a URL monitor's runs are. Each round's pages
are jobs of their own, so a change records the job of the run it was compared with
(``monitor_changes.previous_job_id``; None for added and removed pages).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from taskcrawler.storage.tables import UTCDateTime

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("monitor_crawls", sa.Column("reading_until", UTCDateTime()))
    op.add_column("monitor_changes", sa.Column("previous_job_id", sa.Uuid()))


def downgrade() -> None:
    with op.batch_alter_table("monitor_changes") as batch:
        batch.drop_column("previous_job_id")
    with op.batch_alter_table("monitor_crawls") as batch:
        batch.drop_column("reading_until")
