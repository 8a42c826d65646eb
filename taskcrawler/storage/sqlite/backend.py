"""SQLite's side of the repositories: one writer at a time, SQLAlchemy statements throughout."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from taskcrawler.storage.backend import Rows, T, Writes
from taskcrawler.storage.engine import JSON_CODEC
from taskcrawler.storage.rows import CLAIMED_COLUMNS, LEASE_ENDED, PENDING, PROCESSING
from taskcrawler.storage.sqlite import sql
from taskcrawler.storage.sqlite.locking import WriterLock, locking_connection, writer_lock
from taskcrawler.storage.sqlite.one_call import OneCallWriter
from taskcrawler.storage.sqlite.prepared import PreparedMany, held_query, prepare_many
from taskcrawler.storage.tables import jobs

if TYPE_CHECKING:
    from taskcrawler.domain import Outcome

#: An outcome's write matches its job only while the attempt's lease still holds it.
_GUARDED = sa.and_(
    jobs.c.id == sa.bindparam("b_id"),
    jobs.c.lease_token == sa.bindparam("b_token"),
    jobs.c.status == PROCESSING,
)


def _pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    for pragma in sql.PRAGMAS:
        cursor.execute(pragma)
    cursor.close()


class SqliteBackend:
    name = "sqlite"
    serializes_writes = True
    #: One writer at a time anyway: a second commit in flight measured no faster.
    concurrent_writes = 1
    #: A write holds the one writer lock every process queues for, the API's inserts too; yet
    #: 64 measured no better than 500 for the API's p99, nor for jobs/s, with a write's
    #: statements sent one by one (bench/results/2026-12-07-sqlite-batch-hold.md) or in one
    #: call (2026-12-07-sqlite-one-call-writes.md).
    outcome_batch = 500
    pins_connections = False
    # Off: turning it on would also run the cascades inside the migrations' table rebuilds
    # (batch_alter_table drops and recreates ``jobs``), deleting every page's content.
    cascades_deletes = False

    def __init__(self) -> None:
        self._writer: WriterLock | None = None
        self._one_call: OneCallWriter | None = None
        self._engine_dialect: sa.Dialect | None = None

    @asynccontextmanager
    async def write_transaction(self, engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
        """A transaction that takes the database's writer lock (:mod:`.locking`, shared with
        other processes) and SQLite's write lock at once rather than at its first write: one
        that reads before it writes (an outcome batch reads which jobs it still holds) then
        reads what no other process can change before its commit."""
        async with engine.begin() as conn:
            await conn.exec_driver_sql(sql.BEGIN_WRITE)
            yield conn

    async def write_in_one_call(self, engine: AsyncEngine, work: Callable[[Connection], T]) -> T:
        """In :class:`OneCallWriter`'s thread, so the writer lock is never held while this
        process's event loop runs something else. A database no other process can open (in
        memory) has no lock to hold: its ``work`` runs on the engine's own connection."""
        if self._one_call is not None:
            return await self._one_call.run(work)
        async with self.write_transaction(engine) as conn:
            return await conn.run_sync(work)

    def close(self) -> None:
        if self._one_call is not None:
            self._one_call.close()
        if self._writer is not None:
            self._writer.close()

    def create_engine(self, url: str, *, pool_size: int) -> AsyncEngine:
        parsed = make_url(url)
        self._writer = writer_lock(parsed.database)
        connect_args: dict[str, Any] = {}
        if self._writer is not None:
            connect_args["factory"] = locking_connection(self._writer, sql.BEGIN_WRITE)
            self._one_call = OneCallWriter(_sync_engine(parsed, connect_args), sql.BEGIN_WRITE)
        engine = create_async_engine(
            url,
            **JSON_CODEC,
            pool_size=max(2, min(pool_size, 4)),
            max_overflow=0,
            connect_args=connect_args,
        )
        event.listen(engine.sync_engine, "connect", _pragmas)
        self._engine_dialect = engine.dialect
        return engine

    def any_of(self, column: sa.Column[Any], values: Collection[Any]) -> sa.ColumnElement[bool]:
        return column.in_(list(values))

    def byte_length(self, column: sa.ColumnElement[Any]) -> sa.ColumnElement[int]:
        # length() of text counts characters; of a blob, bytes (SQLite before 3.43 has no
        # octet_length). The cast reinterprets the stored UTF-8 as it is.
        return sa.func.length(sa.cast(column, sa.LargeBinary()))

    def insert(self, table: sa.Table) -> Any:
        return sqlite.insert(table)

    def insert_rows(self, conn: Connection, table: sa.Table, rows: Rows) -> None:
        conn.execute(table.insert(), list(rows))

    def pinned_connection(self, autocommit: AsyncEngine) -> NoReturn:
        raise ValueError("pinned connections send statements to asyncpg: PostgreSQL only")

    async def insert_new_jobs(self, db: Writes, rows: Rows, pinned: object) -> set[UUID]:
        def insert(conn: Connection) -> set[UUID]:
            return {row[0] for row in conn.execute(sql.INSERT_NEW_JOBS, list(rows))}

        return await db.run_write(insert)

    async def insert_new_jobs_in(self, conn: AsyncConnection, rows: Rows) -> set[UUID]:
        return {row[0] for row in await conn.execute(sql.INSERT_NEW_JOBS, list(rows))}

    async def hold_owners(self, conn: AsyncConnection, owners: Collection[str]) -> None:
        """Nothing to take: a write transaction holds the one writer from its BEGIN IMMEDIATE
        (:meth:`write_transaction`), so no other submission counts or inserts meanwhile."""

    def insert_frontier(self, conn: Connection, rows: Rows) -> list[UUID]:
        result = conn.execute(sql.INSERT_FRONTIER_JOBS, list(rows))
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
        stmt = (
            jobs.update()
            .where(
                jobs.c.id.in_(job_ids),
                jobs.c.status == PENDING,
                jobs.c.next_attempt_at.is_(None),
            )
            .values(
                status=PROCESSING,
                lease_token=token,
                lease_expires_at=lease_expires_at,
                started_at=now,
                dispatch_at=None,
            )
            .returning(*(jobs.c[column] for column in CLAIMED_COLUMNS))
        )

        def claim(conn: Connection) -> Sequence[Any]:
            return conn.execute(stmt).all()

        return await db.run_write(claim)

    async def export_horizon(self, conn: AsyncConnection) -> int | None:
        return None  # one writer at a time: positions are given in commit order

    def prepare_outcomes(
        self, groups: Mapping[str, Rows], with_content: Sequence[Outcome]
    ) -> Callable[[Connection], set[UUID]]:
        """One executemany per group. An executemany returns no rows, so the jobs still held
        are read first (SQLite's one writer keeps them as read until the commit). Both have
        their parameters bound here, before the lock (:mod:`.prepared`)."""
        dialect = self._dialect()
        held = held_query(dialect, [(o.job.id, o.job.lease_token) for o in with_content])
        updates = [_guarded_update(dialect, params) for params in groups.values()]

        def update(conn: Connection) -> set[UUID]:
            still_held = held.run(conn)
            for prepared in updates:
                prepared.run(conn)
            return still_held

        return update

    def _dialect(self) -> sa.Dialect:
        if self._engine_dialect is None:
            raise RuntimeError("the SQLite backend has no engine yet")
        return self._engine_dialect


def _guarded_update(dialect: sa.Dialect, params: Sequence[Mapping[str, Any]]) -> PreparedMany:
    columns: dict[str, Any] = {k: sa.bindparam(k) for k in params[0] if not k.startswith("b_")}
    return prepare_many(
        dialect, jobs.update().where(_GUARDED).values(columns | LEASE_ENDED), params
    )


def _sync_engine(url: URL, connect_args: dict[str, Any]) -> sa.Engine:
    """A synchronous engine on the same file, for :class:`OneCallWriter`'s one thread; its
    connection is closed from another thread at the end."""
    engine = sa.create_engine(
        url.set(drivername="sqlite+pysqlite"),
        **JSON_CODEC,
        pool_size=1,
        max_overflow=0,
        connect_args=connect_args | {"check_same_thread": False},
    )
    event.listen(engine, "connect", _pragmas)
    return engine
