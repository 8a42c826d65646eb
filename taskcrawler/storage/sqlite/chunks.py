"""Chunks on SQLite: vectors as float32 BLOBs searched in memory with numpy, keywords with FTS5.

numpy is imported by the first semantic search, not with storage: a process that never
searches does not pay for it. It is imported in a thread: its half a second of imports would
hold the event loop of the API that serves that search.
"""

from __future__ import annotations

import asyncio
import importlib
import math
import sys
import time
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.common.lru import LruCache
from taskcrawler.domain.chunks import (
    Ranked,
    Reembedded,
    SearchHit,
    SearchQuery,
    bm25_idf,
    bm25_idf_floored,
    query_terms,
    query_weight,
)
from taskcrawler.storage.chunks import ChunkStoreBase, hit, narrowing, read_hits, scope
from taskcrawler.storage.errors import unavailable_on_connection_errors
from taskcrawler.storage.sqlite import sql
from taskcrawler.storage.sqlite.vectors import (
    VectorIndex,
    extended,
    kept,
    nearest,
    nearest_among,
    nearest_exactly,
)
from taskcrawler.storage.tables import chunks, jobs

if TYPE_CHECKING:
    from taskcrawler.storage.database import Database


async def numpy() -> Any:
    """The numpy module, imported off the event loop the first time."""
    found = sys.modules.get("numpy")
    return found if found is not None else await asyncio.to_thread(importlib.import_module, "numpy")


def float32(vector: Sequence[float]) -> bytes:
    return array("f", vector).tobytes()


#: How long the number of chunks (BM25's corpus size) is used before it is counted again: it
#: moves slowly, and counting reads an index of every chunk.
CHUNK_COUNT_SECONDS = 60.0

#: How many of FTS5's best matches an unfiltered keyword search joins to their chunks (at
#: least four times ``k``) before it falls back to joining every match (when other owners'
#: chunks crowd the caller's out).
KEYWORD_CANDIDATES = 200

#: How many of FTS5's best matches a filtered keyword search asks the filters about before it
#: falls back to ranking every match: a filter that keeps a tenth of the chunks keeps about a
#: hundred of them, a hybrid search's keyword leg asks for 50.
FILTERED_KEYWORD_CANDIDATES = 1000

#: Up to how many chunks a filter keeps for a keyword search to rank every match among them
#: alone, before any other: a filter that keeps a hundredth of 100,000 chunks has too few
#: among the best matches of the index (those the pruned ranking asks it about), and ranking
#: every match of the index, each told its filters, took a quarter of a second; among its
#: chunks, a tenth of that. Reading the ids of more would cost a search of a filter that
#: keeps most of the chunks, which the pruned ranking answers.
RANKED_ALONE = 2000

#: Up to how many chunks a filter keeps for a keyword search whose pruned ranking found fewer
#: than ``k`` to rank every match among them (their ids read, 20-30 ms at 10,000), rather
#: than every match of the index told its filters (whose cost grows with the matches).
RANKED_AMONG = 20_000

#: How many postings of a query's rarer terms an unfiltered keyword search has FTS5 score:
#: what bounds its work where some of the query's words are in every other chunk (FTS5 scores
#: every chunk an OR of the query's words matches).
POSTINGS_BUDGET = 5000

#: Terms whose chunk counts are kept between two counts of the index.
CACHED_TERMS = 50_000

#: Vector matrices kept in memory, by (owner, model, dimensions): reading 10,000 BLOBs through
#: the driver took ten times as long as searching them.
CACHED_MATRICES = 4

#: Up to how many chunks a filtered semantic search reads the vectors of for itself (2 MB at
#: 256 dimensions); a filter that keeps more searches among their ids in the owner's matrix,
#: kept in memory, rather than read them for each search (100 MB at 100,000 chunks).
LOADED_ALONE = 2000

#: How many of the caller's nearest chunks a filtered semantic search that keeps more asks
#: the filters about, and at least how many per result asked for: a filter that keeps a tenth
#: of the chunks keeps about a hundred of them.
FILTERED_NEAREST = 1000
FILTERED_NEAREST_PER_RESULT = 20


