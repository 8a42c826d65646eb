"""Search CPU per query on a SQLite database already filled, two store versions alternated
query by query: ``python -m bench.search_ab DATABASE [--ref main] [--claims 400]``.

A is the SQLite chunk store of git ref ``--ref`` (its ``storage/sqlite/chunks.py`` and ``sql.py``,
loaded from ``git show``), B this checkout's; each has its own connections to the same file; both
are asked through this checkout's search service (a ref whose store lacks the rankings it asks a
hybrid search's legs for answers them from ``ChunkStoreBase``: the chunks read with each ranking, as
that ref's hybrid search read them). The SciFact train claims are asked in each mode (k 10; one
warm-up search per mode and variant), A then B, then B then A, and so on. Per search: wall time, and
the CPU of every thread of this process and of its children (the embedder's process): the sum of
``/proc/PID/task/*/schedstat``, in nanoseconds. Prints p50 / p95 / p99 / max per mode and variant,
the load average at the start and the end, and how many top 10s (chunks, and scores to 9 decimals)
the two gave alike; with ``--exact HOST``, how often each variant's keyword ranking (a keyword
search's top 10, a hybrid search's keyword leg of 50) is every match's.

Build the database with ``bench.retrieval``'s ``shuffled_pages`` and ``index_pages`` (as its
``--latency-chunks`` does), at the schema this checkout migrates to.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import time
import types
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from bench.measure import descendants
from bench.retrieval import CORPUS, load
from taskcrawler.domain.chunks import FUSION_DEPTH, SearchHit, SearchMode, SearchQuery
from taskcrawler.embed import EmbedderConfig, build_embedder
from taskcrawler.service.search import HYBRID_DEPTH_FACTOR, SearchService
from taskcrawler.storage import open_storage, upgrade_database
from tests.support.processes import REPO_ROOT


def thread_cpu_ns(pid: int) -> int:
    """CPU of every thread of ``pid`` (living ones), from the scheduler's statistics."""
    total = 0
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                total += int((task / "schedstat").read_text().split()[0])
    return total


def cpu_ns() -> int:
    """CPU of every thread of this process and of its descendants."""
    me = os.getpid()
    return sum(thread_cpu_ns(pid) for pid in [me, *descendants(me)])


def module_of(ref: str, path: str, name: str, replace: dict[str, str]) -> types.ModuleType:
    """The module at ``path`` as git ref ``ref`` has it, named ``name``, its source's ``replace``
    keys replaced by their values (to import another ref's module)."""
    source = subprocess.run(
        ["git", "show", f"{ref}:{path}"], cwd=REPO_ROOT, check=True, capture_output=True, text=True
    ).stdout
    for old, new in replace.items():
        source = source.replace(old, new)
    module = types.ModuleType(name)
    module.__file__ = f"{ref}:{path}"
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def store_class_of(ref: str) -> type[Any]:
    """``ref``'s ``SqliteChunkStore``, with ``ref``'s ``sql`` module."""
    sql = module_of(ref, "taskcrawler/storage/sqlite/sql.py", "_ab_ref_sql", {})
    chunks = module_of(
        ref,
        "taskcrawler/storage/sqlite/chunks.py",
        "_ab_ref_chunks",
        {"from taskcrawler.storage.sqlite import sql\n": "import _ab_ref_sql as sql\n"},
    )
    assert sql.__name__ in sys.modules
    return cast(type[Any], chunks.SqliteChunkStore)


def top(hits: list[SearchHit]) -> list[tuple[str, int, str]]:
    return [(str(hit.job_id), hit.chunk_index, f"{hit.score:.9f}") for hit in hits]


