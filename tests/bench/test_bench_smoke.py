"""The benchmark still works: ``python -m bench.run`` at a tiny size, both modes, all the limits
but Scrapy (a benchmark-only dependency). No timing is asserted: this is not a timed test."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench import retrieval, run
from taskcrawler.embed import EmbedderConfig, build_embedder
from taskcrawler.storage import open_storage, upgrade_database
from tests.support.processes import REPO_ROOT, ProcessManager, clean_env, free_port
from tests.support.retrieval import index_pages
from tests.support.target import TargetServer

pytestmark = pytest.mark.slow


#: How long a whole benchmark run may take here: every phase is bounded, this bounds their sum.
BENCH_SECONDS = 300


def run_bench(module: str, *args: str, timeout: float = BENCH_SECONDS) -> str:
    """``python -m bench.<module> args``; its output, once it has exited 0."""
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", *args],
        cwd=REPO_ROOT,
        env=clean_env(),
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    out = done.stdout.decode()
    assert done.returncode == 0, out[-3000:] + done.stderr.decode()[-3000:]
    return out


@pytest.mark.timeout(BENCH_SECONDS + 60)
def test_benchmark_runs_end_to_end(pg_admin_url: str, redis_url: str, tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    raw = tmp_path / "results.json"
    run_bench(
        "run",
        "--size", "10", "--repeat", "2", "--quick", "--no-scrapy",
        "--posts", "20", "--open-seconds", "0.5", "--rate", "40",
        "--pg-url", pg_admin_url, "--redis-url", redis_url,
        "--out", str(out), "--json", str(raw), "--timeout", "120",
    )  # fmt: skip
    text = out.read_text()
    for figure in (
        "jobs/s end to end",
        "POST/s, 64 clients",
        "p99 ms at 40 POST/s",
        "CPU ms",
        "event loop busy",
        "both cores busy",
        "`cpu_speed` when the end-to-end run began",
        "`cpu_speed` when the limits began",
    ):
        assert figure in text
    assert "bare aiohttp fetch loop" in text
    assert re.search(r"^\| code \| [0-9a-f]{7,}", text, re.M), text[:600]
    assert "bare FastAPI endpoint" in text
    assert "pg_executemany_rows_per_s" in text
    figures = json.loads(raw.read_text())
    for mode in ("embedded", "production"):
        repeats = figures["modes"][mode]["repeats"]
        # new pages each time: the database holds 10 more jobs, all completed, after each run
        assert [r["counts"] for r in repeats] == [{"COMPLETED": 10}, {"COMPLETED": 20}], repeats
        run = figures["modes"][mode]["runs"][0]
        assert run == min(repeats, key=lambda r: r["jobs_per_s"]), (mode, run)
        assert run["loop_busy"] >= 0 and 0 <= run["machine_busy"] <= 1, (mode, run)
        assert run["cpu_speed_ms"] > 0, (mode, run)
    two = figures["modes"]["production"]["two_workers"]
    assert two["size"] == 10 and set(two["cpu_s"]) == {"api", "worker", "worker2"}, two
    assert two["counts"].get("FAILED", 0) == 0, two
    assert "two worker processes" in text
    assert "the median of 2 runs" in text and "jobs/s of each of those runs" in text


def test_in_lists_benchmark_runs(pg_admin_url: str) -> None:
    out = run_bench("in_lists", "--statements", "5", "--pg-url", pg_admin_url, timeout=120)
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == ["IN", "=", "IN", "="]
    assert all("ms PostgreSQL CPU per statement" in line for line in lines)


def test_frontier_scale_benchmark_reports_each_tenth(pg_admin_url: str) -> None:
    out = run_bench(
        "frontier_scale", "--rows", "2000", "--links", "100", "--crawls", "2", "--writers", "2",
        "--pg-url", pg_admin_url, timeout=120,
    )  # fmt: skip
    tenths = [line for line in out.splitlines() if line.startswith("{'rows'")]
    assert len(tenths) == 10
    assert "'heap_bytes_per_row': 0" not in out
    assert out.splitlines()[-1].startswith("2,000 frontier rows in ")


@pytest.mark.timeout(BENCH_SECONDS + 60)
def test_ab_benchmark_runs_alternated_pairs(pg_admin_url: str, redis_url: str) -> None:
    out = run_bench(
        "ab", ".", ".", "--pairs", "1", "--size", "20", "--phase", "backlog",
        "--b-set", "TASKCRAWLER_ARCHIVE_PAGES=false",
        "--pg-url", pg_admin_url, "--redis-url", redis_url, "--timeout", "120",
    )  # fmt: skip
    assert "pair 1 A:" in out and "pair 1 B:" in out
    assert "machine " in out and " busy, load " in out  # the backlog phase's figures
    assert "B (. TASKCRAWLER_ARCHIVE_PAGES=false)" in out
    assert "B faster in " in out and " of 1 pairs" in out


@pytest.mark.timeout(BENCH_SECONDS + 60)
def test_ab_compares_the_api_under_a_steady_load(pg_admin_url: str, redis_url: str) -> None:
    # Embedded: a deployment of two processes, not three (migrate, api, worker); the backlog
    # test above runs production deployments. (Not the backlog phase: it SIGSTOPs the worker
    # process, and in embedded mode the API's inserts then hung until the timeout.)
    out = run_bench(
        "ab", ".", ".", "--phase", "open", "--mode", "embedded", "--pairs", "1",
        "--seconds", "1", "--rate", "30",
        "--pg-url", pg_admin_url, "--redis-url", redis_url, "--timeout", "120",
    )  # fmt: skip
    runs = [line for line in out.splitlines() if line.startswith("pair 1 ")]
    assert len(runs) == 2, out
    assert all("errors 0," in line and "CPU ms per request serve " in line for line in runs), out
    assert "B's p99 lower in" in out


@pytest.mark.timeout(BENCH_SECONDS + 60)
def test_claims_benchmark_counts_claims_per_page(pg_admin_url: str, redis_url: str) -> None:
    # ``mixed`` alone: its first batch is ``one-host``'s, each scenario a deployment of its own
    # (tests/integration/test_claims_per_page.py proves the figure itself in each scenario).
    out = run_bench(
        "claims", "--scenarios", "mixed", "--pages", "12", "--hosts", "3",
        "--slow", "0.05", "--pg-url", pg_admin_url, "--redis-url", redis_url, "--timeout", "120",
    )  # fmt: skip
    [mixed] = out.strip().splitlines()
    assert mixed.startswith("mixed") and "24 pages" in mixed, out
    # every claim accounted for, one per page: the slow host costs no extra claims
    assert " 1.00 per page" in mixed, out


@pytest.mark.timeout(BENCH_SECONDS + 60)
def test_ratios_benchmark_takes_each_ratio_in_one_run(pg_admin_url: str, redis_url: str) -> None:
    out = run_bench(
        "ratios", "--rounds", "1", "--size", "30", "--posts", "40", "--backlog", "30",
        "--rate", "40", "--seconds", "0.5",
        "--pg-url", pg_admin_url, "--redis-url", redis_url, "--timeout", "120",
    )  # fmt: skip
    [line] = out.strip().splitlines()
    assert line.startswith("round 1 this (load "), out
    for figure in ("jobs/s / bare fetch", "POST/s / bare FastAPI", "offered while draining"):
        assert figure in line, out


def test_a_run_reports_to_a_file_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The notes in bench/RESULTS.md are never overwritten, nor an earlier run's report."""
    assert run.RESULTS == REPO_ROOT / "bench" / "results"
    monkeypatch.setattr(run, "RESULTS", tmp_path)
    first = run.report_path()
    assert first.parent == tmp_path and re.fullmatch(r"\d{4}-\d\d-\d\d-\d{4}\.md", first.name)
    first.write_text("an earlier run")
    second = run.report_path()
    assert second != first and second.name == first.name.replace(".md", "-2.md")