class SqliteChunkStore(ChunkStoreBase):
    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._indexes: LruCache[tuple[str, str, int], _Matrix] = LruCache(CACHED_MATRICES)
        # (when counted, chunks, chunks_version then)
        self._counted: tuple[float, int, int] = (-math.inf, 0, -1)
        self._sole_owner: str | None = None  # whose every chunk was, when counted (if one's)
        self._rarity: dict[str, int] = {}  # term -> chunks holding it, when counted

    async def vectors_available(self) -> bool:
        return True

    async def enable_vectors(self, dim: int | None = None) -> bool:
        return True

    async def _insert(self, conn: AsyncConnection, rows: Sequence[Mapping[str, Any]]) -> None:
        values = [
            {key: value for key, value in row.items() if key != "vector"}
            | {"embedding": None if row["vector"] is None else float32(row["vector"])}
            for row in rows
        ]
        await conn.execute(chunks.insert(), values)

    @unavailable_on_connection_errors
    async def set_embeddings(self, model: str, chunks_: Sequence[Reembedded]) -> None:
        if not chunks_:
            return
        stmt = (
            chunks.update()
            .where(chunks.c.id == sa.bindparam("b_id"))
            .values(
                model=model,
                dim=sa.bindparam("b_dim"),
                embedding=sa.bindparam("b_vector"),
                context=sa.bindparam("b_context"),
            )
        )
        params = [
            {
                "b_id": c.id,
                "b_dim": len(c.vector),
                "b_vector": float32(c.vector),
                "b_context": c.context,
            }
            for c in chunks_
        ]
        async with self.db.write() as conn:
            await conn.execute(stmt, params)
        # Vectors changed in place (their ids did not): no cached matrix holds them now.
        self._indexes.clear()

    @unavailable_on_connection_errors
    async def semantic(
        self, query: SearchQuery, *, model: str, vector: Sequence[float]
    ) -> list[SearchHit]:
        async with self.db.read() as conn:
            found = await self._nearest(conn, query, model, vector)
            read = await read_hits(conn, [chunk_id for chunk_id, _ in found]) if found else {}
        return [replace(read[i], score=score) for i, score in found if i in read]

    @unavailable_on_connection_errors
    async def semantic_ranking(
        self, query: SearchQuery, *, model: str, vector: Sequence[float]
    ) -> list[Ranked]:
        """:meth:`semantic`'s chunks keyed by id, not read."""
        async with self.db.read() as conn:
            found = await self._nearest(conn, query, model, vector)
        return [Ranked(chunk_id, score) for chunk_id, score in found]

    async def _nearest(
        self, conn: AsyncConnection, query: SearchQuery, model: str, vector: Sequence[float]
    ) -> list[tuple[int, float]]:
        """Every vector of the caller's (of the crawl's, the page's) for this model, exactly
        or, over a large matrix, by sign first (:mod:`.vectors`), scored in a worker thread:
        the ``query.k`` nearest chunks' ids and cosines. The caller's whole matrix is kept in
        memory while its chunks do not change (:meth:`_filtered` for a filtered search)."""
        np = await numpy()
        target = np.asarray(vector, np.float32)
        if query.filtered:
            return await self._filtered(conn, query, model, target)
        index = await self._index(conn, (query.owner, model, len(vector)))
        return await asyncio.to_thread(nearest, np, index, target, query.k)

    async def _filtered(
        self, conn: AsyncConnection, query: SearchQuery, model: str, target: Any
    ) -> list[tuple[int, float]]:
        """:meth:`_nearest` of the chunks the query's filters keep. A filter that keeps a few
        (up to :data:`LOADED_ALONE`) has their vectors read for this search alone. Of more, the
        caller's nearest :data:`FILTERED_NEAREST` (every vector scored: exactly) are asked which
        the filters keep (by id): where ``k`` are, they are the answer, as a nearer chunk the
        filters keep would be among them; else the filters' every chunk is searched among
        (reading their ids, a tenth of a second at 100,000). A search's memory is bounded either
        way, whatever the filter keeps."""
        np = await numpy()
        filters = narrowing(query)
        conditions = [owner_of_jobs(query), *filters]
        dim = len(target)
        few = await _ids(conn, conditions, limit=LOADED_ALONE + 1)
        if len(few) <= LOADED_ALONE:
            if not len(few):
                return []
            kept = sa.and_(
                sql.among_ids(json_ids(few)), chunks.c.model == model, chunks.c.dim == dim
            )
            alone = VectorIndex(*await _load(conn, kept, dim), signs=None)
            return await asyncio.to_thread(nearest, np, alone, target, query.k)
        index = await self._index(conn, (query.owner, model, dim))
        depth = max(FILTERED_NEAREST, FILTERED_NEAREST_PER_RESULT * query.k)
        nearest_ones = await asyncio.to_thread(nearest_exactly, np, index, target, depth)
        asked = sql.among_ids(json_ids([chunk for chunk, _ in nearest_ones]))
        passing = set((await _ids(conn, [asked, *filters])).tolist())
        found = [(chunk, score) for chunk, score in nearest_ones if chunk in passing]
        if len(found) >= query.k or len(nearest_ones) < depth:
            return found[: query.k]
        every = await _ids(conn, conditions)
        return await asyncio.to_thread(nearest_among, np, index, target, query.k, every)

    async def _index(self, conn: AsyncConnection, key: tuple[str, str, int]) -> VectorIndex:
        """The vectors of the owner's chunks of a model and dimension (``key``), from memory
        while no chunk has been written since they were read (``chunks_version``, which every
        write moves: reading it costs nothing). Where chunks were only inserted and deleted
        since, the owner's new vectors are read and its deleted ones dropped (counting its ids
        reads its index only); an update anywhere has them all read again."""
        version = (await conn.execute(sql.CHUNKS_VERSION)).scalar_one()
        cached = self._indexes.get(key)
        if cached is not None and cached.writes[0] == version:
            return cached.index
        writes = tuple((await conn.execute(sql.CHUNK_WRITES)).one())
        if cached is None or not inserts_and_deletes_only(cached.writes, writes):
            cached = _Matrix(writes, 0, (0, 0), VectorIndex.empty(await numpy(), key[2]))
        cached = await self._synced(conn, key, writes, cached)
        self._indexes.set(key, cached)
        return cached.index

    async def _synced(
        self,
        conn: AsyncConnection,
        key: tuple[str, str, int],
        writes: tuple[int, ...],
        cached: _Matrix,
    ) -> _Matrix:
        """``cached`` brought up to ``writes``, chunks having been inserted and deleted only
        since: if the owner's chunks up to the newest id it holds are no longer those it holds
        (their count and ids' sum), the ones gone dropped; the owner's chunks of higher ids
        appended."""
        np = await numpy()
        owner, model, dim = key
        index, figures = cached.index, cached.figures
        if cached.newest:
            now = (await conn.execute(sql.owner_id_figures(owner, model, cached.newest))).one()
            if (int(now[0]), int(now[1])) != figures:
                stmt = sql.owner_ids(owner, model, cached.newest)
                ids = (await conn.execute(stmt)).scalars().all()
                present = np.fromiter(ids, dtype=np.int64, count=len(ids))
                index = await asyncio.to_thread(kept, np, index, present)
                figures = (len(ids), int(present.sum()))
        rows = (await conn.execute(sql.owner_vectors(owner, model, cached.newest))).all()
        if not rows:
            return _Matrix(writes, cached.newest, figures, index)
        figures = (figures[0] + len(rows), figures[1] + sum(row.id for row in rows))
        ids, matrix = _matrix(np, [row for row in rows if row.dim == dim], dim)
        index = await asyncio.to_thread(extended, np, index, ids, matrix)
        return _Matrix(writes, rows[-1].id, figures, index)

    @unavailable_on_connection_errors
    async def keyword(self, query: SearchQuery) -> list[SearchHit]:
        found = await self._keyword(query, read=True)
        return [hit(row, score) for row, score in found]

    @unavailable_on_connection_errors
    async def keyword_ranking(self, query: SearchQuery) -> list[Ranked]:
        """:meth:`keyword`'s chunks keyed by id, not read."""
        found = await self._keyword(query, read=False)
        return [Ranked(row.id, score) for row, score in found]

    async def _keyword(self, query: SearchQuery, *, read: bool) -> list[tuple[Any, float]]:
        """The best ``query.k`` chunks' rows (what a search answers where ``read``, else their
        ``id``) and scores."""
        terms = query_terms(query.text)
        if not terms:
            return []
        async with self.db.read() as conn:
            total, holding = await self._holding(conn, terms)
            present = [term for term in terms if holding[term]]
            if not present:
                return []
            weight = query_weight(bm25_idf(max(total, n), n) for n in holding.values())
            rows = await self._ranked(conn, query, present, holding, total, read=read)
        return [(row, (row.score if read else -row.rank) / weight) for row in rows]

    async def _ranked(
        self,
        conn: AsyncConnection,
        query: SearchQuery,
        terms: list[str],
        holding: Mapping[str, int],
        total: int,
        *,
        read: bool,
    ) -> list[Any]:
        """The best ``query.k`` rows of :meth:`_keyword`, ranked every match's way. A filter
        that keeps a few chunks (up to :data:`RANKED_ALONE`) has every match among them ranked:
        few of them are among the best matches of the whole index, which the pruned ranking
        asks the filter about. Where the pruned ranking finds fewer than ``k`` (other owners'
        chunks, or those a filter leaves out, crowded the caller's out), every match is ranked:
        among the filter's chunks where it keeps up to :data:`RANKED_AMONG`, else every match
        of the index, each told its owner and filters."""
        if query.filtered:
            among = await self._among_few(conn, query, terms, RANKED_ALONE, read=read)
            if among is not None:
                return among
        rows = await self._pruned(conn, query, terms, holding, total, read=read)
        if len(rows) >= query.k:
            return rows
        if query.filtered:
            among = await self._among_few(conn, query, terms, RANKED_AMONG, read=read)
            if among is not None:
                return among
        ranking = sql.keyword_ranking(scope(query), fts_match(terms), query.k)
        stmt = sql.hits_of(ranking.subquery("ranked")) if read else ranking
        return list(await conn.execute(stmt))

    async def _among_few(
        self, conn: AsyncConnection, query: SearchQuery, terms: list[str], most: int, *, read: bool
    ) -> list[Any] | None:
        """Every match of ``terms`` among the chunks the query's filters keep, ranked: the best
        ``query.k`` (rows as :meth:`_pruned`'s); None where the filters keep more than ``most``
        (their ids read up to one more)."""
        kept = await _ids(conn, [owner_of_jobs(query), *narrowing(query)], limit=most + 1)
        if len(kept) > most:
            return None
        if not len(kept):
            return []
        params = {"match": fts_match(terms), "chunk_ids": json_ids(kept).decode(), "k": query.k}
        stmt = sql.KEYWORD_SEARCH_AMONG if read else sql.KEYWORD_RANKING_AMONG
        return list(await conn.execute(stmt, params))

    async def _pruned(
        self,
        conn: AsyncConnection,
        query: SearchQuery,
        terms: list[str],
        holding: Mapping[str, int],
        total: int,
        *,
        read: bool,
    ) -> list[Any]:
        """The best ``query.k`` of the caller's chunks, FTS5 reading no more than about
        :data:`POSTINGS_BUDGET` postings of the query's rarer terms (each term's rarity it
        counts from its whole posting list, which is a cheap loop; scoring is not).

        The chunks that hold a rare term are ranked twice: by the rare terms alone, and, those
        that hold a common one too, by every term (an AND, which FTS5 answers by skipping
        through the common terms' lists). Either way a chunk's score is its BM25 (to the few
        millionths below): one that holds no common term scores nothing for them. Chunks
        holding common terms only are left out: each of their terms is one that thousands of
        chunks hold.

        The AND leaves out the common terms that half the chunks or more hold: FTS5's BM25
        gives them the floor's rarity (a chunk's score moves by a few millionths at most for
        each), yet reads their whole posting lists to learn it, which was most of the AND's
        work. A chunk that holds the rare terms and only such common ones is ranked by the rare
        terms alone. Which terms those are is judged from the store's counts (``total`` and
        ``holding``, taken within the same :data:`CHUNK_COUNT_SECONDS`): a term the index
        outgrew meanwhile is one held by nearly half the chunks, whose rarity is near the floor.

        The rare terms hold at least ``k`` postings, past the budget if need be: ranked by a
        rare word in fewer chunks than ``k``, the search found fewer than ``k`` and ranked every
        match of every word instead (a tenth of a second or more at 100,000 chunks)."""
        # A filter leaves some of the ranked out: its rare terms hold as many as it asks about.
        depth = self._candidates(query)
        at_least = depth if query.filtered else query.k
        rare, common = split_by_rarity(terms, holding, POSTINGS_BUDGET, at_least)
        common = [term for term in common if not bm25_idf_floored(total, holding[term])]
        matches = [fts_match(rare)]
        if common:
            matches.append(f"({fts_match(rare)}) AND ({fts_match(common)})")
        params: dict[str, str | int] = {f"m{n}": match for n, match in enumerate(matches)}
        params |= {"owner": query.owner, "depth": depth}
        if query.filtered:  # built for this search: a filter's values are in the statement
            built = sql.filtered_keyword_ranking(len(matches), narrowing(query))
            built = sql.hits_of(built.subquery("kept")) if read else built
        else:
            built = (sql.pruned_keyword_search if read else sql.pruned_keyword_ranking)(
                len(matches)
            )
        return list(await conn.execute(built, params | {"k": query.k}))

    def _candidates(self, query: SearchQuery) -> int:
        """How many of FTS5's best matches the pruned search tells the owner of: ``k`` where
        every chunk was the caller's when last counted (other owners' cannot crowd the
        caller's out; one written since, if among the ``k`` best, has every match read, as
        any crowding does), else :data:`KEYWORD_CANDIDATES` and at least four times ``k``; for a
        filtered search, :data:`FILTERED_KEYWORD_CANDIDATES` (the filters leave some out).
        Telling a chunk's owner reads its row, and ranking deeper sorts more: 1-2 ms a
        search at 100,000 chunks."""
        if query.filtered:
            return max(FILTERED_KEYWORD_CANDIDATES, 4 * query.k)
        if query.owner == self._sole_owner:
            return query.k
        return max(KEYWORD_CANDIDATES, 4 * query.k)

    async def _holding(self, conn: AsyncConnection, terms: list[str]) -> tuple[int, dict[str, int]]:
        """The chunks in the index and how many hold each of ``terms``: counted at most every
        :data:`CHUNK_COUNT_SECONDS`, and the terms again only if ``chunks_version`` moved
        meanwhile (a term no chunk held, every time: a page written since may hold it)."""
        now = time.monotonic()
        if now - self._counted[0] >= CHUNK_COUNT_SECONDS or len(self._rarity) > CACHED_TERMS:
            version, total, first_owner, last_owner = (await conn.execute(sql.CORPUS_FIGURES)).one()
            self._sole_owner = first_owner if first_owner == last_owner else None
            # Counted again only where a chunk was written since: counting a query's terms
            # anew is what made the queries after each expiry the slowest.
            if version != self._counted[2] or len(self._rarity) > CACHED_TERMS:
                self._rarity.clear()
            self._counted = (now, int(total), int(version))
        # Read into a dict of this search's own: another search may forget every kept count
        # while this one awaits its missing terms' counts.
        known = {term: self._rarity[term] for term in terms if self._rarity.get(term)}
        missing = [term for term in terms if term not in known]
        if missing:
            counts = (await conn.execute(sql.holding(missing))).one()
            known.update(zip(missing, (int(n) for n in counts), strict=True))
            # A term no chunk holds is counted again each time: kept, it would only fill the
            # cache (a client's made-up words emptying it for every search).
            self._rarity.update((term, known[term]) for term in missing if known[term])
        return self._counted[1], {term: known[term] for term in terms}


