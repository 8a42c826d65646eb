"""The end-to-end benchmark and the small tools still work: ``python -m bench.run`` at a tiny
size, both modes, all the limits but Scrapy (a benchmark-only dependency), and the tools that
measure one statement or one table. No timing is asserted: these are not timed tests.

The tools that deploy the service again and again (``bench.ab``, ``bench.ratios``,
``bench.claims``) are in test_bench_smoke_deployments.py, the ones that start one service or
read a search store in test_bench_smoke_services.py: a test process runs a whole file, so
three files of about a third of the work each let three of them share it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench import run
from tests.support.bench_runs import BENCH_SECONDS, run_bench
from tests.support.processes import REPO_ROOT

pytestmark = pytest.mark.slow


@pytest.mark.timeout(BENCH_SECONDS + 60)
def test_benchmark_runs_end_to_end(pg_admin_url: str, redis_url: str, tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    raw = tmp_path / "results.json"
    run_bench(
        "run",
        "--size", "10", "--repeat", "2", "--quick", "--no-scrapy",
        "--posts", "20", "--open-seconds", "0.5", "--rate", "40", "--insert-seconds", "0.1",
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
