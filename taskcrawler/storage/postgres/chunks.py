"""Chunks on PostgreSQL: vectors in pgvector's column with an HNSW index per dimension, words
in term statistics (``chunk_terms``) that keyword search ranks by BM25. Without pgvector,
keyword search still works and vector operations raise :class:`VectorsUnavailable`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.common.lru import LruCache
from taskcrawler.domain.chunks import (
    Reembedded,
    SearchHit,
    SearchQuery,
    bm25_idf,
    query_terms,
    query_weight,
)
from taskcrawler.domain.errors import VectorsUnavailable
from taskcrawler.storage.chunks import ChunkStoreBase, hit
from taskcrawler.storage.database import Database
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.postgres import sql

log = logging.getLogger(__name__)


def vector_text(vector: Sequence[float]) -> str:
    """pgvector's text form: ``[0.1,0.2,…]``."""
    return "[" + ",".join(f"{x:.8g}" for x in vector) + "]"


#: How long an owner's chunk count and mean length (BM25's view of the corpus as a whole) are
#: used before they are counted again: they move slowly, and counting reads every chunk.
CORPUS_STATS_SECONDS = 60.0

#: Up to how old they are still used while a task counts them again: counting reads every
#: chunk of the owner's (420 ms at 100,000 here), which a search should not wait for.
#: Older than this, a search counts them itself.
CORPUS_STATS_STALE_SECONDS = 600.0
#: How long closing the store waits for the corpus counts in flight.
SETTLE_SECONDS = 5.0


#: How many postings of each query term an unfiltered keyword search reads, those of most
#: impact first: what bounds its work on a corpus where some of the query's words are in every
#: other chunk (a rarer term's postings are all read).
POSTINGS_PER_TERM = 1000

#: Up to how many postings of the query's rarest terms an unfiltered keyword search reads in
#: full, beyond :data:`POSTINGS_PER_TERM` of the others: the rare terms weigh most in a score,
#: and a chunk that holds one (however thinly) is then ranked by it. Without it, at 100,000
#: chunks, half the SciFact claims' top 10 were not BM25's over every posting
#: (bench/results/2026-12-07-pg-bm25-agreement.md).
POSTINGS_BUDGET = 15_000

#: Terms whose chunk counts an owner keeps between two counts of its chunks.
CACHED_TERMS = 50_000

#: Owners whose chunk count and mean length are kept (the ones that searched last): an entry
#: is a few numbers, and forgetting one costs a search a count of that owner's chunks, so
#: many more than the tenants that search at once, yet bounded whatever their number.
CACHED_CORPORA = 1024

#: Owners whose terms' chunk counts are kept: each may hold up to :data:`CACHED_TERMS` terms
#: (megabytes), so only the few owners that searched last; one forgotten counts its query's
#: terms again at its next search, as after a write.
CACHED_RARITIES = 16


def rescored(k: int) -> int:
    """How many of the chunks ranked by the postings read are scored exactly before the best
    ``k`` are kept: enough that one missing a term's posting still comes back into the ``k``."""
    return max(200, 4 * k)


def postings_read(terms: Sequence[str], holding: Mapping[str, int]) -> list[int]:
    """How many postings of each of ``terms`` a pruned search reads: every one of the rarest
    while they add up to no more than :data:`POSTINGS_BUDGET`, else :data:`POSTINGS_PER_TERM`
    (a query of common words only reads no list in full: its work stays bounded)."""
    depths = dict.fromkeys(terms, POSTINGS_PER_TERM)
    read = 0
    for term in sorted(terms, key=lambda t: holding[t]):
        if read + holding[term] > POSTINGS_BUDGET:
            break
        depths[term] = max(holding[term], POSTINGS_PER_TERM)
        read += holding[term]
    return [depths[term] for term in terms]


def filtered_candidates(k: int) -> int:
    """How many of the chunks ranked by the postings read a filtered keyword search asks the
    filters about, in the ranking's order, before it scores every posting instead: a filter
    that keeps a tenth of the chunks keeps about :func:`rescored` of them, as many as the
    search without it scores exactly."""
    return 10 * rescored(k)


