"""jobs.export_seq: the position of a job's latest finish in the export stream; job_batches

job_batches keeps the jobs of a batch submitted together (Firecrawl's batch scrape), so that
the batch's status can be read back by its id.

An export must hand a consumer every finished result exactly once across calls while jobs keep
finishing. Ordering by ``finished_at`` cannot: two transactions that finish jobs commit in any
order, so a reader may pass a position before an earlier-stamped row becomes visible, and never
see it. The position is assigned by the database, in the finishing transaction, whatever code
path finished the job (the worker, the sweeper, a refused outcome), by a trigger on the status:

- PostgreSQL: the finishing transaction's id (``pg_current_xact_id()``). A reader only returns
  rows below the oldest transaction still running (the xmin of its snapshot): every transaction
  below it has ended, so no row can appear later behind the reader's position.
- SQLite: one more than the owner's largest position. SQLite runs one writer at a time, so
  positions are given in commit order.

Revision ID: 0008
Revises: 0003
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from taskcrawler.storage.tables import JSONType, UTCDateTime

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FINISHED = "('COMPLETED', 'FAILED')"
_WHERE = "export_seq IS NOT NULL"

_PG_FUNCTION = f"""
CREATE FUNCTION jobs_export_seq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IN {_FINISHED} AND NEW.status IS DISTINCT FROM OLD.status THEN
        NEW.export_seq := pg_current_xact_id()::text::bigint;
    END IF;
    RETURN NEW;
END
$$
"""
_PG_TRIGGER = """
CREATE TRIGGER jobs_export_seq BEFORE UPDATE OF status ON jobs
FOR EACH ROW EXECUTE FUNCTION jobs_export_seq()
"""
_SQLITE_TRIGGER = f"""
CREATE TRIGGER jobs_export_seq AFTER UPDATE OF status ON jobs
FOR EACH ROW WHEN NEW.status IN {_FINISHED} AND NEW.status IS NOT OLD.status
BEGIN
    UPDATE jobs SET export_seq = 1 + coalesce(
        (SELECT max(export_seq) FROM jobs WHERE owner = NEW.owner AND {_WHERE}), 0)
    WHERE id = NEW.id;
END
"""


def upgrade() -> None:
    op.create_table(
        "job_batches",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("owner", sa.String(64), nullable=False, server_default=""),
        sa.Column("job_ids", JSONType, nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.add_column("jobs", sa.Column("export_seq", sa.BigInteger()))
    postgres = _postgres()
    # The jobs finished before this revision come first, in the order they finished.
    if postgres:
        op.execute(
            "UPDATE jobs SET export_seq = pg_current_xact_id()::text::bigint"
            f" WHERE status IN {_FINISHED}"
        )
    else:
        op.execute(
            "UPDATE jobs SET export_seq = ranked.n FROM (SELECT id, row_number() OVER"
            " (PARTITION BY owner ORDER BY finished_at, id) AS n FROM jobs"
            f" WHERE status IN {_FINISHED}) AS ranked WHERE jobs.id = ranked.id"
        )
    op.create_index(
        "ix_jobs_export",
        "jobs",
        ["owner", "export_seq", "id"],
        postgresql_where=sa.text(_WHERE),
        sqlite_where=sa.text(_WHERE),
    )
    if postgres:
        op.execute(_PG_FUNCTION)
        op.execute(_PG_TRIGGER)
    else:
        op.execute(_SQLITE_TRIGGER)


def downgrade() -> None:
    op.execute("DROP TRIGGER jobs_export_seq" + (" ON jobs" if _postgres() else ""))
    if _postgres():
        op.execute("DROP FUNCTION jobs_export_seq()")
    op.drop_index("ix_jobs_export", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("export_seq")
    op.drop_table("job_batches")


def _postgres() -> bool:
    return op.get_bind().dialect.name == "postgresql"
