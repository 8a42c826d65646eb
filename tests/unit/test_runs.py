"""Run history: the stored content round-trips exactly and refuses what is not its own; retention
keeps what its policy says and never leaves a kept run unreadable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from isal import isal_zlib

from taskcrawler.domain.runs import (
    DEFAULT_RETENTION_RUNS,
    CorruptContent,
    RetentionPolicy,
    RunContent,
    RunInfo,
    runs_to_drop,
)

PAGE = RunContent(
    markdown="# Prices\n\n| item | price |\n| --- | --- |\n| Widget | $19.99 |\n" * 20,
    text="Prices\n\nitem price\nWidget $19.99\n" * 20,
)


@settings(max_examples=300)
@given(markdown=st.text(), text=st.text())
def test_content_round_trips_exactly(markdown: str, text: str) -> None:
    content = RunContent(markdown, text)
    assert RunContent.decode(content.encode()) == content


def test_content_round_trips_with_lone_surrogates_and_nul() -> None:
    content = RunContent("a\ud800b\x00", "\udfff")
    assert RunContent.decode(content.encode()) == content


def test_content_is_compressed_as_one_stream() -> None:
    blob = PAGE.encode()
    raw = len(PAGE.markdown.encode()) + len(PAGE.text.encode())
    assert blob[0] == 1
    assert len(blob) < raw / 10  # a repetitive page; real pages: bench.monitor_bounds


def test_the_digest_tells_contents_apart() -> None:
    assert PAGE.digest == RunContent(PAGE.markdown, PAGE.text).digest
    assert PAGE.digest.startswith("sha256:")
    # The boundary between Markdown and text is part of what is hashed.
    assert RunContent("ab", "c").digest != RunContent("a", "bc").digest
    assert RunContent("a", "").digest != RunContent("", "a").digest


def _frame(payload: bytes) -> bytes:
    return b"\x01" + isal_zlib.compress(payload)


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (b"", "not a run content blob"),
        (b"\x02" + PAGE.encode()[1:], "not a run content blob"),
        (b"\x01not zlib", "does not inflate"),
        (PAGE.encode()[:-5], "cut short"),
        (PAGE.encode() + b"extra", "trailing bytes"),
        (_frame(b"\x01\x02"), "no header"),
        (_frame((100).to_bytes(8, "little") + b"short"), "runs past"),
        (_frame((1).to_bytes(8, "little") + b"\xff\xfe"), "not UTF-8"),
    ],
)
def test_a_blob_that_is_not_run_content_is_refused(blob: bytes, message: str) -> None:
    with pytest.raises(CorruptContent, match=message):
        RunContent.decode(blob)


def test_a_blob_inflating_too_far_stops_at_the_limit() -> None:
    bomb = RunContent("x" * 1_000_000, "").encode()
    assert len(bomb) < 5_000
    with pytest.raises(CorruptContent, match="beyond 100,000 bytes"):
        RunContent.decode(bomb, max_bytes=100_000)
    assert RunContent.decode(bomb, max_bytes=1_000_008).markdown == "x" * 1_000_000


# --- retention --------------------------------------------------------------------------------

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def runs(*content: bool, every: timedelta = timedelta(days=1)) -> list[RunInfo]:
    """Runs 1..n, the last one now, one ``every`` apart; ``content``: which stored a blob (the
    others read the blob of the last run before them that stored one)."""
    count = len(content)
    history = []
    source = None
    for number, stored in enumerate(content, start=1):
        source = number if stored else source
        history.append(RunInfo(number, NOW - (count - number) * every, source))
    return history


def test_the_newest_runs_are_kept() -> None:
    history = runs(*[True] * 10)
    assert runs_to_drop(history, RetentionPolicy(keep_runs=3), NOW) == [1, 2, 3, 4, 5, 6, 7]
    assert runs_to_drop(history, RetentionPolicy(keep_runs=None), NOW) == []
    assert RetentionPolicy().keep_runs == DEFAULT_RETENTION_RUNS


def test_runs_older_than_the_age_limit_go() -> None:
    history = runs(*[True] * 10)  # run 10 now, run 1 nine days ago
    policy = RetentionPolicy(keep_runs=None, keep_days=3)
    assert runs_to_drop(history, policy, NOW) == [1, 2, 3, 4, 5, 6]


def test_both_limits_apply() -> None:
    history = runs(*[True] * 10)
    assert runs_to_drop(history, RetentionPolicy(keep_runs=2, keep_days=5), NOW) == list(
        range(1, 9)
    )
    assert runs_to_drop(history, RetentionPolicy(keep_runs=8, keep_days=2.5), NOW) == list(
        range(1, 8)
    )


def test_the_newest_run_is_kept_however_old() -> None:
    history = runs(True, True, every=timedelta(days=100))
    assert runs_to_drop(history, RetentionPolicy(keep_days=1), NOW + timedelta(days=30)) == [1]


def test_a_kept_run_keeps_the_run_its_content_is_stored_in() -> None:
    """Runs 3-5 were unchanged (304 or identical): their content is run 2's blob."""
    history = runs(True, True, False, False, False)
    assert [run.content_run for run in history] == [1, 2, 2, 2, 2]
    assert [run.stores_content for run in history] == [True, True, False, False, False]
    assert runs_to_drop(history, RetentionPolicy(keep_runs=2), NOW) == [1, 3]


