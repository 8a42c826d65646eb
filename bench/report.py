"""The report of ``python -m bench.run``: Markdown tables of every figure against its target, and
of TaskCrawler against the limits measured in the same run."""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench.phases import ModeResult

TARGETS = {
    "e2e_pg": 1000.0,
    "e2e_sqlite": 500.0,
    "post_per_s": 1500.0,
    "p99_ms": 25.0,
}


def _last_run(result: ModeResult) -> dict[str, Any]:
    """The mode's last end-to-end run (the scale run, if any, comes after the repeats)."""
    return (result.repeats + result.runs[1:])[-1]


def _fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def _verdict(value: float | None, target: float, *, lower_is_better: bool = False) -> str:
    if value is None:
        return "—"
    ok = value < target if lower_is_better else value >= target
    return "met" if ok else "**missed**"


def report(
    cfg: argparse.Namespace,
    info: dict[str, str],
    limits: dict[str, Any] | None,
    modes: dict[str, ModeResult],
    command: str,
) -> str:
    lines = [
        "# Benchmark results\n",
        f"Command: `{command}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M %Z')}\n",
        *_machine(info),
        *_targets(cfg, modes),
        *(_limits(limits, modes) if limits else []),
    ]
    return "\n".join(lines) + "\n"


def _machine(info: dict[str, str]) -> list[str]:
    lines = ["## Machine\n", "| | |\n| --- | --- |"]
    lines += [f"| {key} | {value} |" for key, value in info.items()]
    return [
        *lines,
        "",
        "Everything (target site, API, worker, PostgreSQL, Redis, load generator) shares these",
        "cores. `load_before` is the load average when the run began: other work on the machine",
        "skews every figure, and `cpu_speed` says how fast one core was when it began.\n",
    ]


def _targets(cfg: argparse.Namespace, modes: dict[str, ModeResult]) -> list[str]:
    """Each figure of both modes beside its target; then the failures and where CPU went."""
    lines: list[str] = []
    add = lines.append
    add("## Figures against the targets\n")
    add("| figure | embedded (SQLite) | production (PostgreSQL + Redis) | target |")
    add("| --- | --- | --- | --- |")

    def both(getter: Any, digits: int = 0) -> tuple[str, str, float | None, float | None]:
        values = []
        for mode in ("embedded", "production"):
            result = modes.get(mode)
            values.append(getter(result) if result is not None else None)
        return _fmt(values[0], digits), _fmt(values[1], digits), values[0], values[1]

    e, p, ev, pv = both(lambda r: r.runs[0]["jobs_per_s"])
    median = f", the median of {cfg.repeat} runs" if cfg.repeat > 1 else ""
    add(
        f"| jobs/s end to end, {cfg.size:,} pages{median} "
        f"| {e} ({_verdict(ev, TARGETS['e2e_sqlite'])}) "
        f"| {p} ({_verdict(pv, TARGETS['e2e_pg'])}) | ≥ 500 embedded, ≥ 1,000 production |"
    )
    if cfg.repeat > 1:
        each = [
            ", ".join(f"{run['jobs_per_s']:,.0f}" for run in modes[mode].repeats)
            if mode in modes
            else "—"
            for mode in ("embedded", "production")
        ]
        add(f"| jobs/s of each of those runs | {each[0]} | {each[1]} | |")
    if cfg.scale:
        e, p, ev, pv = both(lambda r: r.runs[1]["jobs_per_s"])
        add(f"| jobs/s end to end, {cfg.size * 10:,} pages | {e} | {p} | same rate as above |")
    _, p, _, _ = both(lambda r: r.two_workers.get("jobs_per_s"))
    _, c, _, _ = both(lambda r: r.two_workers.get("cpu_ms_per_job"), 2)
    add(
        f"| jobs/s end to end, {cfg.size:,} pages, two worker processes ({c} CPU ms per job) "
        f"| — | {p} | not a target: the machine's ceiling |"
    )
    e, p, ev, pv = both(lambda r: r.closed["per_second"])
    add(
        f"| POST/s, 64 clients (single POSTs) | {e} ({_verdict(ev, TARGETS['post_per_s'])}) "
        f"| {p} ({_verdict(pv, TARGETS['post_per_s'])}) | ≥ 1,500 |"
    )
    e, p, _, _ = both(lambda r: r.closed["p99_ms"], 1)
    add(f"| p99 ms at 64 clients | {e} | {p} | |")
    e, p, _, _ = both(lambda r: r.open["p50_ms"], 1)
    add(f"| p50 ms at {cfg.rate:.0f} POST/s offered | {e} | {p} | |")
    e, p, ev, pv = both(lambda r: r.open["p99_ms"], 1)
    add(
        f"| p99 ms at {cfg.rate:.0f} POST/s offered | {e} "
        f"({_verdict(ev, TARGETS['p99_ms'], lower_is_better=True)}) | {p} "
        f"({_verdict(pv, TARGETS['p99_ms'], lower_is_better=True)}) | < 25 |"
    )
    _, p, _, pv = both(lambda r: r.open_alone.get("p99_ms"), 1)
    add(
        f"| p99 ms at {cfg.rate:.0f} POST/s offered, worker paused (the API alone) | — | {p} "
        f"({_verdict(pv, TARGETS['p99_ms'], lower_is_better=True)}) | < 25 |"
    )
    e, p, _, _ = both(lambda r: r.open["dropped"] + r.open["errors"])
    add(f"| errors + dropped at {cfg.rate:.0f} POST/s | {e} | {p} | 0 |")
    e, p, _, _ = both(lambda r: r.runs[0]["submit_rows_per_s"])
    add(f"| batch submit, rows/s (1,000 a request) | {e} | {p} | |")
    e, p, _, _ = both(lambda r: r.runs[0]["cpu_ms_per_job"], 2)
    add(f"| CPU ms per job (our processes), {cfg.size:,} pages | {e} | {p} | |")
    if cfg.scale:
        e, p, _, _ = both(lambda r: r.runs[1]["cpu_ms_per_job"], 2)
        add(f"| CPU ms per job, {cfg.size * 10:,} pages | {e} | {p} | same as above |")
    e, p, _, _ = both(lambda r: 100 * r.runs[0]["loop_busy"])
    add(f"| worker's event loop busy, % of the end-to-end run | {e} | {p} | |")
    e, p, _, _ = both(lambda r: 100 * r.runs[0]["machine_busy"])
    add(f"| both cores busy, % of the end-to-end run | {e} | {p} | |")
    e, p, _, _ = both(lambda r: r.runs[0]["cpu_speed_ms"])
    add(f"| `cpu_speed` when the end-to-end run began, ms | {e} | {p} | |")
    rss = []
    for mode in ("embedded", "production"):
        r = modes.get(mode)
        rss.append(f"{r.rss['start']:.0f} / {r.rss['peak']:.0f} / {r.rss['end']:.0f}" if r else "—")
    add(f"| worker RSS MB start / peak / end | {rss[0]} | {rss[1]} | flat |")
    # The counts are the database's after each run, so the last run's cover them all.
    e, p, _, _ = both(lambda r: _last_run(r)["counts"].get("FAILED", 0))
    add(f"| FAILED jobs in the end-to-end runs | {e} | {p} | 0 |")
    add("")
    for mode in ("embedded", "production"):
        r = modes.get(mode)
        codes = _last_run(r)["failed_by_code"] if r is not None else None
        if codes:
            add(f"FAILED jobs of the {mode} runs by error code: {codes}.  ")

    for mode in ("embedded", "production"):
        r = modes.get(mode)
        if r is None:
            continue
        split = ", ".join(f"{k} {v:.1f}" for k, v in r.runs[0]["cpu_s"].items())
        add(f"CPU seconds of the {mode} end-to-end run (the median one): {split}.  ")
    add("")
    return lines


