"""tests/support/leaks.py looks for a few plain texts before it searches with a pattern: a body
without them is passed over, so each pattern's texts must be in every match of it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.leaks import CLUES, PATTERNS, leaks

#: A leak of each kind, each way its pattern can match.
SHOWN = {
    "a traceback": ["Traceback (most recent call last):", 'File "/app/x.py", line 12'],
    "an exception class": [
        "ValueError",
        "IntegrityError",
        "TaskCrawlerError",
        "xError",
        "OSError",
        "HTTPException",
    ],
    "a driver or ORM": [
        "sqlalchemy.exc",
        "asyncpg.exceptions",
        "aiosqlite.core",
        "sqlite3.Cursor",
        "psycopg.errors",
        "psycopg2.errors",
        "pydantic_core.core_schema",
        "https://sqlalche.me/e/20/gkpj",
    ],
    "SQL": [
        "[SQL: x]",
        "[parameters: (1,)]",
        "SELECT id FROM jobs",
        "INSERT INTO jobs",
        "UPDATE jobs SET",
        "DELETE FROM jobs",
        "WHERE id = $1",
        "WHERE id = ?",
    ],
}


def test_every_kind_of_leak_has_clues() -> None:
    assert CLUES.keys() == PATTERNS.keys() == SHOWN.keys()


@pytest.mark.parametrize("kind", sorted(SHOWN))
def test_each_way_a_pattern_matches_is_found(kind: str) -> None:
    for shown in SHOWN[kind]:
        assert PATTERNS[kind].search(shown), shown
        assert [found.split(":")[0] for found in leaks(f'{{"detail": "{shown}"}}')] == [kind]


def test_the_words_error_and_exception_alone_are_no_leak() -> None:
    assert leaks('{"detail": "Error: the page answered 404 (an Exception to the rule)"}') == []
    assert leaks('{"content": [], "isError": true}') == []


def test_a_leak_that_removing_an_echo_makes_is_found() -> None:
    """The clues are looked for after the echoed value is taken out, not before."""
    assert leaks("ValueErr<echo>or", echoed=["<echo>"])
    assert leaks("SELECT x <echo>FROM y", echoed=["<echo>"])


#: Pieces of leaks, and of texts that look like them without being one.
PIECES = [piece for shown in SHOWN.values() for piece in shown] + [
    "Error",
    "Exception",
    "Traceback",
    'File "',
    "line 3",
    "sqlalche",
    ".me",
    "SELECT",
    "FROM",
    "WHERE",
    "$1",
    "?",
    "UPDATE ",
    " SET",
    "\n",
    " ",
    "_",
]


@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=3), max_size=8).map("".join))
def test_the_clues_never_hide_a_match(text: str) -> None:
    expected = [kind for kind, pattern in PATTERNS.items() if pattern.search(text)]
    assert [found.split(":")[0] for found in leaks(text)] == expected
