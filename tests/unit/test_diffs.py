"""Diffs between runs: exact (applying one gives the new text), minimal when affordable, bounded
in work and size on hostile input."""

from __future__ import annotations

import difflib
import random
from collections.abc import Sequence

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from taskcrawler.domain.diffs import (
    MAX_DIFF_CHARS,
    TextDiff,
    line_opcodes,
    metadata_changes,
    split_lines,
    unified_diff,
)
from tests.support.patch import PatchError, apply_patch

OLD = "# Prices\n\nWidget: $19.99\n\nGadget: $5.00\n\nSprocket: $1.25\n\nUpdated daily.\n"


def test_a_small_edit_is_one_hunk_with_context() -> None:
    new = OLD.replace("$5.00", "$6.50")
    diff = unified_diff(OLD, new, from_label="run 1", to_label="run 2")
    assert diff.text == (
        "--- run 1\n"
        "+++ run 2\n"
        "@@ -2,7 +2,7 @@\n"
        " \n"
        " Widget: $19.99\n"
        " \n"
        "-Gadget: $5.00\n"
        "+Gadget: $6.50\n"
        " \n"
        " Sprocket: $1.25\n"
        " \n"
    )
    assert (diff.added, diff.removed, diff.complete, diff.coarse) == (1, 1, True, False)
    assert apply_patch(OLD, diff.text) == new


def test_equal_texts_have_an_empty_diff() -> None:
    diff = unified_diff(OLD, OLD)
    assert diff == TextDiff("")
    assert not diff.changed


def test_far_apart_edits_are_separate_hunks_and_a_missing_newline_is_marked() -> None:
    old = "".join(f"line {i}\n" for i in range(20))
    new = old.replace("line 1\n", "LINE 1\n").rstrip("\n")
    diff = unified_diff(old, new)
    assert diff.text.count("@@ -") == 2
    assert diff.text.endswith("-line 19\n+line 19\n\\ No newline at end of file\n")
    assert apply_patch(old, diff.text) == new


def test_from_and_to_empty_texts() -> None:
    assert (
        unified_diff("", "a\nb").text
        == "--- previous\n+++ current\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n"
    )
    assert apply_patch("a\nb\n", unified_diff("a\nb\n", "").text) == ""


def test_lines_split_on_newline_only() -> None:
    """U+2028, form feeds and carriage returns are characters of a line, not line breaks."""
    text = "a\u2028b\x0cc\rd\ne"
    assert split_lines(text) == ["a\u2028b\x0cc\rd\n", "e"]
    new = text.replace("e", "E")
    assert apply_patch(text, unified_diff(text, new).text) == new


def test_labels_stay_on_their_line() -> None:
    diff = unified_diff("a\n", "b\n", from_label="evil\n+++ x", to_label="ok")
    assert diff.text.splitlines()[:2] == ["--- evil +++ x", "+++ ok"]


def test_the_diff_is_as_small_as_difflibs_on_ordinary_edits() -> None:
    """Myers finds a shortest edit: never more changed lines than difflib's matcher."""
    old = [f"paragraph {i}\n" for i in range(200)]
    new = [*old[:10], "inserted\n", *old[10:50], *old[60:150], "changed\n", *old[151:]]
    ours, _ = line_opcodes(old, new, budget=10**7)
    theirs = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()

    def changed(codes: Sequence[tuple[str, int, int, int, int]]) -> int:
        return sum(i2 - i1 + j2 - j1 for tag, i1, i2, j1, j2 in codes if tag != "equal")

    assert changed(ours) <= changed(theirs)
    assert changed(ours) == 1 + 10 + 2


# --- the property ---------------------------------------------------------------------------

# Few distinct lines, so that texts share lines in many ways (repeats are where diffs go wrong).
_LINES = st.sampled_from(["a", "b", "c", "", " ", "a b", "ü\u2028", "# h", "- x"])
_TEXTS = st.builds(
    lambda lines, end: "\n".join(lines) + ("\n" if end and lines else ""),
    st.lists(_LINES, max_size=25),
    st.booleans(),
)


@settings(max_examples=500, deadline=None)
@given(old=_TEXTS, new=_TEXTS, context=st.integers(0, 4))
@example(old="a", new="a\n", context=3)
@example(old="", new="", context=3)
@example(old="x\n", new="", context=0)
def test_applying_the_diff_to_the_old_text_gives_the_new_text(
    old: str, new: str, context: int
) -> None:
    diff = unified_diff(old, new, context=context)
    assert diff.complete
    assert apply_patch(old, diff.text) == new
    assert (diff.text == "") == (old == new)


