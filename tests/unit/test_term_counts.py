"""The stores' kept counts of how many chunks hold a term: what a search reads of them while
another search forgets them."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest

from taskcrawler.storage.postgres import chunks as postgres_chunks
from taskcrawler.storage.postgres.chunks import PostgresChunkStore
from taskcrawler.storage.sqlite import chunks as sqlite_chunks
from taskcrawler.storage.sqlite import sql as sqlite_sql
from taskcrawler.storage.sqlite.chunks import SqliteChunkStore


class Result:
    def __init__(self, row: tuple[Any, ...]) -> None:
        self.row = row

    def one(self) -> tuple[Any, ...]:
        return self.row


class SqliteConnection:
    """Answers the corpus's figures at ``version``, and each term held by ``held`` chunks
    once ``counted`` is set."""

    def __init__(self, version: int, counted: asyncio.Event, held: int = 1) -> None:
        self.version = version
        self.counted = counted
        self.held = held
        self.counting = asyncio.Event()

    async def execute(self, stmt: Any) -> Result:
        if stmt is sqlite_sql.CORPUS_FIGURES:
            return Result((self.version, 10, "", ""))
        self.counting.set()
        await self.counted.wait()
        return Result(tuple(self.held for _ in stmt.selected_columns))


async def test_sqlite_terms_counted_while_another_search_forgets_the_counts_are_all_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A search counts its new term while another, past the counts' expiry with chunks
    written since, forgets every kept count: the first still has the count of the term it
    had kept (it failed, a KeyError, and the search with it)."""
    store = SqliteChunkStore(cast(Any, None))
    released = asyncio.Event()
    released.set()
    first = SqliteConnection(1, released)
    assert await store._holding(cast(Any, first), ["zeppelin"]) == (10, {"zeppelin": 1})

    held = asyncio.Event()
    counting = SqliteConnection(1, held)
    search = asyncio.create_task(store._holding(cast(Any, counting), ["zeppelin", "kettle"]))
    await counting.counting.wait()
    monkeypatch.setattr(sqlite_chunks, "CHUNK_COUNT_SECONDS", 0.0)
    await store._holding(cast(Any, SqliteConnection(2, released)), ["airship"])
    held.set()
    assert await search == (10, {"zeppelin": 1, "kettle": 1})


async def test_sqlite_keeps_no_count_of_a_term_no_chunk_holds() -> None:
    """Such a term is counted again at each search (a page stored since may hold it): kept, it
    only filled the cache, and a client's queries of made-up words emptied it for every
    search (the commonest terms counted again, the slowest part of a search)."""
    store = SqliteChunkStore(cast(Any, None))
    released = asyncio.Event()
    released.set()
    nowhere = SqliteConnection(1, released, held=0)
    assert await store._holding(cast(Any, nowhere), ["qwzx", "zxqw"]) == (
        10,
        {"qwzx": 0, "zxqw": 0},
    )
    assert store._rarity == {}


class PostgresConnection:
    """Counts each term asked as held by three chunks; the terms asked, by call."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    async def exec_driver_sql(self, statement: str, params: tuple[Any, ...]) -> Any:
        assert statement is postgres_chunks.sql.TERM_COUNTS
        self.asked.append(list(params[1]))
        return [SimpleNamespace(term=term, n=3) for term in params[1]]


async def test_postgresql_terms_kept_past_the_cache_s_bound_are_counted_again_not_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The owner's kept counts outgrew :data:`CACHED_TERMS`, and a query has a kept term and a
    new one: the kept one is counted again with the new one (the cache was emptied between
    the two, and the kept term was answered as held by no chunk: left out of the search)."""
    monkeypatch.setattr(postgres_chunks, "CACHED_TERMS", 2)
    store = PostgresChunkStore(cast(Any, None))
    conn = PostgresConnection()
    await store._holding(cast(Any, conn), "", ["zeppelin", "airship", "balloon"])
    assert await store._holding(cast(Any, conn), "", ["zeppelin", "kettle"]) == {
        "zeppelin": 3,
        "kettle": 3,
    }
    assert conn.asked[1] == ["zeppelin", "kettle"]
