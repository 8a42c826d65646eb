"""formats that grow: when a job's page was fetched, and whether its next run reads the stored copy

A URL's job gains the formats a later submission asks for. When its raw page is archived they
are made from that copy without fetching (``jobs.from_archive`` marks such a run), and then the
result is no fresher than the copy: ``jobs.fetched_at`` keeps when the page was fetched, which
``max_age`` (of jobs and crawls) counts from. Rows from before have neither: ``finished_at``
stands for ``fetched_at``, and no run of theirs is marked.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from taskcrawler.storage.tables import UTCDateTime

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMNs: nullable, no default, so neither database rewrites the jobs table.
    op.add_column("jobs", sa.Column("fetched_at", UTCDateTime()))
    op.add_column("jobs", sa.Column("from_archive", sa.Boolean()))


def downgrade() -> None:
    # Not a batch (a copy of the table on SQLite): the copy would lose the jobs' trigger of
    # migration 0008. SQLite drops a column in place since 3.35.
    for column in ("from_archive", "fetched_at"):
        op.execute(f"ALTER TABLE jobs DROP COLUMN {column}")
