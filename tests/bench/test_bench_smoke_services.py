"""The tools that measure one service or one search store still work: ``bench.wakeup`` against
a served TaskCrawler, ``bench.startup``, ``bench.search_ab`` and ``bench.pg_bm25_agree`` on a
tiny SciFact, ``bench.worker_steps`` on a few jobs. No timing is asserted: these are not timed
tests."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from tests.support.bench_runs import (
    indexed_tiny,
    indexed_tiny_database,
    run_bench,
    tiny_scifact,
)
from tests.support.processes import ProcessManager, free_port
from tests.support.target import TargetServer

pytestmark = pytest.mark.slow


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


def test_idle_cpu_benchmark_measures_an_idle_serve() -> None:
    out = run_bench("idle_cpu", "--mode", "serve", "--settle", "1", "--seconds", "1", timeout=120)
    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["mode"] == "serve" and figures["cpu_ms_per_s"] >= 0, figures


def test_search_ab_alternates_two_stores_and_compares_their_answers(tmp_path: Path) -> None:
    """The same store on both sides (this checkout's HEAD against itself): every top 10 alike,
    and alike with FTS5's ranking of every match, as is the hybrid search's keyword leg."""
    tiny_scifact(tmp_path)
    database = asyncio.run(indexed_tiny_database(tmp_path))
    out = run_bench(
        "search_ab", str(database), "--ref", "HEAD", "--claims", "2", "--corpus", str(tmp_path),
        "--exact", "scifact.test", timeout=240,
    )  # fmt: skip
    for mode in ("keyword", "semantic", "hybrid"):
        assert f"{mode:8} the same top 10 in 2 of 2" in out
        assert re.search(rf"{mode} +A CPU p50/p95/p99/max [\d.]+ / ", out)
    for variant in "AB":
        assert f"keyword  {variant} keyword top 10 as every match ranks: 2 of 2, " in out
        assert f"hybrid   {variant} keyword top 50 as every match ranks: 2 of 2, " in out


def test_pg_bm25_agree_compares_pruned_rankings_with_every_posting_s(
    tmp_path: Path, pgvector_url: str
) -> None:
    """On three abstracts every list is within any cap: both settings rank as the filtered path
    (every posting) does, in keyword mode and in hybrid's keyword leg."""
    tiny_scifact(tmp_path)
    asyncio.run(indexed_tiny(tmp_path, pgvector_url))
    out = run_bench(
        "pg_bm25_agree", "measure", pgvector_url, "--claims", "2", "--corpus", str(tmp_path),
        "main:1000:-1:100:2", "kept:1000:20000:200:4", timeout=240,
    )  # fmt: skip
    for name in ("main", "kept"):
        assert re.search(rf"{name} +top 10 2/2 \(\d", out), out
        assert re.search(rf"{name} +.* leg 50 2/2 .* keyword [\d.]+/[\d.]+/[\d.]+", out), out


@pytest.mark.timeout(240)
def test_worker_steps_prints_each_step_of_the_loop(pg_admin_url: str, redis_url: str) -> None:
    """``python -m bench.worker_steps``: a row for each step the probes saw in the running
    worker, with its calls a job (one decision per job, retries aside: none here)."""
    out = run_bench(
        "worker_steps", "--jobs", "40", "--runs", "1",
        "--pg-url", pg_admin_url, "--redis-url", redis_url, timeout=200,
    )  # fmt: skip
    rows = {line.split(" | ")[0]: line.split(" | ")[1:] for line in out.splitlines()}
    assert {"storable_outcome", "decide", "content_rows"} <= set(rows), out
    calls, cpu = rows["decide"]
    assert float(calls) == 1.0 and float(cpu) > 0, out
