"""A database whose write transactions are counted: for the polls that must not take the writer
(on SQLite it is the API's too) when they find nothing to do."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from taskcrawler.storage.database import Database

T = TypeVar("T")


class CountedWrites:
    """The database, its write transactions counted."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.writes = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[object]:
        self.writes += 1
        async with self.db.write() as conn:
            yield conn

    async def run_write(self, work: Callable[..., T]) -> T:
        self.writes += 1
        return await self.db.run_write(work)