class PostgresChunkStore(ChunkStoreBase):
    _vectors: bool | None = None

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        # owner -> (when counted, chunks, mean length, newest chunk id)
        self._corpus: LruCache[str, tuple[float, int, float, int]] = LruCache(CACHED_CORPORA)
        # owner -> term -> chunks holding it
        self._rarity: LruCache[str, dict[str, int]] = LruCache(CACHED_RARITIES)
        self._recounts: dict[str, asyncio.Task[None]] = {}  # owner -> its counting task

    @unavailable_on_connection_errors
    async def vectors_available(self) -> bool:
        """Whether this database stores vectors (asked once: installing pgvector later takes
        ``taskcrawler reindex``, which calls :meth:`enable_vectors`, and a restart)."""
        if self._vectors is None:
            async with self.db.read() as conn:
                self._vectors = bool((await conn.exec_driver_sql(sql.HAS_VECTOR_COLUMN)).scalar())
        return self._vectors

    @unavailable_on_connection_errors
    async def enable_vectors(self, dim: int | None = None) -> bool:
        """Create pgvector's extension and column if the server has pgvector (and the HNSW index
        for ``dim``); whether vectors are available now."""
        async with self.db.write() as conn:
            if not (await conn.exec_driver_sql(sql.VECTOR_EXTENSION_AVAILABLE)).scalar():
                return False
            await conn.exec_driver_sql(sql.CREATE_VECTOR_EXTENSION)
            await conn.exec_driver_sql(sql.ADD_VECTOR_COLUMN)
            if dim is not None:
                await conn.exec_driver_sql(sql.hnsw_index(dim))
        self._vectors = True
        return True

    async def _require_vectors(self) -> None:
        if not await self.vectors_available():
            raise VectorsUnavailable(
                "this PostgreSQL has no pgvector: install it, then run `taskcrawler reindex`"
            )

    async def _insert(self, conn: AsyncConnection, rows: Sequence[Mapping[str, Any]]) -> None:
        await self._require_vectors()
        first = rows[0]
        params = (
            first["job_id"],
            first["owner"],
            first["crawl_id"],
            first["model"],
            first["dim"],
            first["source_hash"],
            [row["chunk_index"] for row in rows],
            [row["text"] for row in rows],
            [row["context"] for row in rows],
            [orjson.dumps(row["heading_path"]).decode() for row in rows],
            [row["token_count"] for row in rows],
            [None if row["vector"] is None else vector_text(row["vector"]) for row in rows],
            [row["start_offset"] for row in rows],
            [row["end_offset"] for row in rows],
        )
        await conn.exec_driver_sql(sql.INSERT_CHUNKS, params)

    @unavailable_on_connection_errors
    async def set_embeddings(self, model: str, chunks: Sequence[Reembedded]) -> None:
        if not chunks:
            return
        await self._require_vectors()
        ids = [c.id for c in chunks]
        params = (
            model,
            ids,
            [len(c.vector) for c in chunks],
            [vector_text(c.vector) for c in chunks],
            [c.context for c in chunks],
        )
        async with self.db.write() as conn:
            await conn.exec_driver_sql(sql.DELETE_TERMS, (ids,))
            await conn.exec_driver_sql(sql.SET_EMBEDDINGS, params)

    @unavailable_on_connection_errors
    async def semantic(
        self, query: SearchQuery, *, model: str, vector: Sequence[float]
    ) -> list[SearchHit]:
        await self._require_vectors()
        filters, filter_params = sql.scope(query, 5)
        params = (vector_text(vector), model, query.owner, query.k, *filter_params)
        async with self.db.engine.begin() as conn:
            await conn.exec_driver_sql(sql.iterative_scan(query.k))
            statement = sql.semantic_search(len(vector), filters)
            rows = (await conn.exec_driver_sql(statement, params)).all()
        return [hit(row, row.score) for row in rows]

    @unavailable_on_connection_errors
    async def keyword(self, query: SearchQuery) -> list[SearchHit]:
        terms = query_terms(query.text)
        if not terms:
            return []
        async with self.db.read() as conn:
            count, mean_length = await self._corpus_stats(conn, query.owner)
            if not count:
                return []
            rows: list[Any] = []
            if query.job_id is None:  # one page's chunks are few: its postings are scored
                rows = await self._pruned(conn, query, " ".join(terms), count, mean_length)
            if query.filtered and len(rows) < query.k:
                # The filters left out most of the ranked chunks: every posting is scored.
                filters, filter_params = sql.scope(query, 6)
                params = (" ".join(terms), query.owner, count, mean_length, query.k)
                statement = sql.keyword_search(filters)
                rows = list(await conn.exec_driver_sql(statement, (*params, *filter_params)))
        return [hit(row, row.score) for row in rows]

    async def _pruned(
        self, conn: AsyncConnection, query: SearchQuery, text: str, count: int, mean: float
    ) -> list[Any]:
        """:func:`sql.pruned_keyword_search`, each term's rarity from :meth:`_holding`; with
        filters, they are asked about the ranked chunks' best :func:`filtered_candidates`."""
        lexemes = list((await conn.exec_driver_sql(sql.QUERY_LEXEMES, (text,))).scalars())
        holding = await self._holding(conn, query.owner, lexemes)
        held = [term for term in lexemes if holding.get(term)]
        if not held:
            return []
        # The counts of chunks and of a term's are read apart: a page stored between the two
        # may have a term held by more chunks than were counted.
        count = max(count, *holding.values())
        idfs = [bm25_idf(count, holding[term]) for term in held]
        weight = query_weight(bm25_idf(count, holding.get(term, 0)) for term in lexemes)
        params = (held, idfs, weight, query.owner, query.k)
        extra: tuple[Any, ...] = (postings_read(held, holding), rescored(query.k), mean)
        filters, filter_params = sql.scope(query, 10)
        if filters:
            extra = (*extra, filtered_candidates(query.k), *filter_params)
        statement = sql.pruned_keyword_search(filters)
        return list(await conn.exec_driver_sql(statement, (*params, *extra)))

    async def _holding(self, conn: AsyncConnection, owner: str, terms: list[str]) -> dict[str, int]:
        """How many of ``owner``'s chunks hold each of ``terms``: counted again with the
        owner's chunks (:data:`CORPUS_STATS_SECONDS`), a term held by none every time (a page
        written since may hold it). Counting a common term reads tens of thousands of index
        entries; the same few hundred common words recur in most queries."""
        kept = self._rarity.get(owner)
        if kept is None:
            kept = {}
            self._rarity.set(owner, kept)
        if len(kept) > CACHED_TERMS:  # before the missing terms are found: then all are
            kept.clear()
        # This search's own: another may forget the kept counts while this one awaits.
        known = {term: kept[term] for term in terms if kept.get(term)}
        missing = [term for term in terms if term not in known]
        if missing:
            rows = await conn.exec_driver_sql(sql.TERM_COUNTS, (owner, missing))
            counted = {row.term: int(row.n) for row in rows}
            kept.update(counted)
            known.update(counted)
        return {term: known.get(term, 0) for term in terms}

    async def _corpus_stats(self, conn: AsyncConnection, owner: str) -> tuple[int, float]:
        """``owner``'s chunk count and mean length: counted at most every
        :data:`CORPUS_STATS_SECONDS` (an owner with no chunks yet, every time); once older, used
        while a task counts them again, up to :data:`CORPUS_STATS_STALE_SECONDS`."""
        cached = self._corpus.get(owner)
        if cached is not None:
            age = time.monotonic() - cached[0]
            if age >= CORPUS_STATS_SECONDS and age < CORPUS_STATS_STALE_SECONDS:
                self._recount_later(owner)
            if age < CORPUS_STATS_STALE_SECONDS:
                return cached[1], cached[2]
        return await self._count_corpus(conn, owner)

    async def _count_corpus(self, conn: AsyncConnection, owner: str) -> tuple[int, float]:
        """Count ``owner``'s chunks; its terms' counts are forgotten only if its chunks changed
        (their count, mean length or newest id moved): counting a query's terms anew is what
        made the searches after each count the slowest."""
        row = (await conn.exec_driver_sql(sql.CORPUS_STATS, (owner,))).one()
        count, mean, newest = int(row.n), max(1.0, float(row.mean)), int(row.newest)
        if count:
            before = self._corpus.get(owner)
            self._corpus.set(owner, (time.monotonic(), count, mean, newest))
            if before is None or before[1:] != (count, mean, newest):
                self._rarity.pop(owner)
        return count, mean

    async def settle(self) -> None:
        """Wait for the corpus counts in flight (each catches its own failure), for
        :data:`SETTLE_SECONDS` at most: a count still running then is cancelled (and waited for
        as long again to end), as a database that does not answer must not hold up a shutdown."""
        try:
            async with asyncio.timeout(SETTLE_SECONDS):
                while self._recounts:
                    # Not gather: a gather cancelled at the deadline waits for its tasks to end.
                    await asyncio.wait(list(self._recounts.values()))
        except TimeoutError:
            stuck = list(self._recounts.values())
            for task in stuck:
                task.cancel()
            # A cancelled count ends at its next await; waiting for that end keeps it from
            # touching the engine the caller closes next. Its ending can wait on the database
            # too (its connection's rollback), so that wait is bounded as the count's was.
            if stuck:
                await asyncio.wait(stuck, timeout=SETTLE_SECONDS)
            log.warning("a corpus count still running at close was cancelled")

    def _recount_later(self, owner: str) -> None:
        if owner in self._recounts:
            return
        task = asyncio.create_task(self._recount(owner))
        self._recounts[owner] = task
        task.add_done_callback(lambda _: self._recounts.pop(owner, None))

    async def _recount(self, owner: str) -> None:
        try:
            async with self.db.read() as conn:
                await self._count_corpus(conn, owner)
        except Exception as exc:  # the counts stay as they were; a later search tries again
            log.warning("counting the chunks for BM25 failed: %s", exc)
