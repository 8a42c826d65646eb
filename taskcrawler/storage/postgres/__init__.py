"""PostgreSQL (asyncpg): the production backend."""

from taskcrawler.storage.postgres.backend import PostgresBackend

__all__ = ["PostgresBackend"]
