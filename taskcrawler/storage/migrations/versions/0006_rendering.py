"""rendering: a job's render mode and options, and the screenshots of rendered pages

Revision ID: 0006
Revises: 0003
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from taskcrawler.storage.tables import JSONType, UTCDateTime

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("render", sa.String(8)))
        batch.add_column(sa.Column("render_options", JSONType))
    op.create_table(
        "job_screenshots",
        sa.Column(
            "job_id",
            sa.Uuid(),
            sa.ForeignKey("jobs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("taken_at", UTCDateTime(), nullable=False),
        sa.Column("width", sa.Integer(), nullable=False),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("cut", sa.Boolean(), nullable=False),
        sa.Column("png", sa.LargeBinary(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("job_screenshots")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("render_options")
        batch.drop_column("render")
