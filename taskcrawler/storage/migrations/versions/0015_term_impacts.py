"""PostgreSQL: keyword search reads each term's best postings first, not all of them

A query's common words are held by a large share of the chunks; scoring every posting of each
made a keyword search's time grow with the corpus (a second at 100,000 chunks). Each row of
``chunk_terms`` now carries its ``impact`` (what its frequency and its chunk's length give it of
BM25, at a fixed reference length), and the terms are indexed by owner, term and impact, best
first: a search reads each term's best few hundred postings, ranks their chunks, and scores the
best of them exactly. The primary key becomes (chunk, term), which the exact scoring and the
deletion of a chunk's terms look up (it replaces the index on the chunk alone).

SQLite: ``chunks_version``, a counter every write to ``chunks`` moves (by triggers): a semantic
search keeps the vectors in memory while it stands still, and reading it replaces counting the
chunks' ids (an index of every chunk read per search, 10-30 ms at 100,000).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: BM25's saturating frequency at a chunk length of 100 words (k1 1.2, b 0.75), the order in
#: which a term's postings are read; the score itself is computed from ``tf`` and ``length``.
_IMPACT = "(tf::float4 / (tf + 1.2::float4 * (0.25::float4 + 0.75::float4 * length / 100::float4)))"

_UP = [
    f"ALTER TABLE chunk_terms ADD COLUMN impact real GENERATED ALWAYS AS {_IMPACT} STORED",
    "ALTER TABLE chunk_terms DROP CONSTRAINT pk_chunk_terms",
    "DROP INDEX ix_chunk_terms_chunk",
    "ALTER TABLE chunk_terms ADD CONSTRAINT pk_chunk_terms PRIMARY KEY (chunk_id, term)"
    " INCLUDE (tf, length)",
    "CREATE INDEX ix_chunk_terms_impact ON chunk_terms (owner, term, impact DESC)"
    " INCLUDE (chunk_id, tf, length)",
]

_DOWN = [
    "DROP INDEX ix_chunk_terms_impact",
    "ALTER TABLE chunk_terms DROP CONSTRAINT pk_chunk_terms",
    "ALTER TABLE chunk_terms DROP COLUMN impact",
    "ALTER TABLE chunk_terms ADD CONSTRAINT pk_chunk_terms PRIMARY KEY (owner, term, chunk_id)"
    " INCLUDE (tf, length)",
    "CREATE INDEX ix_chunk_terms_chunk ON chunk_terms (chunk_id)",
]


_SQLITE_TRIGGERS = ("insert", "delete", "update")

_SQLITE_UP = [
    "CREATE TABLE chunks_version (id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)",
    "INSERT INTO chunks_version (id, version) VALUES (1, 0)",
    *(
        f"CREATE TRIGGER chunks_version_{event} AFTER {event.upper()} ON chunks BEGIN"
        " UPDATE chunks_version SET version = version + 1; END"
        for event in _SQLITE_TRIGGERS
    ),
]

_SQLITE_DOWN = [
    *(f"DROP TRIGGER chunks_version_{event}" for event in _SQLITE_TRIGGERS),
    "DROP TABLE chunks_version",
]


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in _SQLITE_UP if sqlite else _UP:
        op.execute(statement)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in _SQLITE_DOWN if sqlite else _DOWN:
        op.execute(statement)
