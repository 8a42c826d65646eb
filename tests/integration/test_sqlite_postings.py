"""SQLite's keyword search from ``chunk_terms`` (migration 0016): postings kept in step with
FTS5's index, and rankings scored as FTS5 scores them."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy.engine import make_url

from taskcrawler.domain.chunks import Chunk, EmbeddedChunk, PageChunks, Reembedded, SearchQuery
from taskcrawler.domain.jobs import NewJob
from taskcrawler.storage import Storage, open_storage, upgrade_database
from taskcrawler.storage.migrate import downgrade_database
from taskcrawler.storage.sqlite import chunks as sqlite_chunks
from taskcrawler.storage.sqlite import postings

#: Words of many frequencies, and two that stem alike ("cells", "cell"): each chunk a mix.
WORDS = [
    "cell",
    "cells",
    "kettle",
    "zeppelin",
    "airship",
    "bread",
    "river",
    "stone",
    "lamp",
    "garden",
    "copper",
    "violin",
]


@pytest.fixture
async def storage(sqlite_url: str) -> AsyncIterator[Storage]:
    storage = open_storage(sqlite_url)
    yield storage
    await storage.close()


@pytest.fixture
def postings_answers(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each unfiltered keyword search was answered from the postings (or fell back)."""
    answered: list[bool] = []
    search = postings.best_chunks

    async def spied(*args: Any, **kwargs: Any) -> Any:
        found = await search(*args, **kwargs)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(sqlite_chunks, "best_chunks", spied)
    return answered


async def _stored(storage: Storage, texts: list[str], owner: str = "", host: str = "a") -> UUID:
    [created] = await storage.jobs.create_jobs(
        [NewJob(f"http://{host}.test/", owner=owner)], redispatch_after=30
    )
    page = PageChunks(
        job_id=created.job.id,
        owner=owner,
        crawl_id=None,
        model="m",
        dim=2,
        chunks=[
            EmbeddedChunk(Chunk(i, text, ("Guide",), len(text.split())), [1.0, 0.0])
            for i, text in enumerate(texts)
        ],
    )
    await storage.chunks.replace(page, "h")
    return created.job.id


def _mixed_texts(count: int) -> list[str]:
    """Chunks holding a varying mix of :data:`WORDS`, some repeated (a deterministic spread of
    frequencies and lengths)."""
    texts = []
    for n in range(count):
        words = [WORDS[(n * 7 + i * i) % len(WORDS)] for i in range(1 + n % 9)]
        texts.append(" ".join(words + ["filler"] * (n % 5)))
    return texts


def _postings_of(url: str) -> tuple[set[tuple[str, int, int, int]], set[tuple[str, int, int, int]]]:
    """``chunk_terms`` (term, chunk, tf, length), and the same counted from FTS5's own index
    (``fts5vocab`` over ``chunks_fts``): what the triggers should have kept."""
    with sqlite3.connect(str(make_url(url).database)) as db:
        kept = set(db.execute("SELECT term, chunk_id, tf, length FROM chunk_terms"))
        db.execute(
            "CREATE VIRTUAL TABLE temp.every_token USING fts5vocab(main, chunks_fts, instance)"
        )
        counted = set(
            db.execute(
                "SELECT v.term, v.doc, v.tf, d.n FROM (SELECT term, doc, count(*) AS tf"
                " FROM temp.every_token GROUP BY term, doc) v JOIN (SELECT doc, count(*) AS n"
                " FROM temp.every_token GROUP BY doc) d ON d.doc = v.doc"
            )
        )
    return kept, counted


async def test_sqlite_ranks_from_its_postings_exactly_as_fts5_ranks_every_match(
    storage: Storage, postings_answers: list[bool]
) -> None:
    """Where every posting is read, the postings' ranking is FTS5's ranking of every match (a
    filter that keeps every page takes that way): the same chunks in the same order, the same
    scores to the last bit, words that stem alike counted once each, as FTS5 counts them."""
    await _stored(storage, _mixed_texts(60))
    queries = ["cells cell kettle", "zeppelin airship river", "copper violin lamp stone bread"]
    queries += ["garden", "cell kettle zeppelin airship bread river stone lamp garden copper"]
    for text in queries:
        for k in (1, 5, 20):
            fast = await storage.chunks.keyword(SearchQuery("", text, k=k))
            every = await storage.chunks.keyword(SearchQuery("", text, k=k, host="a.test"))
            assert [(h.chunk_index, h.score) for h in fast] == [
                (h.chunk_index, h.score) for h in every
            ]
            assert fast
    assert postings_answers == [True] * 15