def test_database_per_test_benchmark_runs(pg_admin_url: str) -> None:
    out = run_bench("database_per_test", "--rounds", "1", "--pg-url", pg_admin_url, timeout=120)
    assert re.fullmatch(
        r"per test: fresh clone \+ drop \d+ ms, pool reuse \(jobs used\) \d+ ms\n", out
    ), out


def test_monitor_bounds_runs() -> None:
    """``python -m bench.monitor_bounds --quick``: every case prints its line."""
    out = run_bench("monitor_bounds", "--quick", timeout=120)
    assert out.count("selectors  lexbor") == 5
    assert out.count("selectors  ours") == 4
    assert out.count("diff       ") == 4
    assert "content    " in out


@pytest.mark.timeout(120)
async def test_wakeup_benchmark_measures_a_serve(
    processes: ProcessManager, tmp_path: Path, target: TargetServer
) -> None:
    port = free_port()
    env = {
        "TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/w.db",
        "TASKCRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
        "TASKCRAWLER_RESPECT_ROBOTS": "false",
    }
    server = processes.start(["serve", "--port", str(port)], env)
    api = f"http://127.0.0.1:{port}"
    await server.wait_for_http(f"{api}/healthz")
    out = await asyncio.to_thread(
        run_bench, "wakeup", "--api", api, "--target", target.base_url, "--jobs", "3"
    )
    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["jobs"] == 3
    assert 0 <= figures["p50_ms"] <= figures["max_ms"]


