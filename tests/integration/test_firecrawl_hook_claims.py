"""The Firecrawl webhooks' announcer asks for open hooks twice a second on every worker: a pass
that finds none must not take the database's writer (on SQLite, the API's writer too)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from taskcrawler.firecrawl.hook_store import FirecrawlHookStore
from taskcrawler.firecrawl.hooks import FirecrawlHook
from taskcrawler.storage.adapters import open_database
from tests.support.counted_writes import CountedWrites


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[CountedWrites]:
    database = open_database(database_url, pool_size=2)
    yield CountedWrites(database)
    await database.close()


async def test_a_pass_with_no_open_hook_takes_no_writer(db: CountedWrites) -> None:
    store = FirecrawlHookStore(db)  # type: ignore[arg-type]
    assert await store.claim(limit=10, lease_seconds=30) == []
    assert db.writes == 0
    hook = FirecrawlHook(uuid.uuid4(), "owner", "crawl", uuid.uuid4(), "http://hook.test/")
    await store.create(hook)
    [claimed] = await store.claim(limit=10, lease_seconds=30)
    assert claimed.id == hook.id
    assert await store.claim(limit=10, lease_seconds=30) == []  # leased: no one else takes it
