"""Alembic environment: migrations run on a connection handed in by ``upgrade_database``."""

from __future__ import annotations

from alembic import context

from taskcrawler.storage.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations with `taskcrawler migrate`, which supplies the connection")

context.configure(
    connection=connection,
    target_metadata=metadata,
    # SQLite cannot ALTER most things in place; batch mode rebuilds the table instead.
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