def agreement(hits: list[SearchHit], exact: list[SearchHit]) -> tuple[int, int]:
    """Whether ``hits`` are the chunks of ``exact`` in its order (1 or 0), and how many of
    them they hold."""
    found, wanted = (
        [(h.job_id, h.chunk_index) for h in hits],
        [(h.job_id, h.chunk_index) for h in exact],
    )
    return int(found == wanted), len(set(found) & set(wanted))


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    at = [ordered[min(len(ordered) - 1, len(ordered) * p // 100)] for p in (50, 95, 99)]
    return " / ".join(f"{value:.1f}" for value in [*at, ordered[-1]])


async def timed(search: SearchService, query: SearchQuery) -> tuple[float, float, list[SearchHit]]:
    cpu, wall = cpu_ns(), time.perf_counter()
    hits = await search.search(query)
    return (cpu_ns() - cpu) / 1e6, (time.perf_counter() - wall) * 1000, hits


def leg_depth(mode: SearchMode) -> int:
    """How deep the keyword ranking compared with every match's is: a hybrid search's keyword
    leg for a k of 10, else the 10 a keyword search answers."""
    return max(FUSION_DEPTH, HYBRID_DEPTH_FACTOR * 10) if mode is SearchMode.HYBRID else 10


async def compare_with_every_match(
    searches: dict[str, SearchService],
    found: dict[str, list[SearchHit]],
    query: SearchQuery,
    host: str,
    exactly: dict[str, list[int]],
) -> None:
    """Count, per variant, whether its keyword ranking (a keyword search's top 10, a hybrid
    search's keyword leg) is every match's (a filter by ``host`` that keeps every page), and
    how many chunks of it it holds."""
    depth = leg_depth(query.mode)
    keyword = replace(query, k=depth, mode=SearchMode.KEYWORD)
    every = await searches["B"].search(replace(keyword, host=host))
    for variant in "AB":
        ranked = found[variant]
        if query.mode is SearchMode.HYBRID:
            ranked = await searches[variant].chunks.keyword(keyword)
        same, overlap = agreement(ranked, every)
        exactly[variant][0] += same
        exactly[variant][1] += overlap


async def main(args: argparse.Namespace) -> None:
    url = f"sqlite+aiosqlite:///{args.database}"
    await upgrade_database(url)
    claims = list(load(args.corpus).queries.values())[: args.claims]
    embedder = build_embedder(EmbedderConfig())
    stores = {"A": open_storage(url), "B": open_storage(url)}
    ref_store = store_class_of(args.ref)(stores["A"].db)
    searches = {
        "A": SearchService(cast(Any, None), ref_store, embedder),
        "B": SearchService(cast(Any, None), stores["B"].chunks, embedder),
    }
    print(f"A = {args.ref}, B = this checkout; {len(claims)} claims; load {os.getloadavg()[0]:.1f}")
    try:
        for mode in [SearchMode(m) for m in args.modes.split(",")]:
            cpu: dict[str, list[float]] = {"A": [], "B": []}
            wall: dict[str, list[float]] = {"A": [], "B": []}
            alike = 0
            exactly = {"A": [0, 0], "B": [0, 0]}  # top 10s the same as every match's; overlap
            for variant in "AB":
                await searches[variant].search(SearchQuery("", claims[0], k=10, mode=mode))
            for n, text in enumerate(claims):
                query = SearchQuery("", text, k=10, mode=mode)
                found: dict[str, list[SearchHit]] = {}
                for variant in "AB" if n % 2 == 0 else "BA":
                    spent, took, found[variant] = await timed(searches[variant], query)
                    cpu[variant].append(spent)
                    wall[variant].append(took)
                alike += top(found["A"]) == top(found["B"])
                if args.exact and mode is not SearchMode.SEMANTIC:
                    await compare_with_every_match(searches, found, query, args.exact, exactly)
            for variant in "AB":
                print(
                    f"{mode.value:8} {variant} CPU p50/p95/p99/max {percentiles(cpu[variant])}"
                    f"  wall {percentiles(wall[variant])} ms"
                )
            print(f"{mode.value:8} the same top 10 in {alike} of {len(claims)}", flush=True)
            if args.exact and mode is not SearchMode.SEMANTIC:
                depth = leg_depth(mode)
                for variant, (same, overlap) in exactly.items():
                    print(
                        f"{mode.value:8} {variant} keyword top {depth} as every match ranks:"
                        f" {same} of {len(claims)}, {overlap / len(claims):.2f} of {depth}"
                        " on average"
                    )
    finally:
        await embedder.close()
        for storage in stores.values():
            await storage.close()
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", type=Path, help="a SQLite database file, already filled")
    parser.add_argument("--ref", default="main", help="git ref of variant A's store (main)")
    parser.add_argument("--claims", type=int, default=400)
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="scifact-train's folder")
    parser.add_argument("--modes", default="keyword,semantic,hybrid")
    parser.add_argument(
        "--exact",
        metavar="HOST",
        help="compare keyword top 10s and hybrid keyword legs (top 50) with every match's",
    )
    asyncio.run(main(parser.parse_args()))
