"""SQLite: each chunk's terms as postings of their own, read best first by a keyword search

FTS5's ``bm25()`` reads every posting of every word of a query (to count a word's chunks, then
to score each match), so a query of common words cost the more the larger the index (50-70 ms of
CPU at 100,000 chunks). ``chunk_terms`` holds, per chunk and term (FTS5's own tokens, stemmed
as the index stems them), the term's frequency and the chunk's length, which is what FTS5's BM25
reads; the (term, impact) index gives a term's postings by what they can add to a score, best
first, so that a search reads a common word's best few (PostgreSQL's ``chunk_terms`` of
migrations 0012 and 0015, without the owner: FTS5 counts every owner's).

Tokens come from FTS5 itself: a trigger writes the chunk into ``chunk_terms_scratch`` (a
contentless FTS5 table of the same tokenizer, emptied again at once) and reads its tokens back
through ``fts5vocab``, so a term here is exactly a term of ``chunks_fts``. Existing chunks go
through the same table, a thousand at a time.

PostgreSQL: nothing.

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

#: The chunk length at which a posting's impact is computed (BM25's saturating frequency, k1 1.2
#: and b 0.75, were the mean length this): the order in which a term's postings are read, which
#: is all it is used for (a score is computed from ``tf`` and ``length``). About a chunk's length
#: in tokens (stop words included, as FTS5 counts them).
IMPACT_LENGTH = 150.0

_IMPACT = f"(v.tf * 1.0 / (v.tf + 1.2 * (0.25 + 0.75 * d.n / {IMPACT_LENGTH})))"

#: The postings of every chunk in ``chunk_terms_scratch`` (a term's frequency, the chunk's
#: length: every token it holds, as FTS5's BM25 counts it).
_FROM_SCRATCH = (
    "INSERT INTO chunk_terms (term, chunk_id, tf, length, impact)"
    f" SELECT v.term, v.doc, v.tf, d.n, {_IMPACT} FROM"
    " (SELECT term, doc, count(*) AS tf FROM chunk_terms_scratch_vocab GROUP BY doc, term) v"
    " JOIN (SELECT doc, count(*) AS n FROM chunk_terms_scratch_vocab GROUP BY doc) d"
    " ON d.doc = v.doc"
)
_EMPTY_SCRATCH = "INSERT INTO chunk_terms_scratch (chunk_terms_scratch) VALUES ('delete-all')"


def _indexed(row: str) -> str:
    """What a trigger runs for the chunk ``row`` (``new``): its tokens into the scratch table,
    its postings out of it."""
    return (
        f"INSERT INTO chunk_terms_scratch (rowid, context, text) VALUES ({row}.id, {row}.context,"
        f" {row}.text); {_FROM_SCRATCH}; {_EMPTY_SCRATCH};"
    )


_UP = [
    "CREATE TABLE chunk_terms (term text NOT NULL, chunk_id integer NOT NULL,"
    " tf integer NOT NULL, length integer NOT NULL, impact real NOT NULL,"
    " PRIMARY KEY (chunk_id, term)) WITHOUT ROWID",
    "CREATE VIRTUAL TABLE chunk_terms_scratch USING fts5(context, text, content='',"
    " tokenize='porter unicode61')",
    "CREATE VIRTUAL TABLE chunk_terms_scratch_vocab USING fts5vocab(chunk_terms_scratch, instance)",
    "CREATE TRIGGER chunk_terms_insert AFTER INSERT ON chunks BEGIN " + _indexed("new") + " END",
    "CREATE TRIGGER chunk_terms_delete AFTER DELETE ON chunks BEGIN"
    " DELETE FROM chunk_terms WHERE chunk_id = old.id; END",
    "CREATE TRIGGER chunk_terms_update AFTER UPDATE OF context, text ON chunks BEGIN"
    " DELETE FROM chunk_terms WHERE chunk_id = old.id; " + _indexed("new") + " END",
]

#: Built after the existing chunks' postings are in: one sorted build, not random inserts.
_INDEX = (
    "CREATE INDEX ix_chunk_terms_impact ON chunk_terms (term, impact DESC, chunk_id, tf, length)"
)

_DOWN = [
    "DROP TRIGGER chunk_terms_update",
    "DROP TRIGGER chunk_terms_delete",
    "DROP TRIGGER chunk_terms_insert",
    "DROP TABLE chunk_terms_scratch_vocab",
    "DROP TABLE chunk_terms_scratch",
    "DROP TABLE chunk_terms",
]

#: Existing chunks indexed this many at a time (the scratch table holds one batch).
_BATCH = 1000


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    for statement in _UP:
        op.execute(statement)
    last = 0
    while True:
        ids = bind.exec_driver_sql(
            f"SELECT id FROM chunks WHERE id > {last} ORDER BY id LIMIT {_BATCH}"
        ).scalars()
        batch = list(ids)
        if not batch:
            break
        bind.exec_driver_sql(
            "INSERT INTO chunk_terms_scratch (rowid, context, text)"
            f" SELECT id, context, text FROM chunks WHERE id BETWEEN {batch[0]} AND {batch[-1]}"
        )
        bind.exec_driver_sql(_FROM_SCRATCH)
        bind.exec_driver_sql(_EMPTY_SCRATCH)
        last = batch[-1]
    op.execute(_INDEX)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("DROP INDEX ix_chunk_terms_impact")
    for statement in _DOWN:
        op.execute(statement)
