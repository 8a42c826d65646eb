"""The one place a database URL picks its adapters: the backend (by the URL's scheme, the only
place a scheme is read), the engine it tunes, and the chunk store (chunks differ in more than a
statement: vectors, full-text search). Each backend is imported only when used: the embedded
mode never loads PostgreSQL's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy.engine import make_url

from taskcrawler.storage.database import Database

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from taskcrawler.storage.backend import Backend
    from taskcrawler.storage.ports import ChunkRepository


def backend_for(url: str) -> Backend:
    """The backend of a SQLAlchemy URL: ``postgresql+asyncpg://…`` or ``sqlite+aiosqlite://…``."""
    name = make_url(url).get_backend_name()
    if name == "postgresql":
        from taskcrawler.storage.postgres import PostgresBackend

        return PostgresBackend()
    if name == "sqlite":
        from taskcrawler.storage.sqlite import SqliteBackend

        return SqliteBackend()
    raise ValueError(f"no storage backend for {name!r} URLs: use postgresql:// or sqlite://")


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    """The engine for ``url``, tuned by its backend."""
    return backend_for(url).create_engine(url, pool_size=pool_size)


def open_database(url: str, *, pool_size: int = 10) -> Database:
    """The database at ``url``, on the backend its scheme names."""
    backend = backend_for(url)
    return Database(backend.create_engine(url, pool_size=pool_size), backend)


def chunk_store_for(db: Database) -> ChunkRepository:
    """The chunk store of ``db``'s backend."""
    if db.backend.name == "postgresql":
        from taskcrawler.storage.postgres.chunks import PostgresChunkStore

        return PostgresChunkStore(db)
    if db.backend.name == "sqlite":
        from taskcrawler.storage.sqlite.chunks import SqliteChunkStore

        return SqliteChunkStore(db)
    raise ValueError(f"no chunk store for the {db.backend.name!r} backend")
