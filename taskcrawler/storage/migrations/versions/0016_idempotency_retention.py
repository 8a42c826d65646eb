"""idempotency retention: an Idempotency-Key's answer is deleted once it expires

The worker deletes answers stored more than ``TASKCRAWLER_IDEMPOTENCY_RETENTION_HOURS`` ago,
oldest first, a batch at a time; the primary key (owner, key) cannot find those, so they get an
index of their own.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_idempotent_requests_created", "idempotent_requests", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_idempotent_requests_created", table_name="idempotent_requests")
