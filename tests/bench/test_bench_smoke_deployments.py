"""The tools that deploy the service for each run still work: ``bench.ab`` (the backlog phase in
production, the open load in embedded mode), ``bench.ratios`` and ``bench.claims``, each at a
tiny size. No timing is asserted: these are not timed tests."""

from __future__ import annotations

import pytest

from tests.support.bench_runs import BENCH_SECONDS, run_bench

pytestmark = pytest.mark.slow


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
        "--seconds", "1", "--rate", "30", "--warm-up", "0",
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
