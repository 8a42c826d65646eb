"""A strict applier of unified diffs, written apart from the code that makes them.

It applies a diff the way ``patch`` would with no fuzz and no offset: every hunk must start at the
line its header names, its context and removed lines must equal the old text's exactly, its line
counts must match its header, and ``\\ No newline at end of file`` removes the newline of the line
before it. Anything else raises :class:`PatchError`, so a test using it fails on a diff that is
merely close.
"""

from __future__ import annotations

import re

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$")
NO_NEWLINE = "\\ No newline at end of file"


class PatchError(AssertionError):
    pass


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    last = parts.pop()
    lines = [part + "\n" for part in parts]
    if last:
        lines.append(last)
    return lines


def _start(number: int, count: int) -> int:
    # "-5,0" names the line before an empty range: the range starts after it.
    return number if count == 0 else number - 1


def apply_patch(old: str, diff: str) -> str:
    """``old`` with ``diff`` applied; ``diff == ""`` leaves it as it is."""
    if diff == "":
        return old
    source = _lines(old)
    rows = diff.split("\n")
    if rows[-1] != "":
        raise PatchError("the diff does not end with a newline")
    rows.pop()
    if len(rows) < 2 or not rows[0].startswith("--- ") or not rows[1].startswith("+++ "):
        raise PatchError("the diff has no ---/+++ header")
    result: list[str] = []
    consumed = 0  # lines of ``source`` used so far
    index = 2
    if index == len(rows):
        raise PatchError("a header without hunks")
    while index < len(rows):
        header = _HUNK.match(rows[index])
        if header is None:
            raise PatchError(f"expected a hunk header, got {rows[index]!r}")
        old_count = int(header.group(2) or "1")
        new_count = int(header.group(4) or "1")
        old_start = _start(int(header.group(1)), old_count)
        new_start = _start(int(header.group(3)), new_count)
        if old_start < consumed:
            raise PatchError("hunks overlap or are out of order")
        result.extend(source[consumed:old_start])
        consumed = old_start
        if len(result) != new_start:
            raise PatchError(
                f"the hunk says the new text is at line {new_start}, not {len(result)}"
            )
        index += 1
        seen_old = seen_new = 0
        while index < len(rows) and not rows[index].startswith("@@"):
            row = rows[index]
            index += 1
            mark, line = row[:1], row[1:] + "\n"
            if index < len(rows) and rows[index] == NO_NEWLINE:
                line = line[:-1]
                index += 1
            if mark in (" ", "-"):
                if consumed >= len(source) or source[consumed] != line:
                    found = source[consumed] if consumed < len(source) else "end of text"
                    raise PatchError(f"line {consumed + 1}: expected {line!r}, found {found!r}")
                consumed += 1
                seen_old += 1
            if mark in (" ", "+"):
                result.append(line)
                seen_new += 1
            if mark not in (" ", "-", "+"):
                raise PatchError(f"a hunk line starts with {mark!r}")
        if (seen_old, seen_new) != (old_count, new_count):
            raise PatchError(
                f"the hunk counts {old_count},{new_count} lines, it holds {seen_old},{seen_new}"
            )
    result.extend(source[consumed:])
    return "".join(result)
