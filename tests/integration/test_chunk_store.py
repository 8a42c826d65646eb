"""The chunk store's contract, on SQLite and on PostgreSQL with pgvector; and what PostgreSQL
without pgvector still does."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any, cast
from uuid import UUID, uuid4

import pytest
from sqlalchemy import event as sa_event

from taskcrawler.cli.main import main as cli_main
from taskcrawler.domain.chunks import (
    MAX_QUERY_TERMS,
    Chunk,
    EmbeddedChunk,
    PageChunks,
    Reembedded,
    SearchHit,
    SearchMode,
    SearchQuery,
    confidence_fusion,
)
from taskcrawler.domain.errors import VectorsUnavailable
from taskcrawler.domain.jobs import NewJob
from taskcrawler.domain.monitors import MonitorSpec
from taskcrawler.embed import EmbedderConfig, build_embedder
from taskcrawler.service.reindex import reindex_chunks
from taskcrawler.service.search import SearchService
from taskcrawler.storage import Storage, open_storage, upgrade_database
from taskcrawler.storage.migrate import downgrade_database
from taskcrawler.storage.postgres import chunks as postgres_chunks
from taskcrawler.storage.sqlite import chunks as sqlite_chunks
from taskcrawler.storage.sqlite import sql as sqlite_sql
from taskcrawler.storage.tables import chunks as chunks_table
from taskcrawler.storage.tables import jobs
from tests.support.services import has_pgvector

MODEL = "test/axes-4"
T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _unit(*values: float) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


@pytest.fixture
async def storage(vector_database_url: str) -> AsyncIterator[Storage]:
    storage = open_storage(vector_database_url)
    yield storage
    await storage.close()


async def _job(storage: Storage, url: str, owner: str = "") -> UUID:
    [created] = await storage.jobs.create_jobs([NewJob(url, owner=owner)], redispatch_after=30)
    return created.job.id


def _page(
    job_id: UUID,
    texts: list[tuple[str, list[float]]],
    *,
    owner: str = "",
    crawl_id: UUID | None = None,
    model: str = MODEL,
) -> PageChunks:
    return PageChunks(
        job_id=job_id,
        owner=owner,
        crawl_id=crawl_id,
        model=model,
        dim=len(texts[0][1]) if texts else 4,
        chunks=[
            EmbeddedChunk(Chunk(i, text, ("Guide", f"Part {i}"), len(text.split())), vector)
            for i, (text, vector) in enumerate(texts)
        ],
    )


async def test_a_page_s_chunks_are_replaced_listed_and_hashed(storage: Storage) -> None:
    job = await _job(storage, "http://a.test/")
    await storage.chunks.replace(
        _page(job, [("old one", _unit(1, 0, 0, 0)), ("old two", _unit(0, 1, 0, 0))]), "h1"
    )
    await storage.chunks.replace(_page(job, [("new text", _unit(0, 0, 1, 0))]), "h2")
    [chunk] = await storage.chunks.list_for_job(job, owner="")
    assert (chunk.index, chunk.text, chunk.heading_path, chunk.model, chunk.dim) == (
        0,
        "new text",
        ("Guide", "Part 0"),
        MODEL,
        4,
    )
    assert await storage.chunks.source_hash(job) == "h2"
    assert await storage.chunks.list_for_job(job, owner="someone else") == []
    await storage.chunks.replace(_page(job, []), "h3")
    assert await storage.chunks.list_for_job(job, owner="") == []
    assert await storage.chunks.source_hash(uuid4()) is None


async def test_semantic_search_ranks_by_cosine_within_the_owner_and_model(
    storage: Storage,
) -> None:
    mine = await _job(storage, "http://a.test/", owner="me")
    theirs = await _job(storage, "http://a.test/", owner="them")
    await storage.chunks.replace(
        _page(
            mine,
            [
                ("east", _unit(1, 0, 0, 0)),
                ("north-east", _unit(1, 1, 0, 0)),
                ("north", _unit(0, 1, 0, 0)),
                ("west", _unit(-1, 0, 0, 0)),
            ],
            owner="me",
        ),
        "h",
    )
    await storage.chunks.replace(_page(theirs, [("theirs", _unit(1, 0, 0, 0))], owner="them"), "h")
    other = await _job(storage, "http://b.test/", owner="me")
    await storage.chunks.replace(
        _page(other, [("other model", _unit(1, 0, 0, 0))], owner="me", model="other/4"), "h"
    )

    hits = await storage.chunks.semantic(
        SearchQuery("me", "q", k=3), model=MODEL, vector=_unit(1, 0.1, 0, 0)
    )
    assert [h.text for h in hits] == ["east", "north-east", "north"]
    assert hits[0].score == pytest.approx(1 / math.sqrt(1.01), abs=1e-4)
    assert hits[0].url == "http://a.test/"
    assert {h.job_id for h in hits} == {mine}
    assert hits[0].score > hits[1].score > hits[2].score


async def test_filtered_searches_return_k_results_when_k_exist(storage: Storage) -> None:
    """The crawl's pages are far from the query and the others near it: an index scan that
    stopped at its first candidates would find none of the crawl's. (At this size PostgreSQL
    may prefer the crawl's index to HNSW; pgvector's iterative scan covers the other plan.)"""
    crawl = uuid4()
    created = await storage.jobs.create_jobs(
        [NewJob(f"http://site.test/{n}") for n in range(300)], redispatch_after=30
    )
    wanted = []
    for n, item in enumerate(created):
        in_crawl = n % 100 == 0  # 3 of 300 pages
        vector = _unit(0, 1, n / 300, 0) if in_crawl else _unit(1, 0, 0, n / 300)
        page = _page(item.job.id, [(f"page {n}", vector)], crawl_id=crawl if in_crawl else None)
        await storage.chunks.replace(page, "h")
        if in_crawl:
            wanted.append(f"page {n}")
    query = SearchQuery("", "q", k=3, crawl_id=crawl, mode=SearchMode.SEMANTIC)
    hits = await storage.chunks.semantic(query, model=MODEL, vector=_unit(1, 0, 0, 0))
    assert sorted(h.text for h in hits) == sorted(wanted)


async def test_keyword_search_matches_words_stemmed_best_first(storage: Storage) -> None:
    job = await _job(storage, "http://a.test/")
    texts = [
        "Baking bread needs flour, water and yeast.",
        "The bread knife cuts a loaf.",
        "Interest rates move the stock market.",
    ]
    await storage.chunks.replace(_page(job, [(t, _unit(1, 0, 0, 0)) for t in texts]), "h")
    hits = await storage.chunks.keyword(SearchQuery("", "how to bake bread with yeast?", k=5))
    assert [h.chunk_index for h in hits] == [0, 1]
    assert hits[0].score > hits[1].score
    assert await storage.chunks.keyword(SearchQuery("other", "bread", k=5)) == []
    assert await storage.chunks.keyword(SearchQuery("", "\"' OR 1 --", k=5)) == []
    assert await storage.chunks.keyword(SearchQuery("", "NEAR(bread", k=5)) != []


async def test_reindex_finds_and_rewrites_chunks_of_another_model(storage: Storage) -> None:
    job = await _job(storage, "http://a.test/")
    await storage.chunks.replace(
        _page(job, [("one", _unit(1, 0, 0, 0)), ("two", _unit(0, 1, 0, 0))]), "h"
    )
    stale = await storage.chunks.stale("new/3")
    assert [c.text for c in stale] == ["one", "two"]
    await storage.chunks.set_embeddings(
        "new/3", [Reembedded(c.id, "Context", _unit(0, 0, 1)) for c in stale]
    )
    assert await storage.chunks.stale("new/3") == []
    hits = await storage.chunks.semantic(
        SearchQuery("", "q", k=5), model="new/3", vector=_unit(0, 0, 1)
    )
    assert [h.text for h in hits] == ["one", "two"]
    assert (
        await storage.chunks.semantic(
            SearchQuery("", "q", k=5), model=MODEL, vector=_unit(1, 0, 0, 0)
        )
        == []
    )


async def test_postgresql_without_pgvector_says_so_and_keeps_keywords(
    pg_url_without_vectors: str, pg_admin_url: str
) -> None:
    """Vectors are refused plainly, and the rest works."""
    storage = open_storage(pg_url_without_vectors)
    try:
        assert await storage.chunks.vectors_available() is False
        job = await _job(storage, "http://a.test/")
        with pytest.raises(VectorsUnavailable, match="pgvector"):
            await storage.chunks.replace(_page(job, [("text", _unit(1, 0, 0, 0))]), "h")
        with pytest.raises(VectorsUnavailable):
            await storage.chunks.semantic(SearchQuery("", "q"), model=MODEL, vector=[1.0])
        assert await storage.chunks.keyword(SearchQuery("", "text")) == []
        if not await has_pgvector(pg_admin_url):  # the server cannot have it at all
            embedder = build_embedder(EmbedderConfig())
            with pytest.raises(VectorsUnavailable, match="pgvector"):
                await reindex_chunks(storage.chunks, embedder)
            await embedder.close()
    finally:
        await storage.close()


async def test_reindex_embeds_other_models_chunks_with_the_current_one(storage: Storage) -> None:
    job = await _job(storage, "http://a.test/")
    texts = ["bread rises with yeast", "the stock market fell"]
    await storage.chunks.replace(_page(job, [(t, _unit(1, 0, 0, 0)) for t in texts]), "h")
    embedder = build_embedder(EmbedderConfig())
    try:
        assert await reindex_chunks(storage.chunks, embedder, batch=1) == 2
        assert await reindex_chunks(storage.chunks, embedder) == 0
        hits = await SearchService(cast(Any, None), storage.chunks, embedder).search(
            SearchQuery("", "baking a loaf", k=2, mode=SearchMode.SEMANTIC)
        )
    finally:
        await embedder.close()
    assert [h.text for h in hits] == texts
    [chunk, _] = await storage.chunks.list_for_job(job, owner="")
    assert (chunk.model, chunk.dim) == ("wordllama/l2_supercat-256", 256)


def test_the_reindex_command_says_when_there_is_nothing_to_do(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TASKCRAWLER_DATABASE_URL", sqlite_url)
    assert cli_main(["reindex"]) == 0
    assert capsys.readouterr().out == "re-embedded 0 chunks with wordllama/l2_supercat-256\n"


async def test_pgvector_migration_goes_down_and_up_again(pgvector_url: str) -> None:
    await downgrade_database(pgvector_url, "0003")
    await upgrade_database(pgvector_url, "head")
    storage = open_storage(pgvector_url)
    try:
        assert await storage.chunks.vectors_available()
        job = await _job(storage, "http://a.test/")
        await storage.chunks.replace(_page(job, [("text", _unit(1, 0, 0, 0))]), "h")
        hits = await storage.chunks.semantic(
            SearchQuery("", "q"), model=MODEL, vector=_unit(1, 0, 0, 0)
        )
        assert [h.text for h in hits] == ["text"]
    finally:
        await storage.close()


async def test_a_search_sees_the_chunks_written_since_the_last_one(storage: Storage) -> None:
    query = SearchQuery("", "q", k=1)
    first = await _job(storage, "http://a.test/")
    await storage.chunks.replace(_page(first, [("first", _unit(1, 0, 0, 0))]), "h")
    [found] = await storage.chunks.semantic(query, model=MODEL, vector=_unit(0, 1, 0, 0))
    assert found.text == "first"
    second = await _job(storage, "http://b.test/")
    await storage.chunks.replace(_page(second, [("second", _unit(0, 1, 0, 0))]), "h")
    [found] = await storage.chunks.semantic(query, model=MODEL, vector=_unit(0, 1, 0, 0))
    assert found.text == "second"
    await storage.chunks.replace(_page(second, []), "h2")
    [found] = await storage.chunks.semantic(query, model=MODEL, vector=_unit(0, 1, 0, 0))
    assert found.text == "first"
    await storage.chunks.replace(_page(first, [("moved", _unit(0, 1, 0, 0))]), "h3")
    [found] = await storage.chunks.semantic(query, model=MODEL, vector=_unit(0, 1, 0, 0))
    assert (found.text, found.score) == ("moved", pytest.approx(1.0, abs=1e-5))


async def _fetched(storage: Storage, job_id: UUID, title: str, at: datetime) -> None:
    async with storage.db.write() as conn:
        await conn.execute(
            jobs.update().where(jobs.c.id == job_id).values(scraped_title=title, finished_at=at)
        )


async def test_hits_carry_what_a_citation_needs(storage: Storage) -> None:
    job = await _job(storage, "http://a.test/guide")
    await _fetched(storage, job, "The guide", T0)
    chunk = Chunk(0, "Knead the dough.", ("Bread", "Kneading"), 4, start=12, end=28)
    await storage.chunks.replace(
        PageChunks(job, "", None, MODEL, 4, [EmbeddedChunk(chunk, _unit(1, 0, 0, 0))]), "h"
    )
    semantic = await storage.chunks.semantic(
        SearchQuery("", "q"), model=MODEL, vector=_unit(1, 0, 0, 0)
    )
    keyword = await storage.chunks.keyword(SearchQuery("", "kneading dough"))
    for [found] in (semantic, keyword):
        assert (found.url, found.title, found.heading_path) == (
            "http://a.test/guide",
            "The guide",
            ("Bread", "Kneading"),
        )
        assert (found.start, found.end, found.fetched_at) == (12, 28, T0)
    [stored] = await storage.chunks.list_for_job(job, owner="")
    assert (stored.start, stored.end) == (12, 28)


async def test_filters_narrow_a_search_to_host_url_prefix_fetch_time_and_monitor(
    storage: Storage,
) -> None:
    monitor = await storage.monitors.create(
        "", MonitorSpec(60, urls=("http://mon.test/watched",)), now=T0, redispatch_after=30
    )
    pages = {
        "http://a.test/docs/one": T0,
        "http://a.test/docs_x/two": T0 + timedelta(days=1),  # "_" is no wildcard in a prefix
        "http://b.test/docs/three": T0 + timedelta(days=2),
        "http://mon.test/watched": T0 + timedelta(days=3),
    }
    for url, at in pages.items():
        job = monitor.pages[0].job_id if "mon.test" in url else await _job(storage, url)
        await _fetched(storage, job, "t", at)
        await storage.chunks.replace(_page(job, [(f"bread at {url}", _unit(1, 0, 0, 0))]), "h")

    async def urls(**filters: Any) -> set[str]:
        query = SearchQuery("", "bread", k=10, **filters)
        found = await storage.chunks.keyword(query)
        near = await storage.chunks.semantic(query, model=MODEL, vector=_unit(1, 0, 0, 0))
        assert {h.url for h in near} == {h.url for h in found}
        return {h.url for h in found}

    assert len(await urls()) == 4
    assert await urls(host="A.test") == {"http://a.test/docs/one", "http://a.test/docs_x/two"}
    assert await urls(url_prefix="http://a.test/docs_") == {"http://a.test/docs_x/two"}
    assert await urls(url_prefix="http://a.test/docs%") == set()
    assert await urls(
        fetched_after=T0 + timedelta(days=1), fetched_before=T0 + timedelta(days=3)
    ) == {
        "http://a.test/docs_x/two",
        "http://b.test/docs/three",
    }
    assert await urls(monitor_id=monitor.id) == {"http://mon.test/watched"}
    assert await urls(monitor_id=uuid4()) == set()


async def test_a_url_prefix_is_matched_with_its_case(storage: Storage) -> None:
    """A URL's path tells its case apart: SQLite's LIKE, which does not for ASCII, took
    ``/Docs/`` for ``/docs/``."""
    for url in ("http://a.test/docs/one", "http://a.test/Docs/two"):
        job = await _job(storage, url)
        await _fetched(storage, job, "t", T0)
        await storage.chunks.replace(_page(job, [(f"bread at {url}", _unit(1, 0, 0, 0))]), "h")
    query = SearchQuery("", "bread", k=10, url_prefix="http://a.test/docs/")
    found = await storage.chunks.keyword(query)
    near = await storage.chunks.semantic(query, model=MODEL, vector=_unit(1, 0, 0, 0))
    assert {h.url for h in found} == {h.url for h in near} == {"http://a.test/docs/one"}


async def test_keyword_search_reads_the_context_and_scores_a_share_of_the_query(
    storage: Storage,
) -> None:
    job = await _job(storage, "http://a.test/")
    chunks = [
        Chunk(0, "It rises overnight.", (), 3, context="Sourdough starter"),
        Chunk(1, "A starter rises; feed the sourdough starter daily.", (), 9, context="Care"),
        Chunk(2, "Unrelated words about taxes.", (), 4, context="Money"),
    ]
    await storage.chunks.replace(
        PageChunks(job, "", None, MODEL, 4, [EmbeddedChunk(c, _unit(1, 0, 0, 0)) for c in chunks]),
        "h",
    )
    hits = await storage.chunks.keyword(SearchQuery("", "sourdough starter", k=5))
    assert {h.chunk_index for h in hits} == {0, 1}  # chunk 0 by its context alone
    assert all(0 < h.score < 1 for h in hits)
    partial = await storage.chunks.keyword(SearchQuery("", "sourdough zeppelin", k=5))
    assert partial[0].score < max(h.score for h in hits)


async def test_reindex_gives_chunks_made_before_their_context(storage: Storage) -> None:
    job = await _job(storage, "http://a.test/")
    await _fetched(storage, job, "Sourdough starter", T0)
    await storage.chunks.replace(_page(job, [("It rises overnight.", _unit(1, 0, 0, 0))]), "h")
    async with storage.db.write() as conn:  # as migration 0012 leaves the chunks made before
        await conn.execute(chunks_table.update().values(context=None))
    [stale] = await storage.chunks.stale(MODEL)
    assert (stale.title, stale.heading_path) == ("Sourdough starter", ("Guide", "Part 0"))
    embedder = build_embedder(EmbedderConfig())
    try:
        assert await reindex_chunks(storage.chunks, embedder) == 1
    finally:
        await embedder.close()
    assert await storage.chunks.stale(embedder.model) == []
    [found] = await storage.chunks.keyword(SearchQuery("", "sourdough"))
    assert found.text == "It rises overnight."


@pytest.fixture
def small_posting_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Caps that a few chunks exceed: what 100,000 chunks make of the defaults."""
    monkeypatch.setattr(postgres_chunks, "POSTINGS_PER_TERM", 3)
    monkeypatch.setattr(postgres_chunks, "POSTINGS_BUDGET", 3)
    monkeypatch.setattr(postgres_chunks, "rescored", lambda k: k)
    monkeypatch.setattr(sqlite_chunks, "POSTINGS_BUDGET", 3)
    monkeypatch.setattr(sqlite_chunks, "KEYWORD_CANDIDATES", 2)
    monkeypatch.setattr(sqlite_chunks, "FILTERED_KEYWORD_CANDIDATES", 2)
    monkeypatch.setattr(sqlite_chunks, "RANKED_ALONE", 0)  # a filter's few: pruned first