def test_runs_need_not_come_in_order_or_without_gaps() -> None:
    history = runs(False, True, True, False, True)  # run 1 failed: no content
    assert history[0].content_run is None
    shuffled = [history[3], history[0], history[4], history[2]]  # run 2 dropped before
    assert runs_to_drop(shuffled, RetentionPolicy(keep_runs=2), NOW) == [1]
    assert runs_to_drop(shuffled, RetentionPolicy(keep_runs=1), NOW) == [1, 3, 4]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"keep_runs": 0}, "at least 1"),
        ({"keep_runs": True}, "an integer"),
        ({"keep_runs": 2.5}, "an integer"),
        ({"keep_days": 0}, "positive"),
        ({"keep_days": -1.0}, "positive"),
    ],
)
def test_bad_policies_are_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RetentionPolicy(**fields)  # type: ignore[arg-type]


@settings(max_examples=500)
@given(
    content=st.lists(st.booleans(), min_size=1, max_size=40),
    hours=st.lists(st.integers(0, 500), min_size=40, max_size=40),
    keep_runs=st.none() | st.integers(1, 45),
    keep_days=st.none() | st.floats(0.01, 30),
)
def test_retention_keeps_what_it_must_and_drops_only_what_it_may(
    content: list[bool], hours: list[int], keep_runs: int | None, keep_days: float | None
) -> None:
    times = sorted(NOW - timedelta(hours=h) for h in hours[: len(content)])
    history = [
        RunInfo(run.number, times[run.number - 1], run.content_run) for run in runs(*content)
    ]
    policy = RetentionPolicy(keep_runs=keep_runs, keep_days=keep_days)
    dropped = runs_to_drop(history, policy, NOW)
    assert dropped == sorted(set(dropped))
    kept = [run for run in history if run.number not in dropped]
    kept_numbers = {run.number for run in kept}
    newest = history[-1].number
    assert newest in kept_numbers
    for run in kept:  # every kept run is still readable from what is kept
        assert run.content_run is None or run.content_run in kept_numbers

    def wanted(run: RunInfo) -> bool:
        young = keep_days is None or run.fetched_at >= NOW - timedelta(days=keep_days)
        return (keep_runs is None or newest - run.number < keep_runs) and young

    policy_keeps = {run.number for run in history if wanted(run)} | {newest}
    needed = policy_keeps | {run.content_run for run in history if run.number in policy_keeps}
    for run in history:  # kept: exactly what the policy wants, the newest and what they read
        assert (run.number in kept_numbers) == (run.number in needed)
