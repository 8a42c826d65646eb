"""Search latency with filters on a database already filled (SciFact's sentences, as
``bench.retrieval --latency-chunks`` fills it): ``python -m bench.filtered_search DATABASE
[--queries 100]``, DATABASE a SQLite file or a PostgreSQL URL (``postgresql+asyncpg://…``, with
pgvector). For each of :data:`bench.retrieval.LATENCY_FILTERS` (none, one that keeps every page,
one that keeps about a tenth, one a hundredth) and each mode, p50 and p99 of wall and CPU over
the first ``--queries`` train claims, k 10. The CPU is this process's (threads included) and, on a
PostgreSQL server of this machine, its processes' too (the postmaster's children, from /proc).

Fill the database once with ``python -m bench.filtered_search DATABASE --fill 100000`` (a couple
of minutes on SQLite, more on PostgreSQL): pages of ten ~120-word sections under SciFact's
titles, random unit vectors. A PostgreSQL database is filled as ``bench.retrieval`` fills it (its
indexes built after the rows, then ``VACUUM ANALYZE``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from bench.retrieval import (
    CORPUS,
    LATENCY_FILTERS,
    REINDEXED,
    UNINDEXED,
    RandomVectors,
    load,
    run_sql,
    shuffled_pages,
)
from taskcrawler.domain.chunks import SearchMode, SearchQuery
from taskcrawler.embed import Embedder, EmbedderConfig, build_embedder
from taskcrawler.service.search import SearchService
from taskcrawler.storage import Storage, open_storage, upgrade_database
from taskcrawler.storage.postgres.chunks import PostgresChunkStore
from taskcrawler.storage.sqlite import chunks as sqlite_chunks
from taskcrawler.storage.sqlite.chunks import SqliteChunkStore
from tests.support.retrieval import index_pages


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def database_url(database: str) -> str:
    if "://" in database:
        return database
    return f"sqlite+aiosqlite:///{Path(database).resolve()}"


def _stat(pid: int | str) -> list[str]:
    """``/proc/PID/stat``'s fields after the command's name (the third field first)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()