@pytest.mark.usefixtures("small_posting_caps")
async def test_keyword_search_reads_a_common_term_s_best_postings_and_scores_exactly(
    storage: Storage,
) -> None:
    """Read no further than its caps, an unfiltered search still finds the chunks that hold
    the query's rare word, ranks them by every word they hold, and scores them as the search
    that reads every posting does (a filter that keeps every page takes that way)."""
    job = await _job(storage, "http://a.test/")
    filler = "alpha beta gamma delta"
    texts = [f"kettle {filler} {n}" for n in range(12)]  # "kettle" is the common word
    texts += [f"zeppelin kettle {filler}", f"zeppelin {filler} epsilon", "unrelated words"]
    texts += [f"more unrelated words {n}" for n in range(12)]  # "kettle" in under half
    await storage.chunks.replace(_page(job, [(t, _unit(1, 0, 0, 0)) for t in texts]), "h")

    pruned = await storage.chunks.keyword(SearchQuery("", "zeppelin kettle", k=2))
    filtered = SearchQuery("", "zeppelin kettle", k=2, host="a.test")
    every = await _every_match(storage, filtered)
    assert [h.chunk_index for h in pruned] == [12, 13]
    assert [h.chunk_index for h in every] == [12, 13]
    assert [h.score for h in pruned] == pytest.approx([h.score for h in every])
    # A filter that keeps every page ranks as the search without it.
    assert await storage.chunks.keyword(filtered) == pruned
    assert await storage.chunks.keyword(SearchQuery("other", "zeppelin kettle", k=2)) == []


