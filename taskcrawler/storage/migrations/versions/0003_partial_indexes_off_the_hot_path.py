"""the sweeper's partial indexes: only its own queries may use them

A partial index on ``status = 'PENDING'`` alone was usable by every statement that tests
``status = 'PENDING'``, the claim included. When statistics were taken while no job was
PENDING, PostgreSQL estimated one such row and claimed by scanning every PENDING row in the
index instead of looking up the claimed ids in the primary key: the cost of a claim grew with
the backlog. The same held for the outcome writes and ``status = 'PROCESSING'``. Each index now
also requires its key column to be set, which the sweeper's range conditions imply and the
claim and outcome statements do not. They hold the same rows: a PENDING job always has a
dispatch time and a PROCESSING job a lease expiry.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEXES = {
    "ix_jobs_dispatch": ("dispatch_at", "PENDING"),
    "ix_jobs_lease": ("lease_expires_at", "PROCESSING"),
}


def _recreate(name: str, column: str, where: str) -> None:
    op.drop_index(name, table_name="jobs")
    op.create_index(
        name,
        "jobs",
        [column],
        postgresql_where=sa.text(where),
        sqlite_where=sa.text(where),
    )


def upgrade() -> None:
    # Every code path sets them with the status; a row that somehow lacks one is made due at
    # once (PENDING: dispatched by the next sweep; PROCESSING: its lease recovered).
    for column, status in _INDEXES.values():
        op.execute(
            f"UPDATE jobs SET {column} = CURRENT_TIMESTAMP"
            f" WHERE status = '{status}' AND {column} IS NULL"
        )
    for name, (column, status) in _INDEXES.items():
        _recreate(name, column, f"status = '{status}' AND {column} IS NOT NULL")


def downgrade() -> None:
    for name, (column, status) in _INDEXES.items():
        _recreate(name, column, f"status = '{status}'")
