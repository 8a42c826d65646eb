"""What differs between the two databases, behind the repositories both share.

The repositories (``storage/jobs.py``, ``work.py``, …) are SQLAlchemy Core written once; where
PostgreSQL and SQLite need different statements, or the same statement sent another way, they ask
their database's :class:`Backend`. :mod:`taskcrawler.storage.adapters` picks it from the URL's
scheme. Each backend's raw SQL lives in its own ``sql.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

if TYPE_CHECKING:
    from taskcrawler.domain import Outcome
    from taskcrawler.storage.postgres.pinned import PinnedConnection

#: Rows to write: column (or ``b_``-prefixed guard) name -> value.
Rows = Sequence[Mapping[str, Any]]

T = TypeVar("T")


class Writes(Protocol):
    """What a backend's own statements ask of their database (a
    :class:`~taskcrawler.storage.database.Database`)."""

    def write(self) -> AbstractAsyncContextManager[AsyncConnection]: ...

    def write_statement(self) -> AbstractAsyncContextManager[AsyncConnection]: ...

    async def run_write(self, work: Callable[[Connection], T]) -> T: ...


class Backend(Protocol):
    name: str
    #: Writes queue for a single writer (SQLite) rather than run side by side.
    serializes_writes: bool
    #: How many outcome writes (group commits) a worker keeps in flight at once.
    concurrent_writes: int
    #: How many transitions one outcome write (a worker's group commit) takes at most: the
    #: write holds the database's locks, and on SQLite every other writer waits, that long.
    outcome_batch: int
    #: Whether a caller may keep a connection of its own for its statements.
    pins_connections: bool
    #: Whether the database runs the tables' ON DELETE CASCADE itself (SQLite enforces no
    #: foreign key unless each connection asks, outside any transaction).
    cascades_deletes: bool

    def create_engine(self, url: str, *, pool_size: int) -> AsyncEngine: ...

    def write_transaction(
        self, engine: AsyncEngine
    ) -> AbstractAsyncContextManager[AsyncConnection]:
        """A transaction of :meth:`Database.write`, holding what it must, committed on exit."""
        ...

    async def write_in_one_call(self, engine: AsyncEngine, work: Callable[[Connection], T]) -> T:
        """``work``'s statements as one transaction of :meth:`Database.run_write`, committed
        when it returns: ``work`` is called once with a synchronous connection, so the
        transaction's statements run one after another where the backend runs them best."""
        ...

    def close(self) -> None:
        """Release what :meth:`create_engine` took besides the engine."""
        ...

    def any_of(self, column: sa.Column[Any], values: Collection[Any]) -> sa.ColumnElement[bool]:
        """``column IN values``, in the form this database runs best."""
        ...

    def byte_length(self, column: sa.ColumnElement[Any]) -> sa.ColumnElement[int]:
        """The length of a text column's value in UTF-8 bytes (NULL for NULL), read without
        sending the value."""
        ...

    def insert(self, table: sa.Table) -> Any:
        """An INSERT that knows this database's ``ON CONFLICT``."""
        ...

    def insert_rows(self, conn: Connection, table: sa.Table, rows: Rows) -> None:
        """Many rows into ``table``, inside the caller's transaction."""
        ...

    def pinned_connection(self, autocommit: AsyncEngine) -> PinnedConnection: ...

    async def insert_new_jobs(
        self, db: Writes, rows: Rows, pinned: PinnedConnection | None
    ) -> set[UUID]:
        """Insert the job rows whose (owner, url_key) is new; the ids of those inserted."""
        ...

    async def insert_new_jobs_in(self, conn: AsyncConnection, rows: Rows) -> set[UUID]:
        """As :meth:`insert_new_jobs`, inside the caller's transaction."""
        ...

    async def hold_owners(self, conn: AsyncConnection, owners: Collection[str]) -> None:
        """Until the caller's write transaction ends, no other transaction that holds one of
        ``owners`` runs: what it counts of their jobs stays true until it commits. Owners not
        named are not held up."""
        ...

    def insert_frontier(self, conn: Connection, rows: Rows) -> list[UUID]:
        """Insert a crawl's new pages (``FRONTIER_JOB_COLUMNS``) whose (owner, url_key) is
        new, inside the caller's transaction; the ids of those inserted."""
        ...

    async def claim(
        self,
        db: Writes,
        job_ids: Sequence[UUID],
        *,
        token: UUID,
        lease_expires_at: datetime,
        now: datetime,
    ) -> Sequence[Any]:
        """PENDING -> PROCESSING for the due jobs of ``job_ids``; their ``CLAIMED_COLUMNS``."""
        ...

    def prepare_outcomes(
        self, groups: Mapping[str, Rows], with_content: Sequence[Outcome]
    ) -> Callable[[Connection], set[UUID]]:
        """Each group's guarded UPDATE (its rows set the same columns, and carry ``b_id`` and
        ``b_token``), as a function to run in the caller's transaction, with what can be made
        before the transaction made now. It returns the jobs this batch still held, of those
        ``with_content`` at least."""
        ...

    async def export_horizon(self, conn: AsyncConnection) -> int | None:
        """Export positions below this are final: no transaction still running can add one.
        None when every committed position is (one writer at a time)."""
        ...