def _limits(limits: dict[str, Any], modes: dict[str, ModeResult]) -> list[str]:
    """Each limit beside the mode's figure it bounds, and the ratio of the two."""
    lines: list[str] = []
    add = lines.append
    add("## Limits, measured in the same run\n")
    add(
        f"`cpu_speed` when the limits began: {limits['cpu_speed_ms']:.0f} ms. Where it differs"
        " from the modes' (above), so do the ratios.\n"
    )
    add("| limit | measured | TaskCrawler | ratio |")
    add("| --- | --- | --- | --- |")
    ours = {m: modes[m].runs[0]["jobs_per_s"] for m in modes}
    fetch = limits["fetch"]["per_second"]
    fetch_x = limits["fetch_extract"]["per_second"]
    for label, value in (
        ("bare aiohttp fetch loop, pages/s (100 in flight)", fetch),
        ("aiohttp fetch + our extraction, pages/s", fetch_x),
    ) + (
        (("Scrapy fetch + extract, pages/s", limits["scrapy"]["per_second"]),)
        if limits.get("scrapy")
        else ()
    ):
        for mode, jobs in ours.items():
            add(f"| {label} | {value:,.0f} | {mode} {jobs:,.0f} jobs/s | {jobs / value:.2f} |")
    bare = limits["bare_api"]["per_second"]
    for mode in modes:
        posts = modes[mode].closed["per_second"]
        add(
            f"| bare FastAPI endpoint, POST/s (64 clients) | {bare:,.0f} | {mode} "
            f"{posts:,.0f} POST/s | {posts / bare:.2f} |"
        )
    ins = limits["inserts"]
    for key, mode in (
        ("pg_executemany_rows_per_s", "production"),
        ("sqlite_executemany_rows_per_s", "embedded"),
    ):
        if mode in modes:
            sub = modes[mode].runs[0]["submit_rows_per_s"]
            add(
                f"| bare inserts `{key}` | {ins[key]:,.0f} | {mode} batch submit "
                f"{sub:,.0f} rows/s | {sub / ins[key]:.2f} |"
            )
    for key, mode in (
        ("pg_single_commits_per_s", "production"),
        ("sqlite_single_commits_per_s", "embedded"),
    ):
        if mode in modes:
            posts = modes[mode].closed["per_second"]
            add(
                f"| bare single-row commits `{key}` | {ins[key]:,.0f} | {mode} "
                f"{posts:,.0f} POST/s | {posts / ins[key]:.2f} |"
            )
    add("")
    return lines
