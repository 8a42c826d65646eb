"""Every statement SQLite runs that PostgreSQL does not: raw SQL, and SQLite's own dialect."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from taskcrawler.storage.chunks import HIT_COLUMNS
from taskcrawler.storage.tables import chunks, jobs

#: Run on every new connection. WAL lets readers run beside the writer; NORMAL syncs at
#: checkpoints, not at every commit, which is safe against application crashes (the embedded
#: mode's realistic failure).
PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA busy_timeout=10000",
    "PRAGMA temp_store=MEMORY",
    "PRAGMA cache_size=-65536",
)

#: A write transaction that holds the write lock from its start (see ``begin_write``).
BEGIN_WRITE = "BEGIN IMMEDIATE"

#: New jobs, deduplicated by the unique (owner, url_key) index; run as an executemany.
INSERT_NEW_JOBS = (
    sqlite.insert(jobs)
    .on_conflict_do_nothing(index_elements=["owner", "url_key"])
    .returning(jobs.c.id)
)


# --- chunks ------------------------------------------------------------------------------------

#: The FTS5 index of chunks' texts (migration 0005), kept in step by triggers.
_CHUNKS_FTS = sa.table("chunks_fts", sa.column("rowid", sa.Integer()))


def keyword_ranking(conditions: list[sa.ColumnElement[bool]], match: str, k: int) -> sa.Select[Any]:
    """The best ``k`` chunks whose context or text matches the FTS5 query ``match`` and
    ``conditions``, best first, as ``id`` and ``rank`` (BM25, which FTS5 gives as a negative
    number: its opposite is the score): every match ranked, none read whole
    (:func:`hits_of` reads those kept)."""
    rank: sa.ColumnElement[float] = sa.literal_column("rank", sa.Float())
    matching = sa.text("chunks_fts MATCH :match").bindparams(match=match)
    return (
        sa.select(chunks.c.id, rank.label("rank"))
        .select_from(_CHUNKS_FTS)
        .join(chunks, chunks.c.id == _CHUNKS_FTS.c.rowid)
        .join(jobs, jobs.c.id == chunks.c.job_id)
        .where(matching, *conditions)
        .order_by(rank, chunks.c.id)
        .limit(k)
    )


def holding(terms: list[str]) -> sa.Select[Any]:
    """How many chunks (of every owner, as FTS5's BM25 counts them) hold each of ``terms``,
    tokenised as the index is: one row, a column per term."""
    return sa.select(
        *(
            sa.select(sa.func.count())
            .select_from(_CHUNKS_FTS)
            .where(sa.text(f"chunks_fts MATCH :term_{n}").bindparams(**{f"term_{n}": f'"{term}"'}))
            .scalar_subquery()
            for n, term in enumerate(terms)
        )
    )


def fts_ranks(match: str, limit: int) -> sa.Select[Any]:
    """FTS5's ``limit`` best matches of ``match`` alone (``rowid``, ``rank``; best first)."""
    rank: sa.ColumnElement[float] = sa.literal_column("rank", sa.Float())
    return (
        sa.select(_CHUNKS_FTS.c.rowid, rank.label("rank"))
        .where(sa.text("chunks_fts MATCH :match").bindparams(match=match))
        .order_by(rank)
        .limit(limit)
    )


@functools.cache
def pruned_keyword_search(matches: int) -> sa.Select[Any]:
    """:func:`pruned_keyword_ranking`'s chunks with what a search answers and ``score``: one
    statement, where ranking, telling the owners and reading the hits were four round trips to
    the connection's thread. Only the ``:k`` kept are read whole: reading the ``:depth``
    ranked chunks' texts and offsets (stored past each chunk's vector, so on its overflow
    pages) and sorting them cost more than their ranks."""
    return hits_of(pruned_keyword_ranking(matches).subquery("kept"))


@functools.cache
def pruned_keyword_ranking(matches: int) -> sa.Select[Any]:
    """The owner ``:owner``'s best ``:k`` among the ``:depth`` best chunks that FTS5 ranks for
    any of ``matches`` FTS5 queries (``:m0``, ``:m1``, …; a chunk ranked by several takes its
    best rank): ``id`` and ``rank``, best first. Built once per number of queries, its values
    bound at each run: building and keying the statement anew took a tenth of the search's CPU
    on the event loop."""
    return filtered_keyword_ranking(matches, ())


def filtered_keyword_ranking(
    matches: int, conditions: Sequence[sa.ColumnElement[bool]]
) -> sa.Select[Any]:
    """:func:`pruned_keyword_ranking`'s chunks that ``conditions`` (a query's filters, on
    ``chunks`` and ``jobs``) keep too: each of the ``:depth`` ranked is looked up by its id.

    The owner is compared row by row (``+owner``): as an indexed condition it had SQLite read
    the owner's every chunk by the (owner, model) index."""
    ranked = " UNION ALL ".join(
        f"SELECT * FROM (SELECT rowid AS id, rank FROM chunks_fts WHERE chunks_fts MATCH :m{n}"
        " ORDER BY rank LIMIT :depth)"
        for n in range(matches)
    )
    best = (
        sa.text(
            f"SELECT id, min(rank) AS rank FROM ({ranked}) GROUP BY id ORDER BY rank, id"
            " LIMIT :depth"
        )
        .columns(sa.column("id", sa.Integer()), sa.column("rank", sa.Float()))
        .cte("best")
    )
    mine = sa.literal_column("+chunks.owner") == sa.bindparam("owner", type_=sa.String())
    joined = best.join(chunks, chunks.c.id == best.c.id)
    if conditions:
        joined = joined.join(jobs, jobs.c.id == chunks.c.job_id)
    return (
        sa.select(best.c.id, best.c.rank)
        .select_from(joined)
        .where(mine, *conditions)
        .order_by(best.c.rank, best.c.id)
        .limit(sa.bindparam("k", type_=sa.Integer()))
    )


#: Every chunk that matches the FTS5 query ``:match`` among those of the JSON array
#: ``:chunk_ids`` (a filter's few), best first: ``id`` and ``rank``, the best ``:k``. The ids
#: are compared row by row (``+rowid``): handed to FTS5 as a rowid constraint, each id had a
#: lookup of its own, for which BM25 counted every term's matches anew (a third of a second for
#: a thousand ids); compared, the match is read once and only the kept rows scored.
KEYWORD_RANKING_AMONG = sa.text(
    "SELECT id, rank FROM (SELECT rowid AS id, rank FROM chunks_fts"
    " WHERE chunks_fts MATCH :match AND +rowid IN (SELECT value FROM json_each(:chunk_ids)))"
    " ORDER BY rank, id LIMIT :k"
).columns(sa.column("id", sa.Integer()), sa.column("rank", sa.Float()))


def hits_of(ranked: sa.Subquery) -> sa.Select[Any]:
    """What a search answers for each chunk of ``ranked`` (``id``, ``rank``: best first, the
    score's opposite), in its order: the chunks' texts read for those alone."""
    return (
        sa.select(*HIT_COLUMNS, (-ranked.c.rank).label("score"))
        .select_from(ranked)
        .join(chunks, chunks.c.id == ranked.c.id)
        .join(jobs, jobs.c.id == chunks.c.job_id)
        .order_by(ranked.c.rank, ranked.c.id)
    )


def among_ids(ids: bytes) -> sa.ColumnElement[bool]:
    """The chunks whose ids are in ``ids``, a JSON array: one parameter, where an IN list of a
    thousand had SQLAlchemy render a placeholder for each at every run (4-5 ms of the event
    loop's CPU a list). SQLite reads the chunks by id, the array's values once."""
    listed = sa.func.json_each(sa.bindparam("chunk_ids", ids.decode(), type_=sa.String()))
    return chunks.c.id.in_(sa.select(listed.table_valued("value").c.value))


#: :data:`KEYWORD_RANKING_AMONG`'s chunks with what a search answers and ``score``.
KEYWORD_SEARCH_AMONG = hits_of(KEYWORD_RANKING_AMONG.subquery("ranked"))


#: What every write to ``chunks`` moves (migration 0015's triggers).
CHUNKS_VERSION = sa.text("SELECT version FROM chunks_version")

#: The database's writes to ``chunks`` as of one snapshot: the counter every inserted, deleted
#: or updated row moves, the ids ever given (AUTOINCREMENT's sequence: one per inserted row)
#: and the chunks there are. Between two readings, the rows inserted are the sequence's move and
#: those deleted what the count did not gain of them; the counter's move beyond both is updates.
CHUNK_WRITES = sa.text(
    "SELECT (SELECT version FROM chunks_version) AS version,"
    " coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), 0) AS inserted,"
    " (SELECT count(*) FROM chunks) AS total"
)


def owner_vectors(owner: str, model: str, after: int) -> sa.Select[Any]:
    """The ``owner``'s chunks of ``model`` with ids above ``after`` (``id``, ``dim``,
    ``embedding``; by id): read by the primary key from ``after`` on."""
    return (
        sa.select(chunks.c.id, chunks.c.dim, chunks.c.embedding)
        .where(chunks.c.owner == owner, chunks.c.model == model, chunks.c.id > after)
        .order_by(chunks.c.id)
    )


def owner_id_figures(owner: str, model: str, upto: int) -> sa.Select[Any]:
    """How many of the ``owner``'s chunks of ``model`` there are up to id ``upto``, and their
    ids' sum: read from the (owner, model) index alone."""
    return sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(chunks.c.id), 0)).where(
        chunks.c.owner == owner, chunks.c.model == model, chunks.c.id <= upto
    )


def owner_ids(owner: str, model: str, upto: int) -> sa.Select[Any]:
    """The ids of the ``owner``'s chunks of ``model`` up to ``upto``, from the same index."""
    return sa.select(chunks.c.id).where(
        chunks.c.owner == owner, chunks.c.model == model, chunks.c.id <= upto
    )


#: Chunks in the FTS5 index, for BM25's rarity of a term, ``chunks_version`` (whether any
#: chunk was written since the last count), and the least and the greatest of the chunks'
#: owners (the same where one owner holds every chunk): each of the last two one descent of
#: the (owner, model) index.
CORPUS_FIGURES = sa.text(
    "SELECT (SELECT version FROM chunks_version) AS version, (SELECT count(*) FROM chunks) AS n,"
    " (SELECT min(owner) FROM chunks) AS first_owner,"
    " (SELECT max(owner) FROM chunks) AS last_owner"
)


#: A crawl's new pages: the same statement, their rows carry ``crawl_id`` and ``depth`` too.
INSERT_FRONTIER_JOBS = INSERT_NEW_JOBS
