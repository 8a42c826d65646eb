"""Every statement PostgreSQL runs as raw SQL, and how their parameters are shaped.

The hot writes take their rows as one array per column, unnested into rows: one statement text
for every batch size, so asyncpg prepares it once per connection and PostgreSQL plans it once.
The texts are sent to the driver as they are (``exec_driver_sql``, or a pinned connection): on
these paths SQLAlchemy's compilation and parameter processing cost more CPU than the round trip
itself. The texts are generated from the tables' column types, so they follow the schema.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from taskcrawler.domain.chunks import BM25_B, BM25_K1, SearchQuery
from taskcrawler.domain.urls import host_filter
from taskcrawler.storage.chunks import like_prefix
from taskcrawler.storage.rows import (
    CLAIMED_COLUMNS,
    FRONTIER_JOB_COLUMNS,
    LEASE_ENDED,
    NEW_JOB_COLUMNS,
    PENDING,
    PROCESSING,
)
from taskcrawler.storage.tables import jobs

#: Row keys -> the columns whose types their arrays take.
ArrayColumns = Mapping[str, "sa.Column[Any]"]

#: Types are spelled the same whichever driver runs the statement.
_POSTGRESQL = postgresql.dialect()  # type: ignore[no-untyped-call]  # untyped in SQLAlchemy


def table_columns(table: sa.Table, names: Sequence[str]) -> dict[str, sa.Column[Any]]:
    return {name: table.c[name] for name in names}


def unnested(columns: ArrayColumns) -> str:
    """``unnest($1::type[], …)``: one array parameter per column, in ``columns``' order."""
    arrays = ", ".join(
        f"${n}::{column.type.compile(_POSTGRESQL)}[]"
        for n, column in enumerate(columns.values(), 1)
    )
    return f"unnest({arrays})"


@functools.cache
def unnest_insert(table: sa.Table, names: tuple[str, ...]) -> str:
    """``INSERT INTO table (names) SELECT * FROM unnest(…)``; rows from :func:`column_arrays`."""
    arrays = unnested(table_columns(table, names))
    return f"INSERT INTO {table.name} ({', '.join(names)}) SELECT * FROM {arrays}"


def column_arrays(
    rows: Sequence[Mapping[str, Any]], columns: ArrayColumns
) -> tuple[list[Any], ...]:
    """The rows as one list per column. JSON goes to the driver as its text: nothing on this
    path runs SQLAlchemy's type processing."""
    return tuple(
        _json_texts([row[key] for row in rows])
        if isinstance(column.type, sa.JSON)
        else [row[key] for row in rows]
        for key, column in columns.items()
    )


def _json_texts(values: list[Any]) -> list[str | None]:
    return [None if value is None else orjson.dumps(value).decode() for value in values]


def any_of(column: sa.Column[Any], values: Collection[Any]) -> sa.ColumnElement[bool]:
    """``column = ANY($1)``, one array parameter.

    An IN list is rendered with one parameter per value, so every batch size is a statement of
    its own text, and asyncpg (which caches prepared statements by text) prepares and PostgreSQL
    plans it again; the array keeps one statement for every size.
    """
    array = sa.bindparam(None, list(values), type_=postgresql.ARRAY(column.type))
    return column == sa.any_(array)


# --- jobs --------------------------------------------------------------------------------------

NEW_JOB_ARRAYS = table_columns(jobs, NEW_JOB_COLUMNS)

#: New jobs, deduplicated by the unique (owner, url_key) index: the same text (so one prepared
#: statement) for a single POST and for a batch of 1,000.
INSERT_NEW_JOBS = (
    unnest_insert(jobs, NEW_JOB_COLUMNS) + " ON CONFLICT (owner, url_key) DO NOTHING RETURNING id"
)

#: The first key of the advisory locks that hold an owner's submissions under its pending-jobs
#: limit (the two-key form: the second is the owner's :func:`owner_lock`), so they share no
#: lock with any other use of advisory locks.
OWNER_LOCKS = 0x7443

#: The owners' locks until the transaction ends, in the order of their keys: two transactions
#: taking several never wait for each other in a cycle. A subquery that sorts is not pulled up
#: into its query, so the locks are taken in its order.
HOLD_OWNERS = (
    f"SELECT pg_advisory_xact_lock({OWNER_LOCKS}, k)"
    " FROM (SELECT k FROM unnest($1::int[]) AS k ORDER BY k) AS keys"
)


