"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from taskcrawler.storage import Database, JobStore, WorkStore
from tests.support.stores import Stores


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Stores]:
    """The stores over a migrated empty database, on each backend in turn."""
    db = Database.from_url(database_url, pool_size=20)
    yield Stores(db, JobStore(db), WorkStore(db))
    await db.close()