@dataclass(frozen=True, slots=True)
class _Matrix:
    """An owner's vectors of a model in memory: read as of ``writes`` (:data:`sql.CHUNK_WRITES`),
    none of ids above ``newest``; ``figures``, the count and sum of the owner's ids of the model
    up to ``newest`` as they stood (every dimension's, as the owner's index counts them)."""

    writes: tuple[int, ...]
    newest: int
    figures: tuple[int, int]
    index: VectorIndex


def fts_match(terms: Sequence[str]) -> str:
    """An FTS5 query for chunks holding any of ``terms`` (each quoted: a word, never syntax)."""
    return " OR ".join(f'"{term}"' for term in terms)


def split_by_rarity(
    terms: Sequence[str], holding: Mapping[str, int], budget: int, at_least: int = 1
) -> tuple[list[str], list[str]]:
    """``terms`` (every one held by some chunk) as the rarest, whose postings add up to no more
    than ``budget`` or, where fewer than ``at_least`` postings, up to the first rarer terms
    that hold that many; and the rest."""
    rare: list[str] = []
    postings = 0
    for term in sorted(terms, key=lambda t: holding[t]):
        if postings >= at_least and postings + holding[term] > budget:
            break
        rare.append(term)
        postings += holding[term]
    return rare, [term for term in terms if term not in rare]


