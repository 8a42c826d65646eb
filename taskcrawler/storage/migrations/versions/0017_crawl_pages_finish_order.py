"""crawl pages in finish order: an index over a crawl's pages by export position

A crawl's status pages list its finished pages in the order they finished (their
``export_seq``, given in commit order by migration 0008's trigger), so that a client following
``next`` while the crawl runs sees each once; listed newest first by creation, a page that
finished behind the client's cursor was never shown. This index reads a crawl's pages in that
order from a position, without sorting every finished page of the crawl per status page.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WHERE = "crawl_id IS NOT NULL AND export_seq IS NOT NULL"


def upgrade() -> None:
    op.create_index(
        "ix_jobs_crawl_finished",
        "jobs",
        ["crawl_id", "export_seq", "id"],
        postgresql_where=sa.text(_WHERE),
        sqlite_where=sa.text(_WHERE),
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_crawl_finished", table_name="jobs")
