"""Search latency with filters on a SQLite database already filled (SciFact's sentences, as
``bench.retrieval --latency-chunks`` fills it): ``python -m bench.filtered_search DATABASE
[--queries 100]``. For each of :data:`bench.retrieval.LATENCY_FILTERS` (none, one that keeps every
page, one that keeps about a tenth) and each mode, p50 and p99 of wall and CPU (this process's,
threads included) over the first ``--queries`` train claims, k 10.

Fill the database once with ``python -m bench.filtered_search DATABASE --fill 100000`` (a couple
of minutes): pages of ten ~120-word sections under SciFact's titles, random unit vectors.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any, cast

from bench.retrieval import CORPUS, LATENCY_FILTERS, RandomVectors, load, shuffled_pages
from taskcrawler.domain.chunks import SearchMode, SearchQuery
from taskcrawler.embed import EmbedderConfig, build_embedder
from taskcrawler.service.search import SearchService
from taskcrawler.storage import open_storage, upgrade_database
from tests.support.retrieval import index_pages


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


async def main(args: argparse.Namespace) -> None:
    url = f"sqlite+aiosqlite:///{args.database.resolve()}"
    data = load(CORPUS, None, None)
    embedder = build_embedder(EmbedderConfig())
    storage = open_storage(url)
    try:
        if args.fill:
            await upgrade_database(url)
            pages = shuffled_pages(data, args.fill)
            await index_pages(storage, RandomVectors(embedder.model), pages, batch=100)
            print(f"{await storage.chunks.count():,} chunks")
            return
        search = SearchService(cast(Any, None), storage.chunks, embedder)
        queries = list(data.queries.values())[: args.queries]
        for name, filters in LATENCY_FILTERS.items():
            for mode in SearchMode:
                await search.search(SearchQuery("", queries[0], k=10, mode=mode, **filters))
                walls, cpus = [], []
                for text in queries:
                    wall, cpu = time.perf_counter(), time.process_time()
                    await search.search(SearchQuery("", text, k=10, mode=mode, **filters))
                    walls.append((time.perf_counter() - wall) * 1000)
                    cpus.append((time.process_time() - cpu) * 1000)
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
    parser.add_argument("database", type=Path)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--fill", type=int, default=0, help="fill the database with N chunks")
    asyncio.run(main(parser.parse_args()))