async def test_sqlite_scores_the_chunks_it_reads_exactly_when_lists_are_cut(
    storage: Storage, postings_answers: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a common word's list cut to its best postings, the chunks that hold the rare word
    are all read and ranked with their every word, scored as FTS5 scores them."""
    monkeypatch.setattr(postings, "FULL_BUDGET", 3)
    monkeypatch.setattr(postings, "POSTINGS_PER_TERM", 2)
    monkeypatch.setattr(postings, "rescored", lambda k: k)
    texts = [f"kettle kettle filler {n}" for n in range(8)]  # the common word's best postings
    texts += ["zeppelin kettle", "zeppelin and other words", "zeppelin words here"]
    texts += [f"unrelated {n}" for n in range(10)]  # "kettle" in under half the chunks
    await _stored(storage, texts)
    fast = await storage.chunks.keyword(SearchQuery("", "zeppelin kettle", k=2))
    every = await storage.chunks.keyword(SearchQuery("", "zeppelin kettle", k=2, host="a.test"))
    assert [(h.chunk_index, h.score) for h in fast] == [(h.chunk_index, h.score) for h in every]
    assert [h.chunk_index for h in fast] == [8, 10]  # 8 by its kettle, read by lookup
    assert postings_answers == [True]


async def test_sqlite_falls_back_to_fts5_for_a_word_it_reads_as_a_phrase(
    storage: Storage, postings_answers: list[bool]
) -> None:
    """FTS5 reads "foo_bar" as two tokens, a phrase, which postings cannot tell from the two
    words apart: the search is FTS5's, and finds the phrase only."""
    await _stored(storage, ["foo bar together", "bar then foo", "nothing here"])
    [found] = await storage.chunks.keyword(SearchQuery("", "foo_bar", k=5))
    assert found.text == "foo bar together"
    assert postings_answers == []


async def test_sqlite_falls_back_when_other_owners_crowd_the_postings(
    storage: Storage, postings_answers: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other owners' chunks fill every posting read (the lists are every owner's): the search
    reads every match, and the caller's chunk comes back."""
    monkeypatch.setattr(postings, "FULL_BUDGET", 2)
    monkeypatch.setattr(postings, "POSTINGS_PER_TERM", 2)
    monkeypatch.setattr(postings, "rescored", lambda k: k)
    await _stored(storage, [f"zeppelin zeppelin kettle {n}" for n in range(6)], owner="them")
    await _stored(storage, ["a zeppelin and more words"], host="mine")
    [found] = await storage.chunks.keyword(SearchQuery("", "zeppelin kettle", k=2))
    assert found.url == "http://mine.test/"
    assert postings_answers == [False]


async def test_sqlite_keeps_postings_in_step_with_inserts_context_updates_and_deletes(
    storage: Storage, sqlite_url: str
) -> None:
    job = await _stored(storage, _mixed_texts(20))
    kept, counted = _postings_of(sqlite_url)
    assert kept == counted and len(kept) > 40

    stale = await storage.chunks.stale("m2", limit=3)
    await storage.chunks.set_embeddings(
        "m2", [Reembedded(c.id, "Violin Guide", [0.0, 1.0]) for c in stale]
    )
    kept, counted = _postings_of(sqlite_url)
    assert kept == counted
    assert {chunk for term, chunk, _, _ in kept if term == "guid"} == {c.id for c in stale}

    await storage.chunks.replace(
        PageChunks(job_id=job, owner="", crawl_id=None, model="m", dim=2, chunks=[]), "h2"
    )
    kept, counted = _postings_of(sqlite_url)
    assert kept == counted
    assert kept == set()


async def test_sqlite_migration_indexes_the_chunks_stored_before_it(sqlite_url: str) -> None:
    """Chunks stored at 0015 (no postings) have theirs after the upgrade, as the triggers would
    have written them."""
    await downgrade_database(sqlite_url, "0015")
    storage = open_storage(sqlite_url)
    try:
        await _stored(storage, _mixed_texts(2500))  # more than one batch of the backfill
    finally:
        await storage.close()
    await upgrade_database(sqlite_url)
    kept, counted = _postings_of(sqlite_url)
    assert kept == counted
    assert len({chunk for _, chunk, _, _ in kept}) == 2500
