"""Running a benchmark tool as its user does, for the smoke tests in tests/bench/: ``python -m
bench.<module>`` in a process of its own, and the tiny SciFact the retrieval tools read."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from bench import retrieval
from bench.measure import SPEED_LOOP, SPEED_LOOP_VARIABLE
from taskcrawler.embed import EmbedderConfig, build_embedder
from taskcrawler.storage import open_storage, upgrade_database
from tests.support.processes import REPO_ROOT, clean_env
from tests.support.retrieval import index_pages

#: How long a whole benchmark run may take here: every phase is bounded, this bounds their sum.
BENCH_SECONDS = 300


#: The speed loop at a tenth of its length: the smoke tests read no figure, only that there is one.
SMOKE_SETTINGS = {SPEED_LOOP_VARIABLE: str(SPEED_LOOP // 10)}


def run_bench(module: str, *args: str, timeout: float = BENCH_SECONDS) -> str:
    """``python -m bench.<module> args``; its output, once it has exited 0."""
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", *args],
        cwd=REPO_ROOT,
        env=clean_env(SMOKE_SETTINGS),
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    out = done.stdout.decode()
    assert done.returncode == 0, out[-3000:] + done.stderr.decode()[-3000:]
    return out


def tiny_scifact(folder: Path) -> None:
    """Three abstracts and two claims in SciFact's files (``bench.retrieval.load``'s format)."""
    docs = [
        ("1", "Kettles", "A kettle boils water for tea in a kitchen."),
        ("2", "Airships", "A zeppelin is an airship held up by gas cells."),
        ("3", "Bread", "Sourdough bread rises overnight in a warm kitchen."),
    ]
    with gzip.open(folder / "corpus.jsonl.gz", "wt") as out:
        for doc_id, title, text in docs:
            out.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    claims = [("c1", "kettle water kitchen"), ("c2", "zeppelin gas cells")]
    (folder / "queries-train.jsonl").write_text(
        "".join(json.dumps({"_id": i, "text": text}) + "\n" for i, text in claims)
    )
    (folder / "qrels-train.tsv").write_text("query-id\tcorpus-id\tscore\nc1\t1\t1\nc2\t2\t1\n")


async def indexed_tiny_database(folder: Path) -> Path:
    """A migrated SQLite file beside the abstracts in ``folder``, holding them indexed."""
    path = folder / "search.db"
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_database(url)
    await indexed_tiny(folder, url)
    return path


async def indexed_tiny(folder: Path, url: str) -> None:
    """The abstracts in ``folder`` indexed into the store at ``url`` (migrated already)."""
    data = retrieval.load(folder)
    storage = open_storage(url)
    embedder = build_embedder(EmbedderConfig())
    try:
        pages = [retrieval.page_of(i, title, text) for i, (title, text) in data.docs.items()]
        await index_pages(storage, embedder, pages)
    finally:
        await embedder.close()
        await storage.close()