def owner_of_jobs(query: SearchQuery) -> sa.ColumnElement[bool]:
    """The caller's jobs, for :func:`_ids`. Where a filter names a monitor, a crawl or a page,
    the owner is compared row by row (``+owner``), so that SQLite starts from the filter's own
    index: as an indexed condition, it had a monitor's chunks found among every job of the
    owner's and each of their chunks' rows (0.2 s at 100,000 chunks)."""
    if query.monitor_id is None and query.crawl_id is None and query.job_id is None:
        return jobs.c.owner == query.owner
    return sa.literal_column("+jobs.owner", sa.String()) == query.owner


async def _ids(conn: AsyncConnection, conditions: list[Any], limit: int | None = None) -> Any:
    """The ids of the chunks ``conditions`` keep (int64, ascending), of any model: the owner's
    matrix of one model holds those it searches. The conditions name the owner by its jobs',
    so that SQLite reads the chunks' ids from their (job_id) index, and none of their rows
    (each holds its text and vector: read, the ids of 100,000 took a quarter of a second)."""
    np = await numpy()
    statement = (
        sa.select(chunks.c.id)
        .select_from(chunks.join(jobs, jobs.c.id == chunks.c.job_id))
        .where(*conditions)
        .limit(limit)
    )
    ids = (await conn.execute(statement)).scalars().all()
    return np.sort(np.fromiter(ids, dtype=np.int64, count=len(ids)))