async def test_postgresql_reads_the_rarest_terms_in_full_and_ranks_as_every_posting_would(
    pgvector_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The best chunk holds the rare word and the common one, each once in a long text: in
    neither term's best postings (shorter chunks hold each more densely), it is found because
    the rare word's postings, within the budget, are all read; the ranking is then the one of
    every posting (a filter that keeps every page)."""
    monkeypatch.setattr(postgres_chunks, "POSTINGS_PER_TERM", 2)
    monkeypatch.setattr(postgres_chunks, "POSTINGS_BUDGET", 4)
    monkeypatch.setattr(postgres_chunks, "rescored", lambda k: 2 * k)
    storage = open_storage(pgvector_url)
    try:
        job = await _job(storage, "http://a.test/")
        texts = [f"zeppelin alpha {n}" for n in range(3)]
        texts += ["zeppelin kettle alpha beta gamma delta"]
        texts += [f"kettle alpha {n}" for n in range(7)]
        texts += [f"unrelated words {n}" for n in range(12)]
        await storage.chunks.replace(_page(job, [(t, _unit(1, 0, 0, 0)) for t in texts]), "h")
        query = "zeppelin kettle"
        pruned = await storage.chunks.keyword(SearchQuery("", query, k=2))
        every = await _every_match(storage, SearchQuery("", query, k=2, host="a.test"))
    finally:
        await storage.close()
    assert [h.chunk_index for h in every] == [3, 0]
    assert [h.chunk_index for h in pruned] == [3, 0]
    assert [h.score for h in pruned] == pytest.approx([h.score for h in every])


@pytest.mark.usefixtures("small_posting_caps")
async def test_sqlite_leaves_a_word_half_the_chunks_hold_out_of_the_and_and_ranks_the_same(
    sqlite_url: str,
) -> None:
    """Most chunks hold "kettle": FTS5's BM25 floors its rarity, so the AND of the rare word
    with the common ones leaves it out (reading its postings was most of that statement's
    work), and the search still answers what the search reading every match does."""
    storage = open_storage(sqlite_url)
    matches: list[str] = []

    def record_matches(*args: Any) -> None:
        matches.extend(str(value) for value in args[3] if " AND " in str(value))

    sa_event.listen(storage.db.engine.sync_engine, "before_cursor_execute", record_matches)
    try:
        job = await _job(storage, "http://a.test/")
        texts = [f"kettle filler {n}" for n in range(10)]
        texts += ["zeppelin airship", "airship kettle", "zeppelin kettle", "zeppelin words"]
        await storage.chunks.replace(_page(job, [(t, _unit(1, 0, 0, 0)) for t in texts]), "h")
        query = "airship zeppelin kettle"
        pruned = await storage.chunks.keyword(SearchQuery("", query, k=2))
        every = await _every_match(storage, SearchQuery("", query, k=2))
    finally:
        await storage.close()
    assert matches == ['("airship") AND ("zeppelin")']
    assert [h.chunk_index for h in pruned] == [h.chunk_index for h in every] == [10, 11]
    assert [h.score for h in pruned] == pytest.approx([h.score for h in every], abs=1e-5)


async def _every_match(storage: Storage, query: SearchQuery) -> list[SearchHit]:
    """``query``'s keyword search with nothing pruned: every match of its words ranked (on
    PostgreSQL, ``query`` must be filtered: only then is every posting scored)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite_chunks.SqliteChunkStore, "_pruned", _nothing_pruned)
        patch.setattr(sqlite_chunks.SqliteChunkStore, "_among_few", _never_few)
        patch.setattr(postgres_chunks.PostgresChunkStore, "_pruned", _nothing_pruned)
        return await storage.chunks.keyword(query)


