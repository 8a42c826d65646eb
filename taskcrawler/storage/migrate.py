"""Run the Alembic migrations shipped inside the package, from code or ``taskcrawler migrate``."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection

from taskcrawler.storage.engine import create_engine

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: Connection, revision: str) -> None:
    command.upgrade(alembic_config(connection), revision)


async def upgrade_database(database_url: str, revision: str = "head") -> None:
    """Bring the database at ``database_url`` to ``revision`` (idempotent)."""
    engine = create_engine(database_url, pool_size=1)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_upgrade, revision)
    finally:
        await engine.dispose()