def owner_lock(owner: str) -> int:
    """The owner's advisory lock key: a signed 32-bit hash. Two owners that share one only
    wait for each other's submissions; no limit is counted wrong for it."""
    digest = hashlib.blake2b(owner.encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big", signed=True)


FRONTIER_JOB_ARRAYS = table_columns(jobs, FRONTIER_JOB_COLUMNS)

#: A crawl's new pages, deduplicated per crawl by the same index (a crawl page's url_key hashes
#: its crawl's id): duplicates found by two pages at once insert one row.
INSERT_FRONTIER_JOBS = (
    unnest_insert(jobs, FRONTIER_JOB_COLUMNS)
    + " ON CONFLICT (owner, url_key) DO NOTHING RETURNING id"
)

# --- work --------------------------------------------------------------------------------------


def _status_is(column: str, status: str) -> str:
    """``column = status`` as a guard on rows found by their id, spelled so that no index can
    serve it (PostgreSQL indexes no ``IS NOT DISTINCT FROM``; the column is never NULL).

    Statistics taken while no job had ``status`` make PostgreSQL expect one such row. Any index
    holding the status then looks cheaper than the primary key: a partial one on it, or, since
    PostgreSQL 18's skip scan, ``ix_jobs_owner_status_created`` past its leading owner. Either
    way the statement would read every job of that status to find the few it names, a cost
    that grows with the backlog. As a filter only, the status is never the way in.
    """
    return f"{column} IS NOT DISTINCT FROM '{status}'"


#: The claim: one text for every batch size, its ids one array parameter.
CLAIM_JOBS = (
    f"UPDATE jobs SET status = '{PROCESSING}', lease_token = $2, lease_expires_at = $3,"
    " started_at = $4, dispatch_at = NULL"
    f" WHERE id = ANY($1::UUID[]) AND {_status_is('status', PENDING)}"
    " AND next_attempt_at IS NULL"
    f" RETURNING {', '.join(CLAIMED_COLUMNS)}"
)


@functools.cache
def guarded_outcome_update(keys: tuple[str, ...]) -> tuple[str, ArrayColumns]:
    """``UPDATE jobs … FROM unnest(…) … RETURNING id`` for rows keyed ``b_id``, ``b_token`` and
    then the columns they set (one text per kind of transition, whatever the batch's size), and
    the columns whose types the arrays take."""
    columns = {"b_id": jobs.c.id, "b_token": jobs.c.lease_token} | table_columns(jobs, keys[2:])
    sets = [f"{key} = v.{key}" for key in keys[2:]] + [f"{key} = NULL" for key in LEASE_ENDED]
    sql = (
        f"UPDATE jobs SET {', '.join(sets)}"
        f" FROM {unnested(columns)} AS v({', '.join(keys)})"
        f" WHERE jobs.id = v.b_id AND jobs.lease_token = v.b_token"
        f" AND {_status_is('jobs.status', PROCESSING)} RETURNING jobs.id"
    )
    return sql, columns


# --- chunks ------------------------------------------------------------------------------------

#: Whether this database has pgvector's column on chunks (migration 0005, or ``enable_vectors``).
HAS_VECTOR_COLUMN = (
    "SELECT EXISTS (SELECT 1 FROM information_schema.columns"
    " WHERE table_schema = current_schema() AND table_name = 'chunks'"
    " AND column_name = 'embedding_vector')"
)
VECTOR_EXTENSION_AVAILABLE = (
    "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')"
)
CREATE_VECTOR_EXTENSION = "CREATE EXTENSION IF NOT EXISTS vector"
ADD_VECTOR_COLUMN = "ALTER TABLE chunks ADD COLUMN IF NOT EXISTS embedding_vector vector"


def hnsw_index(dim: int) -> str:
    """The HNSW cosine index for vectors of ``dim`` dimensions: HNSW needs a fixed size, and
    models differ, so each size has an index of its own over its rows."""
    return (
        f"CREATE INDEX IF NOT EXISTS ix_chunks_embedding_hnsw_{int(dim)} ON chunks USING hnsw"
        f" ((embedding_vector::vector({int(dim)})) vector_cosine_ops) WHERE dim = {int(dim)}"
    )


#: What a chunk's keywords are: the lexemes (English stemming, stop words left out) of its
#: context and its text, with their positions. ``$1`` the context, ``$2`` the text.
_DOCUMENT = "to_tsvector('english', coalesce({context}, '') || E'\\n' || {text})"
#: A chunk's length for BM25: the words its document counts (stop words left out).
_LENGTH = "(SELECT coalesce(sum(array_length(l.positions, 1)), 0) FROM unnest({document}) AS l)"


def _terms_of(source: str) -> str:
    """The terms of the chunks ``source`` returns (``id``, ``owner``, ``search_length``,
    ``doc``): a row per lexeme, with its frequency and the chunk's length."""
    return (
        "INSERT INTO chunk_terms (chunk_id, owner, term, tf, length)"
        " SELECT s.id, s.owner, l.lexeme, array_length(l.positions, 1), s.search_length"
        f" FROM {source} AS s, unnest(s.doc) AS l"
    )


#: A page's chunks, one array per column; the vectors as pgvector's text form; and their terms.
INSERT_CHUNKS = (
    "WITH rows AS (SELECT u.*, "
    + _DOCUMENT.format(context="u.c", text="u.t")
    + " AS doc FROM unnest($7::int[], $8::text[], $9::text[], $10::text[], $11::int[],"
    " $12::text[], $13::int[], $14::int[]) AS u(i, t, c, h, n, v, s, e)),"
    " inserted AS (INSERT INTO chunks (job_id, owner, crawl_id, model, dim, source_hash,"
    " chunk_index, text, context, heading_path, token_count, embedding_vector, start_offset,"
    " end_offset, search_length)"
    " SELECT $1::uuid, $2::varchar, $3::uuid, $4::varchar, $5::int, $6::varchar,"
    " r.i, r.t, r.c, r.h::jsonb, r.n, r.v::vector, r.s, r.e, "
    + _LENGTH.format(document="r.doc")
    + " FROM rows r RETURNING id, owner, chunk_index, search_length),"
    " indexed AS (SELECT i.id, i.owner, i.search_length, r.doc FROM inserted i"
    " JOIN rows r ON r.i = i.chunk_index) " + _terms_of("indexed")
)

#: Before a re-index sets chunks' contexts: their old terms go (``$1`` their ids).
DELETE_TERMS = "DELETE FROM chunk_terms WHERE chunk_id = ANY($1::bigint[])"

#: A re-index: each chunk's model, vector and context, and its terms again.
SET_EMBEDDINGS = (
    "WITH updated AS (UPDATE chunks SET model = $1, dim = u.d, embedding_vector = u.v::vector,"
    " context = u.c, search_length = "
    + _LENGTH.format(document=_DOCUMENT.format(context="u.c", text="chunks.text"))
    + " FROM unnest($2::bigint[], $3::int[], $4::text[], $5::text[]) AS u(id, d, v, c)"
    " WHERE chunks.id = u.id RETURNING chunks.id, chunks.owner, chunks.search_length, "
    + _DOCUMENT.format(context="chunks.context", text="chunks.text")
    + " AS doc) "
    + _terms_of("updated")
)

#: What BM25 needs of an owner's chunks as a whole: how many, and their mean length; and the
#: newest chunk's id (a page stored since moves it).
CORPUS_STATS = (
    "SELECT count(*) AS n, coalesce(avg(search_length), 0)::float8 AS mean,"
    " coalesce(max(id), 0) AS newest FROM chunks WHERE owner = $1"
)

#: What a search answers with, of chunk ``c`` and its job ``j``.
_HIT = (
    "c.job_id, j.url, j.scraped_title, c.chunk_index, c.text, c.heading_path::text AS"
    " heading_path, c.start_offset, c.end_offset, coalesce(j.fetched_at, j.finished_at) AS"
    " fetched_at"
)


def scope(query: SearchQuery, first: int) -> tuple[str, list[Any]]:
    """The query's filters beyond its owner, as conditions on chunk ``c`` and job ``j`` (``""``
    when none), with their parameters numbered from ``$first``."""
    conditions: list[str] = []
    params: list[Any] = []

    def param(value: Any, cast: str) -> str:
        params.append(value)
        return f"${first + len(params) - 1}::{cast}"

    if query.crawl_id is not None:
        conditions.append(f"c.crawl_id = {param(query.crawl_id, 'uuid')}")
    if query.job_id is not None:
        conditions.append(f"c.job_id = {param(query.job_id, 'uuid')}")
    if query.host is not None:
        conditions.append(f"j.host = {param(host_filter(query.host), 'varchar')}")
    if query.url_prefix is not None:
        prefix = param(like_prefix(query.url_prefix), "text")
        conditions.append(f"j.url LIKE {prefix} ESCAPE '\\'")
    fetched = "coalesce(j.fetched_at, j.finished_at)"  # jobs from before fetched_at: finished_at
    if query.fetched_after is not None:
        conditions.append(f"{fetched} >= {param(query.fetched_after, 'timestamptz')}")
    if query.fetched_before is not None:
        conditions.append(f"{fetched} < {param(query.fetched_before, 'timestamptz')}")
    if query.monitor_id is not None:
        monitor = param(query.monitor_id, "uuid")
        conditions.append(
            f"(c.job_id IN (SELECT job_id FROM monitor_pages WHERE monitor_id = {monitor})"
            " OR c.crawl_id IN (SELECT crawl_id FROM monitor_crawls"
            f" WHERE monitor_id = {monitor}))"
        )
    return " AND ".join(conditions), params


def iterative_scan(k: int) -> str:
    """The search transaction's settings, in one round trip: a filtered HNSW scan goes on
    until it has ``k`` rows (pgvector 0.8), looking at enough candidates for them."""
    return (
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
        f" set_config('hnsw.ef_search', '{max(40, int(k))}', true)"
    )


def semantic_search(dim: int, filters: str) -> str:
    """The ``$4`` nearest chunks to ``$1`` (cosine) among owner ``$3``'s of model ``$2`` that
    match ``filters``; the ORDER BY spells the HNSW index's expression so that the index serves
    it."""
    distance = f"c.embedding_vector::vector({int(dim)}) <=> $1::vector({int(dim)})"
    join = " JOIN jobs j ON j.id = c.job_id" if filters else ""
    where = f" AND {filters}" if filters else ""
    return (
        f"WITH nearest AS (SELECT c.id, {distance} AS distance FROM chunks c{join}"
        f" WHERE c.dim = {int(dim)} AND c.model = $2 AND c.owner = $3{where}"
        f" ORDER BY {distance} LIMIT $4)"
        f" SELECT {_HIT}, 1 - n.distance AS score"
        " FROM nearest n JOIN chunks c ON c.id = n.id JOIN jobs j ON j.id = c.job_id"
        " ORDER BY n.distance, c.id"
    )


#: Each query term's rarity among owner ``$2``'s ``$3`` chunks (as FTS5 computes it), counted
#: from the term index. ``$3`` is counted apart (and kept a while): chunks stored since may
#: hold a term more often than it says, and the logarithm of what would be negative fails, so
#: the chunks are at least as many as the commonest term's (as ``_pruned`` takes them).
_QUERY_TERMS = (
    "WITH q AS (SELECT DISTINCT l.lexeme AS term FROM unnest(to_tsvector('english', $1)) l),"
    " counted AS (SELECT q.term, d.n FROM q, LATERAL (SELECT count(*) AS n FROM chunk_terms t"
    " WHERE t.owner = $2 AND t.term = q.term) d),"
    " corpus AS (SELECT greatest($3::float8, max(n)) AS n FROM counted),"
    " idf AS (SELECT c.term, c.n, greatest(ln((corpus.n - c.n + 0.5) / (c.n + 0.5)), 1e-6)"
    " AS w FROM counted c, corpus),"
    f" weight AS (SELECT sum(w) * {BM25_K1 + 1} AS total FROM idf),"
)


def _bm25(posting: str) -> str:
    """A term's share of a chunk's BM25 score, from its ``posting`` in ``chunk_terms`` (its
    rarity ``idf.w``, the mean chunk length ``$4``)."""
    return (
        f"idf.w * {posting}.tf * {BM25_K1 + 1} / ({posting}.tf + {BM25_K1}"
        f" * ({1 - BM25_B} + {BM25_B} * {posting}.length::float8 / $4::float8))"
    )


#: The best chunks (``best``: ``chunk_id``, ``score``) with their pages, their score divided by
#: the query's own weight (``domain.chunks.query_weight``, its terms absent from the chunks
#: included): how much of the query each matches.
_HITS = (
    f" SELECT {_HIT}, b.score / weight.total AS score FROM best b CROSS JOIN weight"
    " JOIN chunks c ON c.id = b.chunk_id JOIN jobs j ON j.id = c.job_id"
    " ORDER BY b.score DESC, c.id"
)


def keyword_search(filters: str) -> str:
    """The ``$5`` chunks of owner ``$2`` (``$3`` chunks of mean length ``$4``) that best match
    any word of ``$1`` and ``filters``, by Okapi BM25 from the stored term statistics (each
    term's rarity, as FTS5 computes it, times its saturating frequency in the chunk): every
    posting of every term is scored, as a filter may leave any of them."""
    join = " JOIN chunks c ON c.id = t.chunk_id JOIN jobs j ON j.id = c.job_id" if filters else ""
    where = f" AND {filters}" if filters else ""
    return (
        _QUERY_TERMS + f" best AS (SELECT t.chunk_id, sum({_bm25('t')}) AS score"
        f" FROM idf JOIN chunk_terms t ON t.owner = $2 AND t.term = idf.term{join}"
        f" WHERE idf.n > 0{where}"
        " GROUP BY t.chunk_id ORDER BY score DESC, t.chunk_id LIMIT $5)" + _HITS
    )


#: The lexemes of the query ``$1``, as chunks' terms are made.
QUERY_LEXEMES = "SELECT DISTINCT l.lexeme FROM unnest(to_tsvector('english', $1)) l"

#: How many of owner ``$1``'s chunks hold each of the terms ``$2`` (those held by none left out).
TERM_COUNTS = (
    "SELECT t.term, count(*) AS n FROM chunk_terms t WHERE t.owner = $1"
    " AND t.term = ANY($2::text[]) GROUP BY t.term"
)


@functools.cache
def pruned_keyword_search(filters: str) -> str:
    """The ranking of :func:`keyword_search`, its work bounded whatever the size of the
    corpus: each of the terms ``$1`` (of rarity ``$2``, the query's own weight ``$3``) has its
    ``$6`` postings (one count a term) of most impact read (``chunk_terms.impact``, migration
    0015), their chunks ranked by what those postings give them, and the best ``$7`` scored
    exactly (every term of the query they hold, looked up by chunk) before the best ``$5`` of
    owner ``$4``'s are kept (``$8`` their mean length). A chunk none of whose terms is among the
    postings read is missed: each of its terms is one that hundreds of chunks hold more of.

    With ``filters`` (their parameters from ``$10``), the best ``$7`` scored exactly are those
    they keep of the ranked chunks' best ``$9``, asked by id in the ranking's order (a filter
    that keeps most stops early): without a filter, the same chunks as the search without it."""
    ranked = (
        "WITH idf AS (SELECT * FROM unnest($1::text[], $2::float8[], $6::int[])"
        " AS idf(term, w, depth)),"
        " weight AS (SELECT $3::float8 AS total),"
        " ranked AS (SELECT p.chunk_id, sum("
        + _bm25("p").replace("$4", "$8")
        + ") AS score FROM idf, LATERAL (SELECT t.chunk_id, t.tf, t.length FROM chunk_terms t"
        " WHERE t.owner = $4 AND t.term = idf.term ORDER BY t.impact DESC LIMIT idf.depth) p"
        " GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id"
    )
    if filters:
        taken = (
            " LIMIT $9), taken AS (SELECT r.chunk_id, r.score FROM ranked r"
            " JOIN chunks c ON c.id = r.chunk_id JOIN jobs j ON j.id = c.job_id"
            f" WHERE {filters} ORDER BY r.score DESC, r.chunk_id LIMIT $7),"
        )
    else:
        taken = " LIMIT $7), taken AS (SELECT * FROM ranked),"
    return (
        ranked
        + taken
        + " best AS (SELECT r.chunk_id, e.score FROM taken r, LATERAL (SELECT sum("
        + _bm25("t").replace("$4", "$8")
        + ") AS score FROM chunk_terms t JOIN idf ON idf.term = t.term"
        " WHERE t.chunk_id = r.chunk_id AND t.term = ANY($1::text[])) e"
        " ORDER BY e.score DESC, r.chunk_id LIMIT $5)" + _HITS
    )


#: The oldest transaction still running: every export position (a finishing transaction's id,
#: migration 0008) below it belongs to a transaction that has ended.
EXPORT_HORIZON = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
