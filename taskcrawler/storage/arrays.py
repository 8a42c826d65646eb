"""Statements that take their rows as one array per column (PostgreSQL).

Rows unnested from arrays keep one statement text for every batch size, so asyncpg prepares it
once per connection and PostgreSQL plans it once. The text is sent to the driver as it is
(``exec_driver_sql``, or a pinned connection): on the hottest writes SQLAlchemy's compilation and
parameter processing cost more CPU than the round trip itself. The texts are generated from the
tables' column types, so they follow the schema.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

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
