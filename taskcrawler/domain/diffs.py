"""Diffs between two runs of a page: a unified diff of their Markdown, and the metadata fields that
changed. Pure: text in, text out.

The diff is GNU ``diff -u``'s format (``patch`` applies it): ``---``/``+++`` labels, ``@@`` hunks
with three lines of context, and ``\\ No newline at end of file`` after a last line that has
none, so applying a complete diff to the old text gives the new text exactly. Lines are split on
``\\n`` only (``str.splitlines`` would also split on characters a page may well contain, such as
U+2028).

Pages are hostile, so the diff is bounded in time and size:

* the common first and last lines are set aside first (linear), so the usual small edit of a
  big page costs next to nothing;
* what is left is diffed with Myers' algorithm, whose cost is (lines) x (edit distance); it
  stops once that work passes ``budget`` and the changed middle becomes one hunk (``coarse``:
  still exact, just not minimal). difflib was not used: its matcher can cost the product of the
  two lengths per matching block (worse than quadratic) on repetitive lines, and its heuristics
  make the cost hard to bound;
* the text stops at ``max_chars``, after the last whole hunk that fits (``complete`` is then
  false: a cut diff cannot be applied).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

#: Characters of a diff kept with a change (and sent in its webhook).
MAX_DIFF_CHARS = 256 * 1024
#: Steps of the line diff (cells of the edit graph visited) before it falls back to one hunk;
#: a few tenths of a second of CPU at worst (``python -m bench.monitor_bounds``).
DIFF_BUDGET = 400_000
CONTEXT_LINES = 3
NO_NEWLINE = "\\ No newline at end of file\n"
#: Metadata fields compared between runs (the text alone decides whether a page changed).
TRACKED_METADATA = ("title", "description", "canonical_url", "language")

# An opcode, as difflib's: (tag, old start, old end, new start, new end) over line indexes.
Opcode = tuple[str, int, int, int, int]


@dataclass(frozen=True, slots=True)
class TextDiff:
    """A unified diff. ``text`` is empty when the two texts are equal.

    ``complete``: false when ``text`` was cut at ``max_chars`` (then it cannot be applied).
    ``coarse``: the edit was too big to search line by line within the budget; the changed
    middle is one hunk (exact, not minimal). ``added`` / ``removed``: lines, over the whole
    diff, cut or not.
    """

    text: str
    complete: bool = True
    coarse: bool = False
    added: int = 0
    removed: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "diff": self.text,
            "complete": self.complete,
            "coarse": self.coarse,
            "added_lines": self.added,
            "removed_lines": self.removed,
        }


def unified_diff(
    old: str,
    new: str,
    *,
    from_label: str = "previous",
    to_label: str = "current",
    context: int = CONTEXT_LINES,
    max_chars: int = MAX_DIFF_CHARS,
    budget: int = DIFF_BUDGET,
) -> TextDiff:
    """The unified diff that turns ``old`` into ``new`` (see the module for its bounds)."""
    a, b = split_lines(old), split_lines(new)
    opcodes, coarse = line_opcodes(a, b, budget=budget)
    removed = sum(i2 - i1 for tag, i1, i2, _, _ in opcodes if tag != "equal")
    added = sum(j2 - j1 for tag, _, _, j1, j2 in opcodes if tag != "equal")
    if not added and not removed:
        return TextDiff("")
    header = f"--- {_label(from_label)}\n+++ {_label(to_label)}\n"
    parts = [header]
    size = len(header)
    complete = True
    for hunk in _hunks(opcodes, context):
        text = "".join(_hunk_lines(hunk, a, b))
        if size + len(text) > max_chars:
            complete = False
            if len(parts) == 1:  # not even one whole hunk fits: its first lines that do
                cut = text[: max(0, max_chars - size)]
                parts.append(cut[: cut.rfind("\n") + 1])
            break
        parts.append(text)
        size += len(text)
    return TextDiff("".join(parts), complete, coarse, added, removed)


def split_lines(text: str) -> list[str]:
    """``text`` as lines that keep their ``\\n``; the last one may have none."""
    lines = text.split("\n")
    last = lines.pop()
    result = [line + "\n" for line in lines]
    if last:
        result.append(last)
    return result


def _label(label: str) -> str:
    # A label is one line of the header whatever it holds.
    return label.replace("\n", " ").replace("\r", " ")


# --- the line diff ----------------------------------------------------------------------------


def line_opcodes(a: Sequence[str], b: Sequence[str], *, budget: int) -> tuple[list[Opcode], bool]:
    """Opcodes turning lines ``a`` into lines ``b``, and whether the middle was left coarse."""
    prefix = 0
    limit = min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    a_end, b_end = len(a) - suffix, len(b) - suffix
    middle = _middle_opcodes(a[prefix:a_end], b[prefix:b_end], budget)
    coarse = middle is None
    if middle is None:
        middle = [_edit(0, a_end - prefix, 0, b_end - prefix)]
    opcodes: list[Opcode] = []
    if prefix:
        opcodes.append(("equal", 0, prefix, 0, prefix))
    for tag, i1, i2, j1, j2 in middle:
        if i1 != i2 or j1 != j2:
            opcodes.append((tag, i1 + prefix, i2 + prefix, j1 + prefix, j2 + prefix))
    if suffix:
        opcodes.append(("equal", a_end, len(a), b_end, len(b)))
    return opcodes, coarse


def _edit(i1: int, i2: int, j1: int, j2: int) -> Opcode:
    tag = "replace" if i1 < i2 and j1 < j2 else "delete" if i1 < i2 else "insert"
    return (tag, i1, i2, j1, j2)


def _middle_opcodes(a: Sequence[str], b: Sequence[str], budget: int) -> list[Opcode] | None:
    """Myers' shortest edit script as opcodes; ``None`` when it costs more than ``budget``."""
    if not a or not b:
        return [_edit(0, len(a), 0, len(b))]
    ids: dict[str, int] = {}
    x_lines = [ids.setdefault(line, len(ids)) for line in a]
    y_lines = [ids.setdefault(line, len(ids)) for line in b]
    trace = _myers_trace(x_lines, y_lines, budget)
    if trace is None:
        return None
    return _opcodes_from_path(_backtrack(trace, len(a), len(b)))


