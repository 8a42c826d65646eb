"""``python -m bench.monitors`` at a tiny size, on each backend: every round prints its line,
and the counts in them are the site's (no timings are asserted)."""

from __future__ import annotations

import re

from tests.support.bench_runs import run_bench


def test_monitors_benchmark_runs_on_sqlite() -> None:
    out = run_bench(
        "monitors", "--urls", "20", "--rounds", "3", "--change", "0.25", "--sqlite", timeout=240
    )
    assert "20 monitors created" in out
    rounds = re.findall(r"^round (\d): fire (\d+) slots .* \((\d+) answered 304\)", out, re.M)
    assert rounds == [("0", "20", "0"), ("1", "20", "15"), ("2", "20", "15")], out
    assert "after the rounds: 10 changes" in out  # 5 pages changed in each of two rounds
    assert "idle poll" in out


def test_monitors_benchmark_runs_on_postgresql(pg_admin_url: str) -> None:
    out = run_bench(
        "monitors", "--urls", "10", "--rounds", "2", "--change", "0.5",
        "--pg-url", pg_admin_url, timeout=240,
    )  # fmt: skip
    assert re.search(r"^round 1: fire 10 slots .* \(5 answered 304\)", out, re.M), out
    # Every change is read in its own round: no page runs outside its slots.
    assert re.search(r"^round 1: .* changes so far 5;", out, re.M), out
    assert "after the rounds: 5 changes" in out
