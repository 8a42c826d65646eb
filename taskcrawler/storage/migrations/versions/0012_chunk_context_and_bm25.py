"""chunks carry their context and their place in the page; PostgreSQL ranks keywords by BM25

Both: ``chunks.context`` (the page's title and the chunk's headings, indexed with its text; NULL
for the chunks made before, which `taskcrawler reindex` fills in) and ``start_offset`` /
``end_offset`` (the characters of the page's Markdown the chunk spans).

SQLite: the FTS5 index gains the context as a column of its own, and is rebuilt.

PostgreSQL: ``ts_rank`` knows nothing of how rare a word is, so keyword search ranks by BM25 from
stored term statistics instead: ``chunk_terms`` holds each chunk's lexemes (English stemming,
as the tsvector had) with their frequency and the chunk's length, keyed for a lookup by owner and
term (how many chunks hold a term, and which). It replaces the tsvector column and its GIN
index. Existing chunks' terms are filled in here, from their text.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FTS_TRIGGERS = ("insert", "delete", "update")


def _sqlite_fts(columns: Sequence[str]) -> list[str]:
    names = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    return [
        f"CREATE VIRTUAL TABLE chunks_fts USING fts5({names}, content='chunks',"
        " content_rowid='id', tokenize='porter unicode61')",
        "CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN "
        f"INSERT INTO chunks_fts (rowid, {names}) VALUES (new.id, {new}); END",
        "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN "
        f"INSERT INTO chunks_fts (chunks_fts, rowid, {names}) VALUES ('delete', old.id, {old});"
        " END",
        f"CREATE TRIGGER chunks_fts_update AFTER UPDATE OF {names} ON chunks BEGIN "
        f"INSERT INTO chunks_fts (chunks_fts, rowid, {names}) VALUES ('delete', old.id, {old}); "
        f"INSERT INTO chunks_fts (rowid, {names}) VALUES (new.id, {new}); END",
        "INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')",
    ]


def _drop_sqlite_fts() -> None:
    for trigger in _FTS_TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS chunks_fts_{trigger}")
    op.execute("DROP TABLE IF EXISTS chunks_fts")


#: What PostgreSQL indexes of a chunk: its context, then its text.
_DOCUMENT = "to_tsvector('english', coalesce(c.context, '') || E'\\n' || c.text)"

_POSTGRES_UP = [
    "ALTER TABLE chunks ADD COLUMN search_length integer NOT NULL DEFAULT 0",
    "CREATE TABLE chunk_terms ("
    " chunk_id bigint NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,"
    " owner varchar(64) NOT NULL, term text NOT NULL, tf integer NOT NULL,"
    " length integer NOT NULL,"
    " CONSTRAINT pk_chunk_terms PRIMARY KEY (owner, term, chunk_id) INCLUDE (tf, length))",
    "CREATE INDEX ix_chunk_terms_chunk ON chunk_terms (chunk_id)",
    "UPDATE chunks c SET search_length = (SELECT coalesce(sum(array_length(l.positions, 1)), 0)"
    f" FROM unnest({_DOCUMENT}) AS l)",
    "INSERT INTO chunk_terms (chunk_id, owner, term, tf, length)"
    " SELECT c.id, c.owner, l.lexeme, array_length(l.positions, 1), c.search_length"
    f" FROM chunks c, unnest({_DOCUMENT}) AS l",
    "DROP INDEX IF EXISTS ix_chunks_search_vector",
    "ALTER TABLE chunks DROP COLUMN IF EXISTS search_vector",
]

_POSTGRES_DOWN = [
    "DROP TABLE chunk_terms",
    "ALTER TABLE chunks DROP COLUMN search_length",
    "ALTER TABLE chunks ADD COLUMN search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('english', text)) STORED",
    "CREATE INDEX ix_chunks_search_vector ON chunks USING gin (search_vector)",
]


def upgrade() -> None:
    op.add_column("chunks", sa.Column("context", sa.Text()))
    op.add_column("chunks", sa.Column("start_offset", sa.Integer()))
    op.add_column("chunks", sa.Column("end_offset", sa.Integer()))
    if op.get_bind().dialect.name == "sqlite":
        _drop_sqlite_fts()
        for statement in _sqlite_fts(["context", "text"]):
            op.execute(statement)
        return
    for statement in _POSTGRES_UP:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _drop_sqlite_fts()
    else:
        for statement in _POSTGRES_DOWN:
            op.execute(statement)
    with op.batch_alter_table("chunks") as batch:
        batch.drop_column("end_offset")
        batch.drop_column("start_offset")
        batch.drop_column("context")
    if op.get_bind().dialect.name == "sqlite":
        for statement in _sqlite_fts(["text"]):
            op.execute(statement)
