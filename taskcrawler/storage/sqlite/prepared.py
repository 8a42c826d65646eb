"""An outcome write's parameters made ready for the driver before the writer lock is taken.

A write holds the lock every process queues for (the API's inserts too) for all its work, and
SQLAlchemy's share of it is per-row Python: each row's parameters built and bind-processed, each
id read back made a :class:`~uuid.UUID`. That Python competes for the GIL with the worker's
event loop, so a hold lasts longer than its SQL. Done here, on the caller's side, it is done
before the lock; under the lock the driver gets rows it can send as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql.compiler import SQLCompiler

from taskcrawler.storage.rows import PROCESSING
from taskcrawler.storage.tables import jobs


@dataclass(frozen=True)
class PreparedMany:
    """One statement run over many rows, each a tuple the driver binds as it is."""

    statement: str
    rows: list[tuple[Any, ...]]

    def run(self, conn: Connection) -> None:
        conn.exec_driver_sql(self.statement, self.rows)


def prepare_many(
    dialect: Dialect, stmt: sa.ClauseElement, params: Sequence[Mapping[str, Any]]
) -> PreparedMany:
    """``stmt`` over ``params`` as SQLAlchemy would send it: its own compilation and bind
    processors (UUIDs to the stored text, datetimes, JSON), so what is written is the same."""
    compiled = stmt.compile(dialect=dialect, column_keys=list(params[0]))
    assert isinstance(compiled, SQLCompiler)
    names = compiled.positiontup or []
    processors = compiled._bind_processors
    rows = []
    for row in params:
        values = compiled.construct_params(row) or {}
        rows.append(tuple(_bound(values[name], processors.get(name)) for name in names))
    return PreparedMany(compiled.string, rows)


def _bound(value: Any, processor: Any) -> Any:
    return value if processor is None or value is None else processor(value)


@dataclass(frozen=True)
class HeldQuery:
    """Which of a batch's jobs are still leased under the outcome's own token, read as the
    stored text: nothing is made a UUID under the lock, the caller's own ids are returned."""

    statement: str
    params: tuple[Any, ...]
    wanted: dict[tuple[str, str], UUID]

    def run(self, conn: Connection) -> set[UUID]:
        if not self.wanted:
            return set()
        rows = conn.exec_driver_sql(self.statement, self.params)
        wanted = self.wanted
        return {
            wanted[pair] for pair in ((job_id, token) for job_id, token in rows) if pair in wanted
        }


def held_query(dialect: Dialect, leases: Sequence[tuple[UUID, UUID | None]]) -> HeldQuery:
    """The query for the jobs of ``leases`` (id, lease token) still held."""
    stored = jobs.c.id.type.dialect_impl(dialect).bind_processor(dialect)
    assert stored is not None  # a UUID is stored as its text on SQLite
    wanted = {(stored(job_id), stored(token)): job_id for job_id, token in leases if token}
    ids = list(dict.fromkeys(job_id for job_id, _ in wanted))
    statement = (
        f"SELECT {jobs.c.id.name}, {jobs.c.lease_token.name} FROM {jobs.name}"
        f" WHERE {jobs.c.status.name} = ? AND {jobs.c.id.name} IN ({', '.join('?' * len(ids))})"
    )
    return HeldQuery(statement, (PROCESSING, *ids), wanted)