def _myers_trace(a: list[int], b: list[int], budget: int) -> list[list[int]] | None:
    """The furthest-reaching x per diagonal after each round d, until the end is reached.

    ``trace[d][k + d]`` is the x reached on diagonal ``k = x - y`` with d edits. Work (diagonals
    visited plus diagonal steps taken) is counted against ``budget``.
    """
    n, m = len(a), len(b)
    trace: list[list[int]] = []
    previous: list[int] = []
    work = 0
    for d in range(n + m + 1):
        row = [0] * (d + 1)
        for index in range(d + 1):
            k = 2 * index - d
            # From the diagonal above (an insertion) or the one to the left (a deletion).
            if index == 0 or (index != d and previous[index - 1] < previous[index]):
                x = previous[index] if d else 0
            else:
                x = previous[index - 1] + 1
            y = x - k
            start = x
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            work += x - start
            row[index] = x
            if x >= n and y >= m:
                trace.append(row)
                return trace
        trace.append(row)
        previous = row
        work += d + 1
        if work > budget:
            return None
    return None  # unreachable: d = n + m always reaches the end


def _backtrack(trace: list[list[int]], n: int, m: int) -> list[tuple[int, int]]:
    """The points of the path from (0, 0) to (n, m), in order, one per step."""
    x, y = n, m
    path = [(x, y)]
    for d in range(len(trace) - 1, 0, -1):
        previous = trace[d - 1]
        k = x - y
        index = (k + d) // 2
        if index == 0 or (index != d and previous[index - 1] < previous[index]):
            prev_index = index  # came down: an insertion, from diagonal k + 1
            prev_k = k + 1
        else:
            prev_index = index - 1  # came right: a deletion, from diagonal k - 1
            prev_k = k - 1
        prev_x = previous[prev_index]
        prev_y = prev_x - prev_k
        mid_x, mid_y = (prev_x, prev_y + 1) if prev_k == k + 1 else (prev_x + 1, prev_y)
        while x > mid_x and y > mid_y:  # the diagonal run after the edit
            x -= 1
            y -= 1
            path.append((x, y))
        x, y = prev_x, prev_y
        path.append((x, y))
    while x > 0 and y > 0:  # the run at the start, before any edit
        x -= 1
        y -= 1
        path.append((x, y))
    path.reverse()
    return path


