"""Every statement PostgreSQL runs as raw SQL, and how their parameters are shaped.

The hot writes take their rows as one array per column, unnested into rows: one statement text
for every batch size, so asyncpg prepares it once per connection and PostgreSQL plans it once.
The texts are sent to the driver as they are (``exec_driver_sql``, or a pinned connection): on
these paths SQLAlchemy's compilation and parameter processing cost more CPU than the round trip
itself. The texts are generated from the tables' column types, so they follow the schema.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

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


#: A page's chunks, one array per column; the vectors as pgvector's text form.
INSERT_CHUNKS = (
    "INSERT INTO chunks (job_id, owner, crawl_id, model, dim, source_hash,"
    " chunk_index, text, heading_path, token_count, embedding_vector)"
    " SELECT $1::uuid, $2::varchar, $3::uuid, $4::varchar, $5::int, $6::varchar,"
    " u.i, u.t, u.h::jsonb, u.n, u.v::vector"
    " FROM unnest($7::int[], $8::text[], $9::text[], $10::int[], $11::text[]) AS u(i, t, h, n, v)"
)

SET_EMBEDDINGS = (
    "UPDATE chunks SET model = $1, dim = u.d, embedding_vector = u.v::vector"
    " FROM unnest($2::bigint[], $3::int[], $4::text[]) AS u(id, d, v) WHERE chunks.id = u.id"
)

_SCOPE = (
    "c.owner = $2 AND ($3::uuid IS NULL OR c.crawl_id = $3) AND ($4::uuid IS NULL OR c.job_id = $4)"
)


def iterative_scan(k: int) -> str:
    """The search transaction's settings, in one round trip: a filtered HNSW scan goes on
    until it has ``k`` rows (pgvector 0.8), looking at enough candidates for them."""
    return (
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
        f" set_config('hnsw.ef_search', '{max(40, int(k))}', true)"
    )


def semantic_search(dim: int) -> str:
    """The ``$6`` nearest chunks to ``$1`` (cosine) among the caller's of model ``$5``; the
    ORDER BY spells the HNSW index's expression so that the index serves it."""
    distance = f"c.embedding_vector::vector({int(dim)}) <=> $1::vector({int(dim)})"
    return (
        f"WITH nearest AS (SELECT c.id, {distance} AS distance FROM chunks c"
        f" WHERE c.dim = {int(dim)} AND c.model = $5 AND {_SCOPE}"
        f" ORDER BY {distance} LIMIT $6)"
        " SELECT c.job_id, j.url, j.scraped_title, c.chunk_index, c.text, 1 - n.distance AS score"
        " FROM nearest n JOIN chunks c ON c.id = n.id JOIN jobs j ON j.id = c.job_id"
        " ORDER BY n.distance, c.id"
    )


#: Chunks matching any word of ``$1`` (a tsquery of words joined by ``|``), best first.
KEYWORD_SEARCH = (
    "SELECT c.job_id, j.url, j.scraped_title, c.chunk_index, c.text,"
    " ts_rank_cd(c.search_vector, q) AS score"
    " FROM chunks c JOIN jobs j ON j.id = c.job_id, to_tsquery('english', $1) AS q"
    f" WHERE c.search_vector @@ q AND {_SCOPE}"
    " ORDER BY score DESC, c.id LIMIT $5"
)

#: The oldest transaction still running: every export position (a finishing transaction's id,
#: migration 0008) below it belongs to a transaction that has ended.
EXPORT_HORIZON = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