def _children(parent: str) -> list[Path]:
    """The schedstat files of process ``parent``'s children."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):  # ended since
                if _stat(entry.name)[1] == parent:
                    found.append(entry / "schedstat")
    return found


async def server_cpu(storage: Storage) -> Callable[[], float]:
    """A function that gives the CPU seconds the PostgreSQL server's processes used so far (its
    postmaster's children, as they were when it was made: the pool's connections stay), or none
    on SQLite or a server of another machine. Read from /proc/PID/schedstat: nanoseconds."""
    if storage.db.engine.dialect.name != "postgresql":
        return lambda: 0.0
    async with storage.db.read() as conn:
        backend = (await conn.exec_driver_sql("SELECT pg_backend_pid()")).scalar()
    try:
        postmaster = _stat(int(backend or 0))[1]
    except OSError:
        print("the server's processes are not this machine's: client CPU only")
        return lambda: 0.0
    children = _children(postmaster)

    def used() -> float:
        nanoseconds = 0
        for path in children:
            with contextlib.suppress(OSError):
                nanoseconds += int(path.read_text().split()[0])
        return nanoseconds / 1e9

    return used


async def fill(storage: Storage, url: str, count: int) -> None:
    await upgrade_database(url)
    pages = shuffled_pages(load(CORPUS, None, None), count)
    postgresql = storage.db.engine.dialect.name == "postgresql"
    if postgresql:
        await run_sql(storage, UNINDEXED)
    await index_pages(
        storage, RandomVectors(build_embedder(EmbedderConfig()).model), pages, batch=100
    )
    if postgresql:
        await run_sql(storage, REINDEXED)
        async with storage.db.engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("VACUUM ANALYZE")
    print(f"{await storage.chunks.count():,} chunks")


async def _nothing_pruned(*args: Any, **kwargs: Any) -> list[Any]:
    return []


async def _never_few(*args: Any, **kwargs: Any) -> None:
    return None


@contextlib.contextmanager
def every_match_ranked() -> Iterator[None]:
    """The stores' keyword searches rank every match meanwhile (exact BM25: their fallback,
    their pruned ranking made to find nothing, and on SQLite no filter's chunks taken for few
    enough to rank alone)."""
    saved = [(kind, kind._pruned) for kind in (SqliteChunkStore, PostgresChunkStore)]
    among_few = SqliteChunkStore._among_few
    try:
        for kind, _ in saved:
            kind._pruned = _nothing_pruned  # type: ignore[method-assign]
        SqliteChunkStore._among_few = _never_few  # type: ignore[method-assign]
        yield
    finally:
        for kind, pruned in saved:
            kind._pruned = pruned  # type: ignore[method-assign]
        SqliteChunkStore._among_few = among_few  # type: ignore[method-assign]


@contextlib.contextmanager
def every_vector_scored() -> Iterator[None]:
    """SQLite's filtered semantic searches score every vector the filter keeps meanwhile
    (exactly: none is asked about as one of the owner's nearest first)."""
    with patched(sqlite_chunks, FILTERED_NEAREST=0, FILTERED_NEAREST_PER_RESULT=0):
        yield


@contextlib.contextmanager
def patched(module: Any, **values: Any) -> Iterator[None]:
    saved = {name: getattr(module, name) for name in values}
    try:
        for name, value in values.items():
            setattr(module, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


async def agreement(storage: Storage, embedder: Embedder, queries: list[str]) -> None:
    """For each filter, at k 10 and 50 (a hybrid search's legs): how many of the claims'
    filtered keyword searches answer as the one that ranks every match, and their mean
    overlap; on SQLite, how many semantic ones answer as scoring every vector the filter
    keeps does."""
    sqlite = storage.db.engine.dialect.name == "sqlite"
    for name, filters in LATENCY_FILTERS.items():
        if not filters:
            continue
        for k in (10, 50):
            for mode in ("keyword", "semantic") if sqlite else ("keyword",):
                same, overlap = 0, 0
                for text in queries:
                    query = SearchQuery("", text, k=k, **filters)
                    found = await _keys(storage, embedder, query, mode)
                    with every_match_ranked() if mode == "keyword" else every_vector_scored():
                        wanted = await _keys(storage, embedder, query, mode)
                    same += found == wanted
                    overlap += len(set(found) & set(wanted))
                print(
                    f"{name:24} {mode:8} k {k:2}: {same} of {len(queries)} as every"
                    f" {'match' if mode == 'keyword' else 'vector'}'s,"
                    f" overlap {overlap / len(queries):.2f} of {k}"
                )


async def _keys(
    storage: Storage, embedder: Embedder, query: SearchQuery, mode: str
) -> list[tuple[Any, int]]:
    """The (page, chunk) of each hit of ``query``'s keyword or semantic search, best first."""
    if mode == "keyword":
        hits = await storage.chunks.keyword(query)
    else:
        [vector] = await embedder.embed([query.text], purpose="query")
        hits = await storage.chunks.semantic(query, model=embedder.model, vector=vector)
    return [(h.job_id, h.chunk_index) for h in hits]


async def main(args: argparse.Namespace) -> None:
    url = database_url(args.database)
    storage = open_storage(url)
    embedder = build_embedder(EmbedderConfig())
    try:
        if args.fill:
            await fill(storage, url, args.fill)
            return
        data = load(CORPUS, None, None)
        search = SearchService(cast(Any, None), storage.chunks, embedder)
        queries = list(data.queries.values())[: args.queries]
        if args.agreement:
            await agreement(storage, embedder, queries)
            return
        for name, filters in LATENCY_FILTERS.items():
            for mode in SearchMode:
                await search.search(SearchQuery("", queries[0], k=10, mode=mode, **filters))
                served = await server_cpu(storage)
                walls, cpus = [], []
                for text in queries:
                    server = served()
                    wall, cpu = time.perf_counter(), time.process_time()
                    await search.search(SearchQuery("", text, k=10, mode=mode, **filters))
                    walls.append((time.perf_counter() - wall) * 1000)
                    cpu = time.process_time() - cpu
                    cpus.append((cpu + served() - server) * 1000)
                print(
                    f"{name or 'unfiltered':22} {mode.value:8} "
                    f"wall p50 {percentile(walls, 0.5):6.1f} p99 {percentile(walls, 0.99):7.1f} ms"
                    f"  CPU p50 {percentile(cpus, 0.5):6.1f} p99 {percentile(cpus, 0.99):7.1f} ms"
                )
    finally:
        await storage.close()
        await embedder.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", help="a SQLite file or a PostgreSQL URL")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--agreement",
        action="store_true",
        help="how often filtered searches answer as ranking every match (or vector) does",
    )
    parser.add_argument("--fill", type=int, default=0, help="fill the database with N chunks")
    asyncio.run(main(parser.parse_args()))