async def _nothing_pruned(*args: Any, **kwargs: Any) -> list[Any]:
    return []


async def _never_few(*args: Any, **kwargs: Any) -> None:
    return None


@pytest.mark.usefixtures("small_posting_caps")
async def test_a_keyword_search_crowded_out_by_other_owners_reads_every_match(
    storage: Storage,
) -> None:
    """Another owner's chunks hold the query's words more often: the caller's still come back
    (SQLite's index and its counts are every owner's)."""
    theirs = await _job(storage, "http://theirs.test/", owner="them")
    texts = [f"zeppelin zeppelin kettle {n}" for n in range(8)]
    await storage.chunks.replace(
        _page(theirs, [(t, _unit(1, 0, 0, 0)) for t in texts], owner="them"), "h"
    )
    mine = await _job(storage, "http://mine.test/")
    await storage.chunks.replace(_page(mine, [("a zeppelin", _unit(1, 0, 0, 0))]), "h")
    [found] = await storage.chunks.keyword(SearchQuery("", "zeppelin kettle", k=2))
    assert found.url == "http://mine.test/"


#: What only the statement that ranks every match of a keyword search says.
EVERY_MATCH = "FROM chunks_fts JOIN chunks ON chunks.id = chunks_fts.rowid"


def _record_statements(storage: Storage) -> list[tuple[str, tuple[Any, ...]]]:
    """Every statement the storage runs from now on, with its parameters."""
    statements: list[tuple[str, tuple[Any, ...]]] = []

    def record(*args: Any) -> None:
        statements.append((str(args[2]), tuple(args[3])))

    sa_event.listen(storage.db.engine.sync_engine, "before_cursor_execute", record)
    return statements


@pytest.mark.usefixtures("small_posting_caps")
async def test_sqlite_takes_rarer_terms_until_they_hold_k_postings_and_ranks_as_every_match(
    sqlite_url: str,
) -> None:
    """The rarest word is in one chunk and the next over the budget: ranking the rare word
    alone could not find k chunks, and every match of every word was ranked (seconds of CPU
    at 100,000 chunks where all the other words are common). The next word joins the rare
    ones instead, and the answer is still the one of every match."""
    storage = open_storage(sqlite_url)
    statements = _record_statements(storage)
    try:
        job = await _job(storage, "http://a.test/")
        texts = ["zeppelin kettle", "kettle kettle pot", "kettle one", "kettle two", "pot"]
        texts += [f"filler {n}" for n in range(6)]  # "kettle" in under half the chunks
        await storage.chunks.replace(_page(job, [(t, _unit(1, 0, 0, 0)) for t in texts]), "h")
        query = "zeppelin kettle"
        statements.clear()
        pruned = await storage.chunks.keyword(SearchQuery("", query, k=3))
        assert not [text for text, _ in statements if EVERY_MATCH in text]
        every = await storage.chunks.keyword(SearchQuery("", query, k=3, host="a.test"))
    finally:
        await storage.close()
    assert [h.chunk_index for h in pruned] == [h.chunk_index for h in every] == [0, 1, 2]
    assert [h.score for h in pruned] == pytest.approx([h.score for h in every])


