"""PostgreSQL's side of the repositories: its hot statements go to asyncpg as they are."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from taskcrawler.storage.backend import Rows, T, Writes
from taskcrawler.storage.engine import JSON_CODEC
from taskcrawler.storage.postgres import sql
from taskcrawler.storage.postgres.pinned import PinnedConnection

if TYPE_CHECKING:
    from taskcrawler.domain import Outcome


class PostgresBackend:
    name = "postgresql"
    serializes_writes = False
    #: A commit spends most of its time waiting for the database, so a second one overlaps it;
    #: the batches' jobs are disjoint, so the two transactions never wait for each other's rows.
    #: Measured: about a tenth more jobs/s than one at a time.
    concurrent_writes = 2
    #: Row locks only, on jobs nobody else writes: a big batch blocks no other writer, and
    #: takes fewer round trips and commits a job.
    outcome_batch = 500
    pins_connections = True
    cascades_deletes = True

    def write_transaction(
        self, engine: AsyncEngine
    ) -> AbstractAsyncContextManager[AsyncConnection]:
        """A plain transaction: the statements take the row locks they need."""
        return engine.begin()

    async def write_in_one_call(self, engine: AsyncEngine, work: Callable[[Connection], T]) -> T:
        """Row locks hold up only the rows' other writers: ``work`` may await the event loop
        between its statements as every other transaction here does."""
        async with engine.begin() as conn:
            return await conn.run_sync(work)

    def close(self) -> None:
        return None

    def create_engine(self, url: str, *, pool_size: int) -> AsyncEngine:
        return create_async_engine(
            url,
            **JSON_CODEC,
            pool_size=pool_size,
            max_overflow=pool_size,
            pool_timeout=10,
            pool_recycle=1800,
            # Fail fast when PostgreSQL is down, so the API answers 503 instead of hanging.
            connect_args={"timeout": 5},
        )

    def any_of(self, column: sa.Column[Any], values: Collection[Any]) -> sa.ColumnElement[bool]:
        return sql.any_of(column, values)

    def byte_length(self, column: sa.ColumnElement[Any]) -> sa.ColumnElement[int]:
        # A TOASTed value's size is in its header: nothing is decompressed to count it.
        return sa.func.octet_length(column)

    def insert(self, table: sa.Table) -> Any:
        return postgresql.insert(table)

    def insert_rows(self, conn: Connection, table: sa.Table, rows: Rows) -> None:
        names = tuple(rows[0])
        arrays = sql.column_arrays(rows, sql.table_columns(table, names))
        conn.exec_driver_sql(sql.unnest_insert(table, names), arrays)

    def pinned_connection(self, autocommit: AsyncEngine) -> PinnedConnection:
        return PinnedConnection(autocommit)

    async def insert_new_jobs(
        self, db: Writes, rows: Rows, pinned: PinnedConnection | None
    ) -> set[UUID]:
        if pinned is not None:
            arrays = sql.column_arrays(rows, sql.NEW_JOB_ARRAYS)
            records = await pinned.fetch(sql.INSERT_NEW_JOBS, *arrays)
            return {record[0] for record in records}
        async with db.write_statement() as conn:
            return await self.insert_new_jobs_in(conn, rows)

    async def insert_new_jobs_in(self, conn: AsyncConnection, rows: Rows) -> set[UUID]:
        arrays = sql.column_arrays(rows, sql.NEW_JOB_ARRAYS)
        result = await conn.exec_driver_sql(sql.INSERT_NEW_JOBS, arrays)
        return {row[0] for row in result}

    async def hold_owners(self, conn: AsyncConnection, owners: Collection[str]) -> None:
        """A transaction-scoped advisory lock per owner: other owners' submissions go on."""
        keys = sorted({sql.owner_lock(owner) for owner in owners})
        await conn.exec_driver_sql(sql.HOLD_OWNERS, (keys,))

    def insert_frontier(self, conn: Connection, rows: Rows) -> list[UUID]:
        arrays = sql.column_arrays(rows, sql.FRONTIER_JOB_ARRAYS)
        result = conn.exec_driver_sql(sql.INSERT_FRONTIER_JOBS, arrays)
        return [row[0] for row in result]

    async def claim(
        self,
        db: Writes,
        job_ids: Sequence[UUID],
        *,
        token: UUID,
        lease_expires_at: datetime,
        now: datetime,
    ) -> Sequence[Any]:
        # One statement, atomic by itself: outside a transaction.
        params = (list(job_ids), token, lease_expires_at, now)
        async with db.write_statement() as conn:
            return (await conn.exec_driver_sql(sql.CLAIM_JOBS, params)).all()

    async def export_horizon(self, conn: AsyncConnection) -> int | None:
        horizon = (await conn.exec_driver_sql(sql.EXPORT_HORIZON)).scalar_one()
        return int(horizon)

    def prepare_outcomes(
        self, groups: Mapping[str, Rows], with_content: Sequence[Outcome]
    ) -> Callable[[Connection], set[UUID]]:
        """One guarded UPDATE per group, its rows unnested from arrays; the ids it matched are
        the jobs the batch still held (their rows stay locked until the commit)."""

        def update(conn: Connection) -> set[UUID]:
            held: set[UUID] = set()
            for params in groups.values():
                keys = ("b_id", "b_token", *(key for key in params[0] if not key.startswith("b_")))
                statement, columns = sql.guarded_outcome_update(keys)
                result = conn.exec_driver_sql(statement, sql.column_arrays(params, columns))
                held.update(row[0] for row in result)
            return held

        return update