def _opcodes_from_path(path: list[tuple[int, int]]) -> list[Opcode]:
    """Steps of the path grouped into runs: diagonal steps are equal lines, the others one
    edit block (deletions before insertions within it, as unified diffs show them)."""
    opcodes: list[Opcode] = []
    run_start = path[0]
    equal_run = True
    for (x0, y0), (x1, y1) in pairwise(path):
        diagonal = x1 == x0 + 1 and y1 == y0 + 1
        if diagonal != equal_run:
            _close_run(opcodes, run_start, (x0, y0), equal_run)
            run_start, equal_run = (x0, y0), diagonal
    _close_run(opcodes, run_start, path[-1], equal_run)
    return opcodes


def _close_run(
    opcodes: list[Opcode], start: tuple[int, int], end: tuple[int, int], equal: bool
) -> None:
    (i1, j1), (i2, j2) = start, end
    if i1 == i2 and j1 == j2:
        return
    opcodes.append(("equal", i1, i2, j1, j2) if equal else _edit(i1, i2, j1, j2))


# --- hunks ------------------------------------------------------------------------------------


def _hunks(opcodes: list[Opcode], context: int) -> Iterator[list[Opcode]]:
    """The opcodes grouped into hunks: each change with up to ``context`` equal lines around it,
    changes closer than twice that sharing a hunk (difflib's grouping)."""
    codes = list(opcodes)
    if codes and codes[0][0] == "equal":
        _, i1, i2, j1, j2 = codes[0]
        codes[0] = ("equal", max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if codes and codes[-1][0] == "equal":
        _, i1, i2, j1, j2 = codes[-1]
        codes[-1] = ("equal", i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, i1 + context, j1, j1 + context))
            yield group
            group = []
            i1, j1 = i2 - context, j2 - context
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _range(start: int, end: int) -> str:
    length = end - start
    if length == 1:
        return str(start + 1)
    if length == 0:
        return f"{start},0"  # an empty range names the line before it
    return f"{start + 1},{length}"


def _hunk_lines(hunk: list[Opcode], a: Sequence[str], b: Sequence[str]) -> Iterator[str]:
    first, last = hunk[0], hunk[-1]
    yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
    for tag, i1, i2, j1, j2 in hunk:
        if tag == "equal":
            yield from _marked(" ", a[i1:i2])
            continue
        yield from _marked("-", a[i1:i2])
        yield from _marked("+", b[j1:j2])


def _marked(mark: str, lines: Sequence[str]) -> Iterator[str]:
    for line in lines:
        if line.endswith("\n"):
            yield mark + line
        else:
            yield f"{mark}{line}\n{NO_NEWLINE}"


# --- metadata ---------------------------------------------------------------------------------


def metadata_changes(
    old: Mapping[str, Any], new: Mapping[str, Any], fields: Sequence[str] = TRACKED_METADATA
) -> dict[str, dict[str, Any]]:
    """``{field: {"old": …, "new": …}}`` for each of ``fields`` whose value differs."""
    return {
        name: {"old": old.get(name), "new": new.get(name)}
        for name in fields
        if old.get(name) != new.get(name)
    }


__all__ = [
    "CONTEXT_LINES",
    "DIFF_BUDGET",
    "MAX_DIFF_CHARS",
    "TRACKED_METADATA",
    "TextDiff",
    "line_opcodes",
    "metadata_changes",
    "split_lines",
    "unified_diff",
]
