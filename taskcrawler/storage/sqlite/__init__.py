"""SQLite (aiosqlite): the embedded mode's backend."""

from taskcrawler.storage.sqlite.backend import SqliteBackend

__all__ = ["SqliteBackend"]
