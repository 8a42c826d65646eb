"""What no answer may hold, on any surface (HTTP, MCP over HTTP or stdio, webhooks, the
dashboard): a Python traceback, the name of an exception class, or SQL. Each is what an error
that escaped its handler looks like from outside, and each tells an attacker about the inside.

The input a refusal echoes (a 422's ``input``) is the client's own, so it is taken out before
looking: a hostile value that spells ``SELECT … FROM`` is not a leak when it is sent back.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable

#: Name -> pattern. Case-sensitive on purpose: a dashboard's ``<select>`` is not SQL.
PATTERNS: dict[str, re.Pattern[str]] = {
    "a traceback": re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+"),
    # ValueError, IntegrityError, TaskCrawlerError, OSError, HTTPException, …: a class name,
    # CamelCase or an acronym, ending as exception classes do (not the word "Error" alone, nor
    # MCP's own "isError").
    "an exception class": re.compile(
        r"\b(?:(?:[A-Z][A-Za-z0-9]*)?[a-z0-9]|[A-Z][A-Z0-9]*)(?:Error|Exception)\b"
    ),
    "a driver or ORM": re.compile(
        r"\b(?:sqlalchemy|asyncpg|aiosqlite|sqlite3|psycopg2?|pydantic_core)\.|sqlalche\.me"
    ),
    "SQL": re.compile(
        r"\[SQL: |\[parameters: |\bSELECT\b[^\n]{0,400}?\bFROM\b|\bINSERT INTO\b|"
        r"\bUPDATE \w+ SET\b|\bDELETE FROM\b|\bWHERE\b[^\n]{0,200}?\$\d|\bWHERE\b[^\n]{0,200}?\?"
    ),
}

#: Name -> texts of which every match of ``PATTERNS[name]`` holds one: a body that holds none
#: cannot match, and looking for a few plain texts costs far less than a search with the
#: pattern (which tries it at every word boundary). A fuzz run looks at 35,000 bodies.
CLUES: dict[str, tuple[str, ...]] = {
    "a traceback": ("Traceback (most recent call last)", 'File "'),
    "an exception class": ("Error", "Exception"),
    "a driver or ORM": (
        "sqlalche",
        "asyncpg.",
        "aiosqlite.",
        "sqlite3.",
        "psycopg",
        "pydantic_core.",
    ),
    "SQL": ("[SQL: ", "[parameters: ", "SELECT", "INSERT INTO", "UPDATE ", "DELETE FROM", "WHERE"),
}

#: Names of the schema's models that a document may legitimately hold (FastAPI's own).
_DOCUMENTED = re.compile(r"\bHTTPValidationError\b")


def _spellings(value: object) -> tuple[str, ...]:
    """How an echoed ``value`` may appear in a body: as itself, JSON-escaped, or repr'd."""
    text = value if isinstance(value, str) else json.dumps(value, allow_nan=True, default=str)
    return _spellings_of(text)


@functools.lru_cache(maxsize=1024)
def _spellings_of(text: str) -> tuple[str, ...]:
    """The fuzzers echo the same values on every surface (a 300,000-character one among them):
    each is spelled once."""
    return tuple(
        sorted(
            {text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1], repr(text)},
            key=len,
            reverse=True,
        )
    )


def leaks(body: str | bytes, echoed: Iterable[object] = ()) -> list[str]:
    """What ``body`` shows that it must not (``"SQL: …"``), after taking out ``echoed``."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    for value in echoed:
        for spelling in _spellings(value):
            if spelling:
                text = text.replace(spelling, "")
    text = _DOCUMENTED.sub("", text)
    found = []
    for name, pattern in PATTERNS.items():
        if not any(clue in text for clue in CLUES[name]):
            continue
        if (match := pattern.search(text)) is not None:
            start = max(0, match.start() - 60)
            found.append(f"{name}: …{text[start : match.end() + 60]}…")
    return found


def assert_no_leak(body: str | bytes, where: str, echoed: Iterable[object] = ()) -> None:
    found = leaks(body, echoed)
    assert not found, f"{where} shows what no client may see:\n" + "\n".join(found)