@settings(max_examples=200, deadline=None)
@given(old=_TEXTS, new=_TEXTS, budget=st.integers(0, 40))
def test_a_diff_cut_short_by_its_budget_is_still_exact(old: str, new: str, budget: int) -> None:
    diff = unified_diff(old, new, budget=budget)
    assert apply_patch(old, diff.text) == new


@settings(max_examples=200, deadline=None)
@given(old=_TEXTS, new=_TEXTS)
def test_the_counts_match_the_diff(old: str, new: str) -> None:
    diff = unified_diff(old, new, context=0)
    rows = diff.text.split("\n")[2:]
    assert diff.added == sum(row.startswith("+") for row in rows)
    assert diff.removed == sum(row.startswith("-") for row in rows)


def test_the_applier_refuses_a_diff_that_is_only_close() -> None:
    """The property above is only as good as its applier."""
    diff = unified_diff(OLD, OLD.replace("$5.00", "$6.50")).text
    with pytest.raises(PatchError):
        apply_patch(OLD.replace("Widget", "Wodget"), diff)
    with pytest.raises(PatchError):
        apply_patch(OLD, diff.replace("@@ -2,7 +2,7 @@", "@@ -3,7 +3,7 @@"))
    with pytest.raises(PatchError):
        apply_patch(OLD, diff.replace("@@ -2,7 +2,7 @@", "@@ -2,6 +2,7 @@"))
    with pytest.raises(PatchError):
        apply_patch(OLD, diff.replace("+Gadget", " Gadget"))
    assert apply_patch(OLD, diff) == OLD.replace("$5.00", "$6.50")


# --- bounds -----------------------------------------------------------------------------------


def test_a_rewrite_too_big_to_search_becomes_one_exact_hunk() -> None:
    """Reversing 5,000 distinct lines needs 10,000 edits: past the budget the changed middle is
    one hunk. The test holds no clock: without the budget the search would take about 50
    million steps of Python."""
    lines = [f"{i}\n" for i in range(5000)]
    old = "head\n" + "".join(lines) + "tail\n"
    new = "head\n" + "".join(reversed(lines)) + "tail\n"
    diff = unified_diff(old, new, max_chars=10**8)
    assert diff.coarse and diff.complete
    assert diff.text.count("@@ -") == 1
    assert (diff.removed, diff.added) == (5000, 5000)  # minimal would keep one line
    assert apply_patch(old, diff.text) == new


def test_repetitive_lines_do_not_make_the_diff_slow() -> None:
    """Two unrelated sequences of the same two lines: the worst case of line matchers."""
    rng = random.Random(1)
    old = "".join(rng.choice(("a\n", "b\n")) for _ in range(20_000))
    new = "".join(rng.choice(("a\n", "b\n")) for _ in range(20_000))
    diff = unified_diff(old, new, max_chars=10**8)
    assert apply_patch(old, diff.text) == new


def test_a_huge_diff_is_cut_after_the_last_whole_hunk() -> None:
    old = "".join(f"line {i}\n" + "same\n" * 10 for i in range(300))
    new = old.replace("line", "LINE")
    diff = unified_diff(old, new, max_chars=10_000)
    assert not diff.complete and not diff.coarse
    assert len(diff.text) <= 10_000
    assert diff.text.endswith("same\n same\n same\n")  # a whole hunk, not half of one
    assert (diff.added, diff.removed) == (300, 300)  # counted over the whole diff
    whole = unified_diff(old, new, max_chars=10**8)
    assert whole.complete and apply_patch(old, whole.text) == new
    assert whole.text.startswith(diff.text)


def test_the_default_cap() -> None:
    lines = [f"{i}\n" for i in range(100_000)]
    diff = unified_diff("".join(lines), "".join(reversed(lines)))
    assert not diff.complete
    assert MAX_DIFF_CHARS - 100 < len(diff.text) <= MAX_DIFF_CHARS


def test_a_first_hunk_bigger_than_the_cap_is_shown_in_part() -> None:
    diff = unified_diff("a\n", "b" * 100 + "\n", max_chars=60)
    assert not diff.complete
    assert diff.text == "--- previous\n+++ current\n@@ -1 +1 @@\n-a\n"  # whole lines only


# --- metadata ---------------------------------------------------------------------------------


def test_metadata_changes_name_only_what_changed() -> None:
    old = {"title": "Prices", "description": "Our prices", "language": "en", "word_count": 10}
    new = {"title": "Prices (new)", "description": "Our prices", "canonical_url": "https://x/"}
    assert metadata_changes(old, new) == {
        "title": {"old": "Prices", "new": "Prices (new)"},
        "canonical_url": {"old": None, "new": "https://x/"},
        "language": {"old": "en", "new": None},
    }
    assert metadata_changes(old, old) == {}