def test_startup_benchmark_starts_the_api() -> None:
    out = run_bench("startup", "--runs", "1", "--commands", "api", timeout=120)
    [line] = out.strip().splitlines()
    figures = json.loads(line)
    assert figures["command"] == "api" and figures["runs"] == 1, figures
    assert 0 < figures["cpu_s"] <= figures["cpu_settled_s"], figures
    assert figures["ready_s"] > 0, figures


def _tiny_scifact(folder: Path) -> None:
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


async def _indexed_tiny_database(folder: Path) -> Path:
    path = folder / "search.db"
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_database(url)
    await _indexed_tiny(folder, url)
    return path


def test_search_ab_alternates_two_stores_and_compares_their_answers(tmp_path: Path) -> None:
    """The same store on both sides (this checkout's HEAD against itself): every top 10 alike,
    and alike with FTS5's ranking of every match."""
    _tiny_scifact(tmp_path)
    database = asyncio.run(_indexed_tiny_database(tmp_path))
    out = run_bench(
        "search_ab", str(database), "--ref", "HEAD", "--claims", "2", "--corpus", str(tmp_path),
        "--exact", "scifact.test", timeout=240,
    )  # fmt: skip
    for mode in ("keyword", "semantic", "hybrid"):
        assert f"{mode:8} the same top 10 in 2 of 2" in out
        assert re.search(rf"{mode} +A CPU p50/p95/p99/max [\d.]+ / ", out)
    assert "keyword  A as every match ranks: 2 of 2, " in out
    assert "keyword  B as every match ranks: 2 of 2, " in out


def test_pg_bm25_agree_compares_pruned_rankings_with_every_posting_s(
    tmp_path: Path, pgvector_url: str
) -> None:
    """On three abstracts every list is within any cap: both settings rank as the filtered path
    (every posting) does, in keyword mode and in hybrid's keyword leg."""
    _tiny_scifact(tmp_path)
    asyncio.run(_indexed_tiny(tmp_path, pgvector_url))
    out = run_bench(
        "pg_bm25_agree", "measure", pgvector_url, "--claims", "2", "--corpus", str(tmp_path),
        "main:1000:-1:100:2", "kept:1000:20000:200:4", timeout=240,
    )  # fmt: skip
    for name in ("main", "kept"):
        assert re.search(rf"{name} +top 10 2/2 \(\d", out), out
        assert re.search(rf"{name} +.* leg 50 2/2 .* keyword [\d.]+/[\d.]+/[\d.]+", out), out


async def _indexed_tiny(folder: Path, url: str) -> None:
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