async def test_sqlite_ranks_k_candidates_where_one_owner_holds_every_chunk(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No other owner's chunk can crowd the caller's out of FTS5's k best: k are told the
    owner of, not :data:`KEYWORD_CANDIDATES`. Another owner's chunk written since the chunks
    were counted, and ranked first, has every match read: the caller still has its k."""
    monkeypatch.setattr(sqlite_chunks, "KEYWORD_CANDIDATES", 1000)
    storage = open_storage(sqlite_url)
    statements = _record_statements(storage)

    def depths() -> list[int]:
        """What the pruned statements ranked: at most 1000 matches, or fewer."""
        bound = [params for text, params in statements if text.startswith("WITH best")]
        return [1000 if 1000 in params else 0 for params in bound]

    try:
        job = await _job(storage, "http://a.test/")
        texts = [f"zeppelin {n}" for n in range(4)] + [f"filler {n}" for n in range(4)]
        await storage.chunks.replace(_page(job, [(t, _unit(1, 0, 0, 0)) for t in texts]), "h")
        query = SearchQuery("", "zeppelin", k=2)
        assert [h.chunk_index for h in await storage.chunks.keyword(query)] == [0, 1]
        assert depths() == [0]

        theirs = await _job(storage, "http://theirs.test/", owner="them")
        page = _page(theirs, [("zeppelin zeppelin", _unit(1, 0, 0, 0))], owner="them")
        await storage.chunks.replace(page, "h")
        statements.clear()
        assert [h.chunk_index for h in await storage.chunks.keyword(query)] == [0, 1]
        assert [text for text, _ in statements if EVERY_MATCH in text]

        monkeypatch.setattr(sqlite_chunks, "CHUNK_COUNT_SECONDS", 0.0)
        statements.clear()
        assert [h.chunk_index for h in await storage.chunks.keyword(query)] == [0, 1]
        assert depths() == [1000]
    finally:
        await storage.close()


class AxisEmbedder:
    """Embeds every query as the first axis, as the chunks of the tests' pages are."""

    model = MODEL

    async def embed(self, texts: Any, *, purpose: str = "document") -> list[list[float]]:
        return [_unit(1, 0, 0, 0) for _ in texts]

    async def close(self) -> None:
        return None


async def test_sqlite_hybrid_search_reads_only_the_chunks_it_keeps(sqlite_url: str) -> None:
    """Each ranking is 50 deep and the fusion keeps k: the chunks' texts are read once, for
    those k, and they are what fusing the two searches' hits gives."""
    storage = open_storage(sqlite_url)
    statements = _record_statements(storage)
    search = SearchService(cast(Any, None), storage.chunks, cast(Any, AxisEmbedder()))
    try:
        job = await _job(storage, "http://a.test/")
        texts = [(f"zeppelin {'kettle ' * (n % 3)}{n}", _unit(1, n / 20, 0, 0)) for n in range(20)]
        await storage.chunks.replace(_page(job, texts), "h")
        statements.clear()
        hits = await search.search(SearchQuery("", "zeppelin kettle", k=3))
        reads = [text for text, _ in statements if "chunks.text" in text]
        deep = SearchQuery("", "zeppelin kettle", k=50)
        semantic = await storage.chunks.semantic(deep, model=MODEL, vector=_unit(1, 0, 0, 0))
        keyword = await storage.chunks.keyword(deep)
    finally:
        await storage.close()
    assert len(reads) == 1
    fused = confidence_fusion(
        [((h.job_id, h.chunk_index), h.score) for h in semantic],
        [((h.job_id, h.chunk_index), h.score) for h in keyword],
    )[:3]
    assert [(h.chunk_index, h.text) for h in hits] == [
        (index, texts[index][0]) for (_, index), _ in fused
    ]
    assert [h.score for h in hits] == [score for _, score in fused]


@pytest.mark.usefixtures("small_posting_caps")
async def test_sqlite_builds_the_pruned_keyword_statement_once_and_binds_each_search(
    sqlite_url: str,
) -> None:
    """Searches of other owners, words and sizes run the statement built for the first (built
    and keyed anew each time, it took a tenth of a search's CPU), each with its own values."""
    sqlite_sql.pruned_keyword_search.cache_clear()
    storage = open_storage(sqlite_url)
    try:
        for owner in ("", "them"):
            job = await _job(storage, f"http://{owner or 'mine'}.test/", owner=owner)
            texts = [f"filler {n}" for n in range(6)] + [f"zeppelin kettle {owner}"]
            texts += [f"zeppelin airship {owner}", f"airship kettle {owner}"]
            page = _page(job, [(t, _unit(1, 0, 0, 0)) for t in texts], owner=owner)
            await storage.chunks.replace(page, "h")
        mine = await storage.chunks.keyword(SearchQuery("", "zeppelin kettle", k=1))
        theirs = await storage.chunks.keyword(SearchQuery("them", "airship kettle", k=2))
        assert [(h.url, h.chunk_index) for h in mine] == [("http://mine.test/", 6)]
        assert [(h.url, h.chunk_index) for h in theirs] == [
            ("http://them.test/", 8),
            ("http://them.test/", 7),
        ]
        built = sqlite_sql.pruned_keyword_search.cache_info()
        assert (built.misses, built.hits) == (1, 1)
    finally:
        await storage.close()


async def test_closing_the_store_waits_a_bounded_time_for_a_cancelled_count_to_end(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A count cancelled at close may be stuck ending too (its connection's rollback waits on
    a database that does not answer): closing waits for it no longer than it waited for the
    count, then closes the database all the same."""
    monkeypatch.setattr(postgres_chunks, "SETTLE_SECONDS", 0.1)
    storage = open_storage(pg_url)
    answered = asyncio.Event()  # the database's answer: it never comes before close returns

    async def count_whose_ending_waits_on_the_database() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await answered.wait()

    chunks = cast(postgres_chunks.PostgresChunkStore, storage.chunks)
    count = asyncio.create_task(count_whose_ending_waits_on_the_database())
    chunks._recounts["owner"] = count
    await asyncio.sleep(0)
    # A bound on a hang, not a timing: closing takes 0.2 s; without its own bound, forever.
    await asyncio.wait_for(storage.close(), timeout=60)
    assert not count.done()
    answered.set()
    await asyncio.gather(count, return_exceptions=True)


@pytest.fixture
def vector_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The id after which each read of an owner's vectors on SQLite started (0: all of them)."""
    reads: list[int] = []
    read = sqlite_chunks.sql.owner_vectors

    def spied(owner: str, model: str, after: int) -> Any:
        reads.append(after)
        return read(owner, model, after)

    monkeypatch.setattr(sqlite_chunks.sql, "owner_vectors", spied)
    return reads


async def _texts(storage: Storage, owner: str, vector: list[float], k: int = 10) -> list[str]:
    hits = await storage.chunks.semantic(SearchQuery(owner, "q", k=k), model=MODEL, vector=vector)
    return [h.text for h in hits]


async def test_sqlite_keeps_each_owner_s_vectors_current_reading_only_what_changed(
    sqlite_url: str, vector_reads: list[int]
) -> None:
    """Another process (a second store on the same file) writes: the searching store reads the
    owner's new vectors and drops its deleted ones, never another owner's; an update of a vector
    in place has every vector read again."""
    searching, writing = open_storage(sqlite_url), open_storage(sqlite_url)
    try:
        mine = await _job(writing, "http://a.test/", owner="me")
        theirs = await _job(writing, "http://b.test/", owner="them")
        await writing.chunks.replace(
            _page(mine, [("east", _unit(1, 0, 0, 0)), ("north", _unit(0, 1, 0, 0))], owner="me"),
            "h",
        )
        assert await _texts(searching, "me", _unit(1, 0, 0, 0)) == ["east", "north"]
        assert vector_reads == [0]

        await writing.chunks.replace(
            _page(theirs, [("their east", _unit(1, 0, 0, 0))], owner="them"), "h"
        )
        more = await _job(writing, "http://c.test/", owner="me")
        await writing.chunks.replace(_page(more, [("up", _unit(0, 0, 1, 0))], owner="me"), "h")
        assert await _texts(searching, "me", _unit(1, 0, 0, 0)) == ["east", "north", "up"]
        assert vector_reads[1] > 0  # the owner's new chunks appended, the others not read again
        assert await _texts(searching, "them", _unit(1, 0, 0, 0)) == ["their east"]
        first_reads = len(vector_reads)

        # A page fetched again: its chunks deleted and inserted anew.
        await writing.chunks.replace(_page(mine, [("west", _unit(-1, 0, 0, 0))], owner="me"), "h2")
        await writing.chunks.replace(_page(theirs, [], owner="them"), "h2")
        assert await _texts(searching, "me", _unit(1, 0, 0, 0)) == ["up", "west"]
        assert await _texts(searching, "them", _unit(1, 0, 0, 0)) == []
        assert len(vector_reads) > first_reads and 0 not in vector_reads[first_reads:]

        # Vectors changed in place by another process's re-index: the ids alone cannot tell.
        [west] = [c for c in await writing.chunks.stale("other") if c.text == "west"]
        await writing.chunks.set_embeddings(MODEL, [Reembedded(west.id, "", _unit(1, 0, 0, 0))])
        reads_before = len(vector_reads)
        assert await _texts(searching, "me", _unit(1, 0, 0, 0), k=1) == ["west"]
        assert vector_reads[reads_before:] == [0]
    finally:
        await searching.close()
        await writing.close()


async def test_sqlite_reads_every_vector_again_when_a_job_s_deletion_cascades(
    sqlite_url: str, vector_reads: list[int]
) -> None:
    storage = open_storage(sqlite_url)
    try:
        job = await _job(storage, "http://a.test/")
        kept_job = await _job(storage, "http://b.test/")
        await storage.chunks.replace(_page(job, [("gone", _unit(1, 0, 0, 0))]), "h")
        await storage.chunks.replace(_page(kept_job, [("kept", _unit(0, 1, 0, 0))]), "h")
        assert await _texts(storage, "", _unit(1, 0, 0, 0)) == ["gone", "kept"]
        async with storage.db.write() as conn:
            await conn.execute(jobs.delete().where(jobs.c.id == job))
        assert await _texts(storage, "", _unit(1, 0, 0, 0)) == ["kept"]
    finally:
        await storage.close()


@pytest.fixture
def term_counts(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The terms each count of SQLite's FTS5 index was asked for; the counts always expired."""
    counted: list[list[str]] = []
    holding = sqlite_chunks.sql.holding

    def spied(terms: list[str]) -> Any:
        counted.append(list(terms))
        return holding(terms)

    monkeypatch.setattr(sqlite_chunks.sql, "holding", spied)
    monkeypatch.setattr(sqlite_chunks, "CHUNK_COUNT_SECONDS", 0.0)
    return counted


async def test_sqlite_counts_terms_again_only_after_a_chunk_was_written(
    sqlite_url: str, term_counts: list[list[str]]
) -> None:
    """The counts expired, a keyword search counts its terms again only if a chunk was written
    since (counting a common term reads its whole posting list); then its scores are those of
    the index as it is now."""
    storage = open_storage(sqlite_url)
    try:
        first = await _job(storage, "http://a.test/")
        texts = ["kettle on the stove", "a kettle of fish", "unrelated words here"]
        await storage.chunks.replace(_page(first, [(t, _unit(1, 0, 0, 0)) for t in texts]), "h")
        query = SearchQuery("", "kettle", k=3)
        before = await storage.chunks.keyword(query)
        assert await storage.chunks.keyword(query) == before
        assert term_counts == [["kettle"]]

        second = await _job(storage, "http://b.test/")
        more = [(f"kettle number {n}", _unit(1, 0, 0, 0)) for n in range(3)]
        await storage.chunks.replace(_page(second, more), "h")
        after = await storage.chunks.keyword(query)
        assert term_counts == [["kettle"], ["kettle"]]
        anew = open_storage(sqlite_url)
        try:
            assert await anew.chunks.keyword(query) == after
        finally:
            await anew.close()
    finally:
        await storage.close()


async def _statements_like(storage: Storage, marker: str) -> list[str]:
    """Every statement ``storage`` runs from now on that contains ``marker`` (a list that
    grows)."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if marker in statement:
            seen.append(statement)

    sa_event.listen(storage.db.engine.sync_engine, "before_cursor_execute", record)
    return seen


async def test_postgresql_counts_the_corpus_in_the_background_and_terms_after_writes(
    pgvector_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counts past their time, a keyword search uses them while a task counts the owner's
    chunks again; its terms are counted again only once its chunks changed, and then its
    scores are those a new store gives."""
    monkeypatch.setattr(postgres_chunks, "CORPUS_STATS_SECONDS", 0.0)
    storage = open_storage(pgvector_url)
    try:
        corpus = await _statements_like(storage, "AS newest FROM chunks")
        terms = await _statements_like(storage, "FROM chunk_terms t WHERE t.owner = $1 AND")
        first = await _job(storage, "http://a.test/")
        texts = ["kettle on the stove", "a kettle of fish", "unrelated words here"]
        await storage.chunks.replace(_page(first, [(t, _unit(1, 0, 0, 0)) for t in texts]), "h")
        query = SearchQuery("", "kettle", k=3)
        before = await storage.chunks.keyword(query)
        assert (len(corpus), len(terms)) == (1, 1)
        assert await storage.chunks.keyword(query) == before  # stale: counted in the background
        await storage.chunks.settle()
        assert len(corpus) == 2
        assert await storage.chunks.keyword(query) == before
        await storage.chunks.settle()
        assert (len(corpus), len(terms)) == (3, 1)  # counted again, the same: terms kept

        second = await _job(storage, "http://b.test/")
        more = [(f"kettle number {n}", _unit(1, 0, 0, 0)) for n in range(3)]
        await storage.chunks.replace(_page(second, more), "h")
        stale = await storage.chunks.keyword(query)  # the old figures, while a task counts anew
        await storage.chunks.settle()
        assert len(corpus) == 4  # (the terms are counted again by whichever search is next)
        after = await storage.chunks.keyword(query)
        assert [h.score for h in after] != [h.score for h in stale]
        assert len(terms) == 2  # the chunks changed: their terms counted again
        anew = open_storage(pgvector_url)
        try:
            assert await anew.chunks.keyword(query) == after
        finally:
            await anew.close()
    finally:
        await storage.close()


async def test_closing_the_store_ends_a_corpus_count_that_never_answers(
    pgvector_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A background count stuck on a database that does not answer is cancelled once closing
    has waited :data:`SETTLE_SECONDS` for it, and the database is closed all the same."""
    monkeypatch.setattr(postgres_chunks, "CORPUS_STATS_SECONDS", 0.0)
    monkeypatch.setattr(postgres_chunks, "SETTLE_SECONDS", 0.2)
    storage = open_storage(pgvector_url)
    job = await _job(storage, "http://a.test/")
    await storage.chunks.replace(_page(job, [("kettle on the stove", _unit(1, 0, 0, 0))]), "h")
    query = SearchQuery("", "kettle", k=3)
    await storage.chunks.keyword(query)  # counted, by the search itself
    stuck: list[asyncio.Task[Any]] = []

    async def never_answers(*args: Any) -> tuple[int, float]:
        task = asyncio.current_task()
        assert task is not None
        stuck.append(task)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    monkeypatch.setattr(storage.chunks, "_count_corpus", never_answers)
    await storage.chunks.keyword(query)  # uses the counts, and starts a count that hangs
    await asyncio.sleep(0)
    await storage.close()
    assert len(stuck) == 1 and stuck[0].cancelled()
    assert storage.db.engine.pool.checkedout() == 0


async def test_a_filtered_search_after_a_crawl_outgrew_the_counted_chunks(
    storage: Storage,
) -> None:
    """Chunks written since the owner's chunks were counted may hold a word more often than
    that count (a first page, then a crawl's many): a filtered search, which counts its terms
    anew, ranks them all the same (a term held by more chunks than counted is the commonest)."""
    first = await _job(storage, "http://a.test/")
    await storage.chunks.replace(_page(first, [("kettle on the stove", _unit(1, 0, 0, 0))]), "h")
    assert len(await storage.chunks.keyword(SearchQuery("", "kettle"))) == 1  # counted: 1
    crawl = uuid4()
    for n in range(3):
        job = await _job(storage, f"http://b.test/{n}")
        page = _page(job, [(f"kettle number {n}", _unit(1, 0, 0, 0))], crawl_id=crawl)
        await storage.chunks.replace(page, "h")
    hits = await storage.chunks.keyword(SearchQuery("", "kettle", host="b.test"))
    assert sorted(h.url for h in hits) == [f"http://b.test/{n}" for n in range(3)]
    assert all(0 < h.score <= 1 for h in hits)
    hits = await storage.chunks.keyword(SearchQuery("", "kettle", crawl_id=crawl))
    assert len(hits) == 3


async def test_words_joined_by_underscores_count_against_the_query_s_terms(
    pgvector_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL's parser splits ``a_b`` into two words: a query of words joined by
    underscores reads no more terms' postings than one of as many words apart."""
    storage = open_storage(pgvector_url)
    counted: list[list[str]] = []
    holding = storage.chunks._holding  # type: ignore[attr-defined]

    async def spied(conn: Any, owner: str, terms: list[str]) -> dict[str, int]:
        counted.append(terms)
        return cast(dict[str, int], await holding(conn, owner, terms))

    monkeypatch.setattr(storage.chunks, "_holding", spied)
    try:
        job = await _job(storage, "http://a.test/")
        words = [f"w{n}" for n in range(100)]
        await storage.chunks.replace(_page(job, [(" ".join(words), _unit(1, 0, 0, 0))]), "h")
        [found] = await storage.chunks.keyword(SearchQuery("", "_".join(words)))
    finally:
        await storage.close()
    assert found.chunk_index == 0
    assert [len(terms) for terms in counted] == [MAX_QUERY_TERMS]


@pytest.mark.parametrize(
    ("loaded_alone", "nearest", "near"),
    [(0, 1000, 1), (0, 1, 1), (0, 1, 0), (2000, 1000, 1)],
    ids=["owners-matrix", "owners-nearest-kept", "owners-nearest-left-out", "read-alone"],
)
async def test_sqlite_filtered_semantic_search_reads_no_vectors_once_the_owners_are_kept(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, loaded_alone: int, nearest: int, near: int
) -> None:
    """A filter that keeps many chunks asks which of the owner's nearest it keeps, or where
    fewer than k, searches among every chunk it keeps, in the owner's matrix, kept in memory:
    a second search reads ids, not vectors (each search read every kept vector, 100 MB at
    100,000 chunks). One that keeps a few reads theirs alone. The answer is the same."""
    monkeypatch.setattr(sqlite_chunks, "LOADED_ALONE", loaded_alone)
    monkeypatch.setattr(sqlite_chunks, "FILTERED_NEAREST", nearest)
    monkeypatch.setattr(sqlite_chunks, "FILTERED_NEAREST_PER_RESULT", 1)
    storage = open_storage(sqlite_url)
    try:
        crawl = uuid4()
        wanted = []
        for n in range(12):
            job = await _job(storage, f"http://site.test/{n}")
            in_crawl = n % 3 == 0
            vector = _unit(0, 1, n / 12, 0) if in_crawl else _unit(1, 0, 0, n / 12)
            page = _page(job, [(f"page {n}", vector)], crawl_id=crawl if in_crawl else None)
            await storage.chunks.replace(page, "h")
            wanted += [f"page {n}"] if in_crawl else []
        query = SearchQuery("", "q", k=3, crawl_id=crawl, mode=SearchMode.SEMANTIC)
        vector = _unit(0, 1, 0.3, 0) if near else _unit(1, 0, 0, 0)
        first = await storage.chunks.semantic(query, model=MODEL, vector=vector)
        statements = _record_statements(storage)
        second = await storage.chunks.semantic(query, model=MODEL, vector=vector)
    finally:
        await storage.close()
    expected = ["page 3", "page 6", "page 0"] if near else ["page 0", "page 3", "page 6"]
    assert [h.text for h in first] == [h.text for h in second] == expected
    assert set(wanted) > {h.text for h in first}
    vectors_read = [s for s, _ in statements if "embedding" in s and "FROM chunks" in s]
    assert bool(vectors_read) == bool(loaded_alone)


async def test_postgresql_keeps_few_owners_statistics_and_answers_the_same_after_forgetting(
    pgvector_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each owner that searches has its counts cached; the caches keep only the owners that
    searched last, and an owner forgotten is counted again: the same hits as before, and as a
    new store gives."""
    monkeypatch.setattr(postgres_chunks, "CACHED_CORPORA", 2)
    monkeypatch.setattr(postgres_chunks, "CACHED_RARITIES", 1)
    storage = open_storage(pgvector_url)
    try:
        owners = [f"owner{n}" for n in range(4)]
        texts = ["kettle on the stove", "a kettle of fish", "unrelated words here"]
        for n, owner in enumerate(owners):
            job = await _job(storage, f"http://{owner}.test/", owner=owner)
            page = [(t, _unit(1, 0, 0, 0)) for t in texts[: n % 3 + 1]]
            await storage.chunks.replace(_page(job, page, owner=owner), "h")
        chunks = cast(postgres_chunks.PostgresChunkStore, storage.chunks)
        first = {}
        for owner in owners:
            first[owner] = await chunks.keyword(SearchQuery(owner, "kettle", k=3))
            assert len(chunks._corpus) <= 2
            assert len(chunks._rarity) <= 1
        assert first[owners[0]]
        assert owners[0] not in chunks._corpus and owners[0] not in chunks._rarity
        assert await chunks.keyword(SearchQuery(owners[0], "kettle", k=3)) == first[owners[0]]
        anew = open_storage(pgvector_url)
        try:
            for owner in owners:
                assert await anew.chunks.keyword(SearchQuery(owner, "kettle", k=3)) == first[owner]
        finally:
            await anew.close()
    finally:
        await storage.close()


#: What only the statement that ranks every match among a filter's few chunks says.
AMONG_FEW = "+rowid IN (SELECT value FROM json_each("


@pytest.mark.usefixtures("small_posting_caps")
@pytest.mark.parametrize("ranked_among", [0, 1000], ids=["among-none", "among-few"])
@pytest.mark.parametrize(
    "filters",
    [{"host": "a.test"}, {"url_prefix": "http://b.test/"}, {"host": "c.test"}],
    ids=["keeps-most", "keeps-one", "keeps-none"],
)
async def test_sqlite_a_filtered_keyword_search_ranks_few_where_they_are_enough(
    sqlite_url: str,
    monkeypatch: pytest.MonkeyPatch,
    filters: dict[str, str],
    ranked_among: int,
) -> None:
    """A filter is applied to the best chunks FTS5 ranks, as the owner is: where they hold
    ``k`` that it keeps, nothing else is ranked (every match of every word took a quarter of
    a second at 100,000 chunks); where they do not, every match among the filter's chunks is,
    or, where it keeps more than :data:`RANKED_AMONG`, every match of the index. Either way
    the answer is every match's."""
    monkeypatch.setattr(sqlite_chunks, "RANKED_AMONG", ranked_among)
    pages = {
        "a.test": [f"zeppelin kettle {n}" for n in range(6)] + ["kettle filler"] * 20,
        "b.test": ["a zeppelin far below"],
    }
    query = SearchQuery("", "zeppelin kettle", k=1, **filters)  # type: ignore[arg-type]
    found, every, statements = await _keyword_and_every_match(sqlite_url, pages, query)
    assert [(h.url, h.chunk_index) for h in found] == [(h.url, h.chunk_index) for h in every]
    assert [h.score for h in found] == pytest.approx([h.score for h in every], abs=1e-5)
    # A filter that keeps nothing has nothing ranked: there is no match among its chunks.
    too_few = filters == {"url_prefix": "http://b.test/"}
    assert any(EVERY_MATCH in s for s, _ in statements) == (too_few and not ranked_among)
    assert any(AMONG_FEW in s for s, _ in statements) == (too_few and bool(ranked_among))
    assert len(found) == (0 if filters == {"host": "c.test"} else 1)


@pytest.mark.parametrize("k", [1, 3, 10], ids=["k1", "k3", "more-than-kept"])
@pytest.mark.parametrize(
    "filters",
    [{"host": "a.test"}, {"url_prefix": "http://b.test/"}, {"host": "c.test"}],
    ids=["keeps-most", "keeps-one", "keeps-none"],
)
async def test_sqlite_a_filter_that_keeps_few_chunks_has_every_match_among_them_ranked(
    sqlite_url: str, filters: dict[str, str], k: int
) -> None:
    """A filter that keeps a few chunks (a hundredth of 100,000) has too few among the best
    matches of the index: every match among its chunks is ranked, and no other (every match
    of the index, each told its filters, took a quarter of a second). The answer is every
    match's, fewer than ``k`` where fewer match."""
    pages = {
        "a.test": [f"zeppelin kettle {n}" for n in range(6)] + ["kettle filler"] * 20,
        "b.test": ["a zeppelin far below", "no match here"],
    }
    query = SearchQuery("", "zeppelin kettle", k=k, **filters)  # type: ignore[arg-type]
    found, every, statements = await _keyword_and_every_match(sqlite_url, pages, query)
    assert [(h.url, h.chunk_index) for h in found] == [(h.url, h.chunk_index) for h in every]
    assert [h.score for h in found] == pytest.approx([h.score for h in every], abs=1e-5)
    assert not any(EVERY_MATCH in s or "GROUP BY id" in s for s, _ in statements)
    assert any(AMONG_FEW in s for s, _ in statements) == (filters != {"host": "c.test"})
    kept = {"host": "a.test"}, {"url_prefix": "http://b.test/"}
    assert len(found) == min(k, 26 if filters == kept[0] else 1 if filters == kept[1] else 0)


@pytest.mark.usefixtures("small_posting_caps")
async def test_sqlite_a_filtered_keyword_search_ranks_as_many_as_it_asks_the_filter_about(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query's rarest word is only in a page the filter leaves out: ranked by it alone,
    the search found none the filter keeps and ranked every match (a quarter of a second at
    100,000 chunks). The rare words hold as many postings as the filter is asked about."""
    monkeypatch.setattr(sqlite_chunks, "FILTERED_KEYWORD_CANDIDATES", 4)
    pages = {
        "a.test": [f"kettle {n}" for n in range(5)] + ["filler words"] * 20,
        "b.test": ["zeppelin kettle"],
    }
    query = SearchQuery("", "zeppelin kettle", k=1, host="a.test")
    found, every, statements = await _keyword_and_every_match(sqlite_url, pages, query)
    assert not any(EVERY_MATCH in s or AMONG_FEW in s for s, _ in statements)
    assert [(h.url, h.chunk_index) for h in found] == [(h.url, h.chunk_index) for h in every]
    assert [h.score for h in found] == pytest.approx([h.score for h in every], abs=1e-5)


#: What only the statement that scores every posting of a PostgreSQL keyword search says.
EVERY_POSTING = "WHERE idf.n > 0"


@pytest.mark.usefixtures("small_posting_caps")
@pytest.mark.parametrize(
    ("filters", "k"),
    [
        ({"host": "a.test"}, 1),
        ({"host": "a.test"}, 3),
        ({"url_prefix": "http://b.test/"}, 1),
        ({"host": "c.test"}, 1),
        ({"crawl_id": uuid4()}, 1),
    ],
    ids=["keeps-most", "keeps-most-k3", "keeps-one", "keeps-none", "other-crawl"],
)
async def test_postgresql_a_filtered_keyword_search_ranks_few_where_they_are_enough(
    pgvector_url: str, filters: dict[str, Any], k: int
) -> None:
    """The filters are asked about the chunks the pruned ranking ranks, in its order: where
    they keep ``k``, no other posting is scored (every posting of every word took a quarter of
    a second at 100,000 chunks); where they do not, every posting is. Either way the answer is
    every posting's. The chunks of a.test are the shorter the better; b.test's is in neither
    word's best postings."""
    storage = open_storage(pgvector_url)
    try:
        texts = [f"zeppelin kettle {'word ' * n}" for n in range(6)] + ["kettle filler"] * 20
        far = ["a zeppelin far below the deep blue sea"]
        for host, page in [("a.test", texts), ("b.test", far)]:
            job = await _job(storage, f"http://{host}/")
            await storage.chunks.replace(_page(job, [(t, _unit(1, 0, 0, 0)) for t in page]), "h")
        query = SearchQuery("", "zeppelin kettle", k=k, **filters)
        statements = _record_statements(storage)
        found = await storage.chunks.keyword(query)
        scored_every_posting = any(EVERY_POSTING in statement for statement, _ in statements)
        every = await _every_match(storage, query)
    finally:
        await storage.close()
    assert [(h.url, h.chunk_index) for h in found] == [(h.url, h.chunk_index) for h in every]
    assert [h.score for h in found] == pytest.approx([h.score for h in every])
    assert scored_every_posting == ("a.test" not in filters.values())
    expected = {"a.test": [0, 1, 2][:k], "http://b.test/": [0]}
    assert [h.chunk_index for h in found] == expected.get(next(iter(filters.values())), [])


async def test_postgresql_a_keyword_search_of_one_page_scores_that_page_s_postings(
    pgvector_url: str,
) -> None:
    """A page's chunks are few: a search of one page scores every posting of its words there,
    with no pruned ranking of the owner's best postings first (which would mostly leave the
    page out: that try doubled such a search's time at 100,000 chunks)."""
    storage = open_storage(pgvector_url)
    try:
        page = await _job(storage, "http://a.test/")
        texts = ["a kettle", "zeppelin kettle", "filler"]
        await storage.chunks.replace(_page(page, [(t, _unit(1, 0, 0, 0)) for t in texts]), "h")
        other = await _job(storage, "http://b.test/")
        texts = ["zeppelin kettle"] * 5
        await storage.chunks.replace(_page(other, [(t, _unit(1, 0, 0, 0)) for t in texts]), "h")
        statements = _record_statements(storage)
        found = await storage.chunks.keyword(SearchQuery("", "zeppelin kettle", job_id=page))
    finally:
        await storage.close()
    assert [(h.url, h.chunk_index) for h in found] == [("http://a.test/", 1), ("http://a.test/", 0)]
    assert not [s for s, _ in statements if "ORDER BY t.impact DESC" in s]
    assert [s for s, _ in statements if EVERY_POSTING in s]


async def _keyword_and_every_match(
    url: str, pages: dict[str, list[str]], query: SearchQuery
) -> tuple[list[SearchHit], list[SearchHit], list[tuple[str, tuple[Any, ...]]]]:
    """``query``'s keyword search over a page of each host's texts, the same search ranking
    every match, and the statements the first ran."""
    storage = open_storage(url)
    try:
        for host, texts in pages.items():
            job = await _job(storage, f"http://{host}/")
            await storage.chunks.replace(_page(job, [(t, _unit(1, 0, 0, 0)) for t in texts]), "h")
        statements = _record_statements(storage)
        found = await storage.chunks.keyword(query)
        ran = list(statements)
        return found, await _every_match(storage, query), ran
    finally:
        await storage.close()


@pytest.mark.parametrize("mode", [SearchMode.KEYWORD, SearchMode.SEMANTIC])
async def test_sqlite_a_monitor_s_chunks_are_found_from_its_pages_not_the_owner_s_jobs(
    sqlite_url: str, mode: SearchMode
) -> None:
    """A search filtered by a monitor reads its chunks' ids from the monitor's pages and
    crawls: starting from the owner's jobs, SQLite read every one and each of their chunks'
    rows to tell the monitor's (0.2 s at 100,000 chunks)."""
    storage = open_storage(sqlite_url)
    try:
        monitor = await storage.monitors.create(
            "", MonitorSpec(60, urls=("http://mon.test/watched",)), now=T0, redispatch_after=30
        )
        for job in [monitor.pages[0].job_id, await _job(storage, "http://a.test/other")]:
            await storage.chunks.replace(_page(job, [("bread", _unit(1, 0, 0, 0))]), "h")
        statements = _record_statements(storage)
        query = SearchQuery("", "bread", k=3, monitor_id=monitor.id)
        if mode is SearchMode.KEYWORD:
            found = await storage.chunks.keyword(query)
        else:
            found = await storage.chunks.semantic(query, model=MODEL, vector=_unit(1, 0, 0, 0))
        asked = [(s, p) for s, p in statements if "monitor_pages" in s]
        async with storage.db.read() as conn:
            plans = [
                " ".join(
                    str(row[3]) for row in await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {s}", p)
                )
                for s, p in asked
            ]
    finally:
        await storage.close()
    assert [h.url for h in found] == ["http://mon.test/watched"]
    assert plans and not any("(owner=?)" in plan for plan in plans)
