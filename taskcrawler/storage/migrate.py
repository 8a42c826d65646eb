"""Run the Alembic migrations shipped inside the package, from code or ``taskcrawler migrate``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection

from taskcrawler.storage.adapters import create_engine

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


async def _run(database_url: str, step: Callable[[Config, str], None], revision: str) -> None:
    engine = create_engine(database_url, pool_size=1)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda sync_conn: step(alembic_config(sync_conn), revision))
    finally:
        await engine.dispose()


async def upgrade_database(database_url: str, revision: str = "head") -> None:
    """Bring the database at ``database_url`` up to ``revision`` (idempotent)."""
    await _run(database_url, command.upgrade, revision)


async def downgrade_database(database_url: str, revision: str) -> None:
    """Take the database at ``database_url`` down to ``revision``."""
    await _run(database_url, command.downgrade, revision)
