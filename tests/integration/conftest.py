"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from taskcrawler.storage import JobStore, WorkStore
from taskcrawler.storage.adapters import open_database
from tests.support.stores import Stores


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Stores]:
    """The stores over a migrated empty database, on each backend in turn."""
    db = open_database(database_url, pool_size=20)
    yield Stores(db, JobStore(db), WorkStore(db))
    await db.close()
