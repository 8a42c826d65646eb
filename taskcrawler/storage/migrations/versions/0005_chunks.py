"""chunks: a page's main content in pieces, embedded, for semantic and keyword search

PostgreSQL: a generated tsvector with a GIN index for keyword search, everywhere; and where the
server has pgvector, the extension, a ``vector`` column and an HNSW cosine index over the
default model's 256 dimensions. Without pgvector the migration warns and goes on: everything but
vector search keeps working, and jobs asking for chunks fail as ``vectors_unavailable``.
SQLite: an FTS5 table kept in step by triggers; vectors are float32 BLOBs searched exactly.

Revision ID: 0005
Revises: 0003
Create Date: 2026-12-05
"""

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("taskcrawler.migrate")

#: Dimensions of the default embedder (wordllama l2_supercat): the HNSW index is built for it.
DEFAULT_DIM = 256

_SQLITE_FTS = [
    "CREATE VIRTUAL TABLE chunks_fts USING fts5("
    "text, content='chunks', content_rowid='id', tokenize='porter unicode61')",
    "CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN "
    "INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN "
    "INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
    "CREATE TRIGGER chunks_fts_update AFTER UPDATE OF text ON chunks BEGIN "
    "INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); "
    "INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text); END",
]


def upgrade() -> None:
    op.create_table(
        "chunks",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("owner", sa.String(64), nullable=False, server_default=""),
        sa.Column("crawl_id", sa.Uuid()),
        sa.Column("chunk_index", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column(
            "heading_path",
            sa.JSON().with_variant(postgresql.JSONB(), "postgresql"),
            nullable=False,
        ),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("dim", sa.Integer(), nullable=False),
        sa.Column("source_hash", sa.String(64), nullable=False),
        sa.Column("embedding", sa.LargeBinary()),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_chunks_job_id_jobs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_chunks"),
        sa.UniqueConstraint("job_id", "chunk_index", name="uq_chunks_job_id_chunk_index"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_chunks_owner_model", "chunks", ["owner", "model"])
    op.create_index("ix_chunks_crawl", "chunks", ["crawl_id"])
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for statement in _SQLITE_FTS:
            op.execute(statement)
        return
    op.execute(
        "ALTER TABLE chunks ADD COLUMN search_vector tsvector "
        "GENERATED ALWAYS AS (to_tsvector('english', text)) STORED"
    )
    op.execute("CREATE INDEX ix_chunks_search_vector ON chunks USING gin (search_vector)")
    if not _create_vector_extension(bind):
        log.warning(
            "PostgreSQL has no pgvector extension: chunks can be stored and keyword-searched, "
            "but jobs asking for the chunks format fail as vectors_unavailable until it is "
            "installed (e.g. the pgvector/pgvector:pg16 image) and `taskcrawler reindex` "
            "runs"
        )
        return
    _add_vector_column()


def _create_vector_extension(bind: sa.Connection) -> bool:
    available = bind.execute(
        sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    ).scalar()
    if not available:
        return False
    try:
        # In a savepoint: without the right to create it, the rest of the migration goes on.
        with bind.begin_nested():
            bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
    except sa.exc.DBAPIError as exc:
        log.warning("could not create the pgvector extension: %s", exc)
        return False
    return True


def _add_vector_column() -> None:
    op.execute("ALTER TABLE chunks ADD COLUMN embedding_vector vector")
    op.execute(
        f"CREATE INDEX ix_chunks_embedding_hnsw_{DEFAULT_DIM} ON chunks USING hnsw "
        f"((embedding_vector::vector({DEFAULT_DIM})) vector_cosine_ops) "
        f"WHERE dim = {DEFAULT_DIM}"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER IF EXISTS chunks_fts_{trigger}")
        op.execute("DROP TABLE IF EXISTS chunks_fts")
    op.drop_table("chunks")