def json_ids(ids: Any) -> bytes:
    """Chunk ids (ints, or an int64 array) as a JSON array, for :func:`sql.among_ids`."""
    return orjson.dumps(ids, option=orjson.OPT_SERIALIZE_NUMPY)


async def _load(conn: AsyncConnection, condition: Any, dim: int) -> tuple[Any, Any]:
    """The ids and vectors of the chunks ``condition`` keeps, by id."""
    np = await numpy()
    statement = sa.select(chunks.c.id, chunks.c.embedding).where(condition).order_by(chunks.c.id)
    return _matrix(np, (await conn.execute(statement)).all(), dim)


def _matrix(np: Any, rows: Sequence[Any], dim: int) -> tuple[Any, Any]:
    """Rows of ``id`` and ``embedding`` (float32 BLOBs of ``dim``) as ids and a matrix."""
    ids = np.fromiter((row.id for row in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(row.embedding for row in rows), dtype=np.float32)
    return ids, matrix.reshape(len(rows), dim)


def inserts_and_deletes_only(before: Sequence[int], now: Sequence[int]) -> bool:
    """Whether ``chunks`` saw inserts and deletes only between two readings of
    :data:`sql.CHUNK_WRITES` (version, ids given, chunks): an update moves the version
    without moving the other two."""
    inserted = now[1] - before[1]
    deleted = inserted - (now[2] - before[2])
    return inserted >= 0 and deleted >= 0 and now[0] - before[0] == inserted + deleted
