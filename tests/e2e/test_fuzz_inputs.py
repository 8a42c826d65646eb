"""Property-based fuzzing of every input surface of the API, on SQLite and on PostgreSQL.

A *surface* is one place a request carries input: a path parameter, a query parameter, a header
(``Authorization`` on every route, and the ones routes declare), a field of a JSON body, the body
as a whole, or a field the body should not have. Surfaces are enumerated from the running app:
its OpenAPI schema, plus the routes it leaves out of the schema (the dashboard, the docs). A new
endpoint is fuzzed as soon as it exists, or ``test_every_surface_can_be_fuzzed`` fails naming
what it lacks (a baseline value for a required parameter or field).

Each case is a valid request (the *baseline*) with one surface replaced by a hostile value: NUL,
lone surrogates, huge strings, control characters, odd Unicode, IDNA oddities, naive and
overflowing dates, non-finite and huge numbers, wrong types, broken JSON. Every answer must be
below 500, an error must be strict JSON, a 4xx must leave the database as it was, and no answer
may show a traceback, an exception's class or SQL (tests/support/leaks.py).

Cursors and ``since`` get forgeries made from their own grammar besides (tests/support/
cursors.py): valid encodings whose parts are out of range (instants that overflow in UTC,
sequences past 64 bits, ids of every length and spelling), which random text never reaches.
The MCP tools are surfaces too: each argument of each tool, over ``/mcp`` here and over
``taskcrawler mcp`` (stdio) against a served API.

``tests/e2e/test_schemathesis.py`` beside this one checks the other direction: requests made
from the schema, answered as the schema documents.

Cost: ``TASKCRAWLER_FUZZ_EXAMPLES`` generated values per surface and database (default 4), on
top of the explicit hostile values every surface always gets: about 17,600 requests a database,
2,200 of them MCP tool calls over ``/mcp``, then about 1,300 calls over stdio. The surfaces are
fuzzed in :data:`SHARDS` parts per database, each a test that the suite's processes share.
``TASKCRAWLER_FUZZ_EXAMPLES=200`` makes a long hunt.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import sqlite3
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

import asyncpg
import httpx
import orjson
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from sqlalchemy.dialects import postgresql as postgresql_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from taskcrawler.api import create_app
from taskcrawler.domain import JobStatus
from taskcrawler.settings import Settings
from taskcrawler.storage import Database
from taskcrawler.storage.tables import (
    api_keys,
    idempotent_requests,
    job_contents,
    job_links,
    job_runs,
    jobs,
    page_archive,
    webhook_deliveries,
)
from tests.e2e.harness import Service, fast_settings, running
from tests.support.asgi import Answer, DirectClient
from tests.support.cursors import EXPLICIT_CURSORS, ID_SPELLINGS, cursors
from tests.support.fuzzing import fuzz_settings
from tests.support.leaks import assert_no_leak
from tests.support.processes import ProcessManager, clean_env
from tests.support.served import serve

if TYPE_CHECKING:
    from taskcrawler.mcp_server.tools import ToolSpec

EXAMPLES = int(os.environ.get("TASKCRAWLER_FUZZ_EXAMPLES", "4"))

# --- hostile values ---------------------------------------------------------------------------

#: Characters that have broken parsers, databases, IDNA or logs somewhere.
ODD_CHARACTERS = [
    "\x00",  # NUL: PostgreSQL refuses it in text and JSON
    "\ud800",  # a lone high surrogate: no UTF-8 for it
    "\udfff",  # a lone low surrogate
    "\x7f",
    "\x1b",  # escape: terminal control in logs
    "\r",
    "\n",
    "\t",
    "\u0085",  # next line
    "\u2028",  # line separator
    "\u200b",  # zero-width space
    "\u200d",  # zero-width joiner
    "\u00ad",  # soft hyphen: IDNA drops it
    "\u202e",  # right-to-left override
    "\ufeff",  # byte order mark
    "\u0301",  # a combining accent with nothing to combine with
    "\u2488",  # ⒈: IDNA maps it to "1."
    "\uff0e",  # full-width full stop: IDNA maps it to "."
    "\u3002",  # ideographic full stop: a dot too
    "\u2168",  # Roman numeral nine: "ix"
    "\U0001f600",  # outside the BMP
    "\uffff",  # a noncharacter
    "ß",
    "ς",
    "İ",
    "%",
    "%00",
    "\\",
    "'",
    '"',
    "/",
    "..",
    "@",
    ":",
    "#",
    "?",
]

#: Values every text surface always gets, whatever Hypothesis draws.
CORE_TEXT_EXAMPLES = [
    "",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\ud83d",  # half of an emoji
    "\u2488.example",
    "a\u200bb.example",
    "\r\nX-Injected: 1",
    "x" * 300_000,
]
#: And those where a value is read as a URL, a date or a number (every field, parameter and
#: declared header: which is read how is the app's business, not the fuzzer's).
HOSTILE_TEXT_EXAMPLES = [
    *CORE_TEXT_EXAMPLES,
    "http://\u2488.example/",
    "http://a\u200bb.example/",
    "http://example.com:0/",
    "http://a..example/",
    "http://" + "a" * 64 + ".example/",
    "2024-01-01T00:00:00",  # a date without a time zone
    "0001-01-01T00:00:00+14:00",  # a date before year 1 in UTC
    "9999-12-31T23:59:59-14:00",  # and after 9999
    "NaN",
    "-Infinity",
    "1e999",
    str(2**64),
    "../../../../etc/passwd",
]

#: What JSON bodies always get beyond text: numbers that are not, and the wrong types.
HOSTILE_JSON_EXAMPLES: list[Any] = [
    float("nan"),
    float("inf"),
    float("-inf"),
    2**63,
    -(2**64),
    10**400,
    1e308,
    -0.0,
    None,
    True,
    [],
    {},
    ["\x00"],
    {"\x00": "\ud800"},
]


@dataclass(frozen=True)
class RawBody:
    """A body sent as these bytes (JSON encoders cannot write all that a hostile client can)."""

    content: bytes


RAW_BODIES = [
    RawBody(b""),
    RawBody(b"{"),
    RawBody(b"\xff\xfe{}"),  # not UTF-8
    RawBody(b"[" * 100_000 + b"]" * 100_000),  # nesting a recursive parser cannot follow
    RawBody(b'{"url": ' + b"9" * 5000 + b"}"),  # an integer over Python's digit limit
    RawBody(b'{"url": "http://a.example/", "url": "http://\\u0000/"}'),  # a duplicate key
]


def _surrogates() -> st.SearchStrategy[str]:
    return st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)


def _hostile_dates() -> st.SearchStrategy[str]:
    offsets = st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59).map(
        lambda minutes: timezone(timedelta(minutes=minutes))
    )
    naive = st.datetimes().map(datetime.isoformat)
    aware = st.builds(
        lambda moment, zone: moment.replace(tzinfo=zone).isoformat(), st.datetimes(), offsets
    )
    return naive | aware | st.dates().map(str)


def _hostile_urls() -> st.SearchStrategy[str]:
    label = st.text(
        alphabet=st.sampled_from([*"abc-_09", *ODD_CHARACTERS[:22]]), min_size=0, max_size=70
    )
    host = st.lists(label, min_size=1, max_size=4).map(".".join)
    port = st.sampled_from(["", ":0", ":1", ":65535", ":65536", ":-1", ":", ":0x50"])
    return st.builds(
        lambda scheme, h, p, path: f"{scheme}://{h}{p}/{path}",
        st.sampled_from(["http", "https", "HTTP", "ftp", "javascript", ""]),
        host,
        port,
        st.text(max_size=20),
    )


def hostile_text() -> st.SearchStrategy[str]:
    odd = st.lists(
        st.sampled_from(ODD_CHARACTERS) | st.text(max_size=3), min_size=1, max_size=12
    ).map("".join)
    huge = st.builds(
        lambda piece, count: piece * count,
        st.sampled_from(["a", "\x00", "é", "\U0001f600", "\ud800", "<", "%00"]),
        st.integers(min_value=1_000, max_value=400_000),
    )
    anything = st.text(alphabet=st.characters(codec=None) | _surrogates(), max_size=40)
    return st.one_of(odd, anything, _hostile_dates(), _hostile_urls(), huge)


def hostile_json() -> st.SearchStrategy[Any]:
    numbers = st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(2**80), max_value=2**80),
    )
    scalars = st.one_of(hostile_text(), numbers, st.none(), st.booleans())
    return st.one_of(
        scalars,
        st.lists(scalars, max_size=6),
        st.dictionaries(hostile_text(), scalars, max_size=4),
    )


# --- surfaces ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    params: tuple[tuple[str, str, bool], ...]  # (location, name, required)
    body: dict[str, Any] | None = None  # the JSON schema of the body, $refs resolved

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class Surface:
    operation: Operation
    location: str  # path, query, header, body (a field), body-whole, body-extra
    name: str

    @property
    def label(self) -> str:
        return f"{self.operation.label} [{f'{self.location} {self.name}'.strip()}]"


#: A path parameter in a route's template: ``{job_id}``, ``{path:path}``.
_PARAMETER = re.compile(r"{(\w+)(?::\w+)?}")
#: Methods a route answers that are not operations of their own.
_IMPLICIT_METHODS = {"HEAD"}


def operations(app: FastAPI) -> list[Operation]:
    """Every operation the app serves: those of its schema, then the routes outside it."""
    schema = app.openapi()
    found: list[Operation] = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            params = tuple(
                (p["in"], p["name"], bool(p.get("required")))
                for p in operation.get("parameters", [])
            )
            content = operation.get("requestBody", {}).get("content", {})
            body = content.get("application/json", {}).get("schema")
            found.append(
                Operation(method.upper(), path, params, _resolved(schema, body) if body else None)
            )
    documented = {(op.method, op.path) for op in found}
    for method, path in _routes(app):
        if (method, path) not in documented:
            params = tuple(("path", name, True) for name in _PARAMETER.findall(path))
            found.append(Operation(method, _PARAMETER.sub(r"{\1}", path), params))
    return found


def _routes(app: FastAPI) -> Iterator[tuple[str, str]]:
    """``(method, path)`` of every route (the app declares them all on its own router)."""
    for route in app.routes:
        if not (hasattr(route, "path") and hasattr(route, "methods")):
            raise AssertionError(f"a route of a kind this fuzzer cannot read: {route!r}")
        for method in sorted(set(route.methods or ()) - _IMPLICIT_METHODS):
            yield method, route.path


def _resolved(schema: dict[str, Any], node: Any) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            return _resolved(schema, schema["components"]["schemas"][name])
        return {key: _resolved(schema, value) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolved(schema, item) for item in node]
    return node


#: Query parameters and tool arguments that take a cursor the service made: they get forgeries
#: from the cursor grammar too.
CURSOR_NAMES = frozenset({"cursor", "since"})
#: Documents about the API rather than answers of it: they name its models (and may quote
#: code), so the leak check leaves them out.
DOCUMENTS = ("/openapi.json", "/docs", "/redoc", "/static/")
#: How an MCP tool call is an operation here: ``TOOL <name>``.
TOOL = "TOOL"


def mcp_tools() -> dict[str, ToolSpec]:
    """The MCP server's tools, imported by the tests that call them: the MCP SDK costs about
    0.7 s of CPU to import, and every test process imports this module to collect it."""
    from taskcrawler.mcp_server import TOOLS

    return TOOLS


def tool_surfaces() -> list[Surface]:
    """Each argument of each MCP tool, and the arguments as a whole."""
    found = []
    for name, spec in mcp_tools().items():
        operation = Operation(TOOL, name, ())
        properties = spec.args.model_json_schema()["properties"]
        found += [Surface(operation, "argument", field) for field in properties]
        found.append(Surface(operation, "arguments-whole", ""))
    return found


def surfaces_of(operation: Operation) -> list[Surface]:
    found = [Surface(operation, location, name) for location, name, _ in operation.params]
    found.append(Surface(operation, "header", "Authorization"))
    if operation.body is not None:
        found += [Surface(operation, "body", name) for name in operation.body["properties"]]
        found += [Surface(operation, "body-whole", ""), Surface(operation, "body-extra", "")]
    return found


# --- baselines: a valid request to put one hostile value into -----------------------------------


@dataclass
class Context:
    """What baselines point at: ids of things that exist, and an admin key to act with."""

    admin: str = ""
    victim_key_id: str = ""
    job_id: str = ""
    monitor_id: str = ""
    crawl_id: str = ""
    batch_id: str = ""


#: A valid value for each required input; optional ones are left out of the baseline.
BASELINES: dict[tuple[str, str], Callable[[Context], Any]] = {
    ("path", "job_id"): lambda ctx: ctx.job_id,
    ("path", "key_id"): lambda ctx: ctx.victim_key_id,
    ("path", "path"): lambda ctx: "dashboard.css",
    ("query", "target"): lambda ctx: "http://fuzz.example/",
    ("body", "url"): lambda ctx: "http://fuzz.example/",
    ("body", "urls"): lambda ctx: ["http://fuzz.example/batch"],
    ("body", "name"): lambda ctx: "fuzzed",
    ("path", "monitor_id"): lambda ctx: ctx.monitor_id,
    ("path", "run"): lambda ctx: "0",
    ("query", "from"): lambda ctx: "0",
    ("query", "to"): lambda ctx: "0",
    ("body", "interval_seconds"): lambda ctx: 3600,
    ("query", "q"): lambda ctx: "fuzz",
    ("path", "crawl_id"): lambda ctx: ctx.crawl_id,
    ("path", "batch_id"): lambda ctx: ctx.batch_id,
    # An extract is kept as a batch of json jobs: a batch's id reads as one.
    ("path", "extract_id"): lambda ctx: ctx.batch_id,
    # No search engine is configured: a search is a 400 that says so, whatever its body.
    ("body", "query"): lambda ctx: "fuzz",
    # No change exists yet: an unknown one is a valid request all the same (a 404).
    ("path", "change_id"): lambda ctx: "00000000-0000-4000-8000-000000000000",
    # Firecrawl's routes that TaskCrawler does not offer answer Firecrawl's 404.
    ("path", "rest"): lambda ctx: "agent",
    # The job took no screenshot: asking for its first is a valid request all the same.
    ("path", "kind"): lambda ctx: "screenshots",
    ("path", "index"): lambda ctx: "0",
}


#: A valid call of each tool; one that neither waits nor fetches for long.
TOOL_BASELINES: dict[str, Callable[[Context], dict[str, Any]]] = {
    "scrape": lambda ctx: {"url": "http://fuzz.example/tool", "wait_seconds": 0},
    "map": lambda ctx: {"url": "http://fuzz.example/"},
    "crawl": lambda ctx: {"url": "http://fuzz.example/tool-site"},
    "crawl_status": lambda ctx: {"crawl_id": ctx.crawl_id},
    "search": lambda ctx: {"q": "fuzz"},
    "get_job": lambda ctx: {"job_id": ctx.job_id},
}


def tool_call(surface: Surface, ctx: Context, value: Any, call_id: int = 1) -> bytes:
    """The JSON-RPC line of the tool call with ``value`` in ``surface``; any JSON-ish value
    (NaN, lone surrogates, as ``\\ud800``) as a hostile client would write it."""
    name = surface.operation.path
    if surface.location == "arguments-whole":
        arguments = value
    else:
        arguments = {**TOOL_BASELINES[name](ctx), surface.name: value}
    document = {
        "jsonrpc": "2.0",
        "id": call_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return json.dumps(document, allow_nan=True).encode()


def missing_baselines(operation: Operation) -> list[str]:
    required = [(location, name) for location, name, needed in operation.params if needed]
    if operation.body is not None:
        required += [("body", name) for name in operation.body.get("required", [])]
    return [
        f"{operation.label}: no baseline for the required {location} {name!r}"
        for location, name in required
        if (location, name) not in BASELINES
    ]


@dataclass
class Request:
    path_params: dict[str, str] = field(default_factory=dict)
    query: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # a JSON document, a RawBody, or None for no body


def baseline(operation: Operation, ctx: Context) -> Request:
    request = Request(headers={"Authorization": f"Bearer {ctx.admin}"})
    for location, name, required in operation.params:
        if not required:
            continue
        value = BASELINES[(location, name)](ctx)
        if location == "path":
            request.path_params[name] = value
        elif location == "query":
            request.query.append((name, value))
        else:
            request.headers[name] = value
    if operation.body is not None:
        request.body = {
            name: BASELINES[("body", name)](ctx) for name in operation.body.get("required", [])
        }
    return request


#: Path, query and header values are cut to this: HTTP servers refuse longer request lines and
#: headers before the app sees them (and httpx refuses to send URLs over 64 KiB).
MAX_LINE_CHARACTERS = 4000


def _as_text(value: Any) -> str:
    """A hostile value where only text goes (a URL, a header): JSON-ish text for the others."""
    if isinstance(value, str):
        return value[:MAX_LINE_CHARACTERS]
    return json.dumps(value, allow_nan=True)[:MAX_LINE_CHARACTERS]


def with_hostile(surface: Surface, request: Request, value: Any) -> Request:
    if surface.location == "path":
        request.path_params[surface.name] = _as_text(value)
    elif surface.location == "query":
        request.query = [(k, v) for k, v in request.query if k != surface.name]
        request.query.append((surface.name, _as_text(value)))
    elif surface.location == "header":
        request.headers[surface.name] = _as_text(value)
    elif surface.location == "body":
        request.body = {**request.body, surface.name: value}
    elif surface.location == "body-whole":
        request.body = value
    else:  # body-extra: a field no model has, with a hostile name
        request.body = {**request.body, f"x{_as_text(value)[:50]}": value}
    return request


def _encoded(text: str) -> str:
    """``text`` percent-encoded as its UTF-8 bytes, lone surrogates included (a client can send
    any bytes; the server decodes them, with replacement)."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def _header(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


# --- the state a 4xx must not change ----------------------------------------------------------


def _count(table: sa.Table) -> sa.ScalarSelect[Any]:
    return sa.select(sa.func.count()).select_from(table).scalar_subquery()


def _job_aggregates() -> list[sa.ScalarSelect[Any]]:
    """What a job write moves: how many in each state, runs, finishes, the newest."""
    by_status = [
        sa.select(sa.func.count()).where(jobs.c.status == status.value).scalar_subquery()
        for status in JobStatus
    ]
    return [
        *by_status,
        sa.select(sa.func.sum(jobs.c.run_count)).scalar_subquery(),
        sa.select(sa.func.count(jobs.c.finished_at)).scalar_subquery(),
        sa.select(sa.func.max(jobs.c.created_at)).scalar_subquery(),
    ]


#: One round trip for the counts of every table a request could write, and the jobs' state.
_STATE = sa.select(
    *_job_aggregates(),
    *(
        _count(table)
        for table in (
            jobs,
            job_runs,
            idempotent_requests,
            webhook_deliveries,
            job_contents,
            job_links,
            page_archive,
            api_keys,
        )
    ),
)
#: And the keys as they are (a rotation or a revocation changes no count).
_KEYS = sa.select(
    api_keys.c.id,
    api_keys.c.name,
    api_keys.c.revoked_at,
    api_keys.c.webhook_secret,
    api_keys.c.callback_url,
).order_by(api_keys.c.id)


async def fingerprint(db: Database) -> tuple[Any, ...]:
    """Everything a request could change, compactly: two queries."""
    async with db.read() as conn:
        state = (await conn.execute(_STATE)).one()
        keys = (await conn.execute(_KEYS)).all()
    return tuple(state), tuple(map(tuple, keys))


class SQLiteFingerprint:
    """:func:`fingerprint` of a SQLite file, read with the standard library's driver on the
    loop's thread: the same two queries without two hops to aiosqlite's thread (a fuzz run
    reads it after each of its 17,600 requests). WAL mode lets it read beside the app's
    connections, as any other reader would.

    SQLite's ``data_version`` moves whenever another connection commits: while it stands still
    the file is as it was, and so is its fingerprint (most cases are refusals that wrote
    nothing, so the two queries run only after the few that did)."""

    def __init__(self, path: str) -> None:
        self._connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        dialect = sqlite_dialect.dialect()
        literal = {"literal_binds": True}
        self._state = str(_STATE.compile(dialect=dialect, compile_kwargs=literal))
        self._keys = str(_KEYS.compile(dialect=dialect, compile_kwargs=literal))
        self._seen: tuple[int, tuple[Any, ...]] | None = None
        self.reads = 0  # of the fingerprint itself

    async def __call__(self) -> tuple[Any, ...]:
        [version] = self._connection.execute("PRAGMA data_version").fetchone()
        if self._seen is None or self._seen[0] != version:
            self.reads += 1
            state = self._connection.execute(self._state).fetchone()
            keys = self._connection.execute(self._keys).fetchall()
            self._seen = version, (tuple(state), tuple(map(tuple, keys)))
        return self._seen[1]

    async def aclose(self) -> None:
        self._connection.close()


class PostgresFingerprint:
    """:func:`fingerprint` of a PostgreSQL database, over an asyncpg connection of its own with
    its statements prepared once (SQLAlchemy's pool, compilation and result rows cost more
    than the queries on these small tables).

    A commit anywhere on the server changes its current snapshot (a newer ``xmax``, or one id
    fewer in progress): while the snapshot stands still, nothing was written, and the
    fingerprint read with it still holds. One round trip to see that; when it moved, one more
    reads the snapshot and the fingerprint in one statement."""

    def __init__(self, url: sa.URL) -> None:
        self._dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        dialect = postgresql_dialect.dialect()
        literal = {"literal_binds": True}
        state, keys = (
            str(query.compile(dialect=dialect, compile_kwargs=literal)) for query in (_STATE, _KEYS)
        )
        self._sql = [
            f"SELECT {_SNAPSHOT}",
            f"SELECT {_SNAPSHOT}, state.*, (SELECT array_agg(key ORDER BY key.id) "
            f"FROM ({keys}) AS key) FROM ({state}) AS state",
        ]
        self._connection: asyncpg.Connection | None = None
        self._statements: list[Any] = []
        self._seen: tuple[str, tuple[Any, ...]] | None = None
        self.reads = 0  # of the fingerprint itself

    async def __call__(self) -> tuple[Any, ...]:
        if self._connection is None:
            self._connection = await asyncpg.connect(self._dsn)
            self._statements = [await self._connection.prepare(sql) for sql in self._sql]
        snapshot, everything = self._statements
        if self._seen is None or self._seen[0] != await snapshot.fetchval():
            self.reads += 1
            row = await everything.fetchrow()
            keys = tuple(tuple(key) for key in row[-1] or ())
            self._seen = row[0], (tuple(row[1:-1]), keys)
        return self._seen[1]

    async def aclose(self) -> None:
        if self._connection is not None:
            await self._connection.close()


#: The server's current snapshot, as text: ``xmin:xmax:ids in progress``.
_SNAPSHOT = "pg_current_snapshot()::text"


Fingerprinter = SQLiteFingerprint | PostgresFingerprint


def fingerprinter(service: Service) -> Fingerprinter:
    """How to read :func:`fingerprint` of ``service``'s database cheapest."""
    url = sa.make_url(service.settings.database_url)
    if url.get_backend_name() == "sqlite":
        assert url.database is not None
        return SQLiteFingerprint(url.database)
    return PostgresFingerprint(url)


# --- the run ----------------------------------------------------------------------------------


class Fuzzer:
    """Sends each case to the app and checks its answer, on the test's loop: the explicit values
    straight from there, Hypothesis's generated ones from its (synchronous) thread."""

    def __init__(self, service: Service, loop: asyncio.AbstractEventLoop, ctx: Context) -> None:
        self.service = service
        self.loop = loop
        self.ctx = ctx
        self.cases: Counter[str] = Counter()
        self.statuses: Counter[int] = Counter()
        self._state: tuple[Any, ...] | None = None
        self._fingerprint = fingerprinter(service)
        # The cases go straight into the app: httpx's client costs more than the app per case.
        self.direct = DirectClient(service.app, service.client)

    async def fingerprint(self) -> tuple[Any, ...]:
        return await self._fingerprint()

    @property
    def fingerprint_reads(self) -> int:
        return self._fingerprint.reads

    async def begin(self) -> None:
        """Take the state before the first case."""
        self._state = await self._fingerprint()

    async def aclose(self) -> None:
        await self._fingerprint.aclose()

    def send(self, surface: Surface, value: Any) -> None:
        """:meth:`check` from another thread (the loop's would block): one hop per case."""
        asyncio.run_coroutine_threadsafe(self.check(surface, value), self.loop).result()

    async def check(self, surface: Surface, value: Any) -> None:
        """Send ``value`` in ``surface`` and check the answer and the database after it."""
        self.cases[surface.label] += 1
        if surface.operation.method == TOOL:
            response = await self._send_tool(surface, value)
        else:
            response = await self._send(surface, value)
        self.statuses[response.status_code] += 1
        await self._check(surface, value, response)

    async def _send(self, surface: Surface, value: Any) -> Answer:
        request = with_hostile(surface, baseline(surface.operation, self.ctx), value)
        path = surface.operation.path
        for name, text in request.path_params.items():
            path = path.replace("{" + name + "}", _encoded(text))
        if request.query:
            path += "?" + "&".join(f"{_encoded(k)}={_encoded(v)}" for k, v in request.query)
        headers: dict[str, bytes] = {k: _header(v) for k, v in request.headers.items()}
        content: bytes | None = None
        if isinstance(request.body, RawBody):
            content = request.body.content
        elif request.body is not None or surface.location == "body-whole":
            content = json.dumps(request.body, allow_nan=True).encode()
        if content is not None:
            headers["Content-Type"] = b"application/json"
        return await self.direct.request(
            surface.operation.method, path, content=content, headers=headers
        )

    async def _send_tool(self, surface: Surface, value: Any) -> Answer:
        """The call over ``/mcp``: an answer below 500 that shows nothing of the inside, and a
        refused call (an HTTP 4xx, a tool error) that changed nothing."""
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {self.ctx.admin}"}
        return await self.direct.request(
            "POST",
            "/mcp",
            content=tool_call(surface, self.ctx, value),
            headers={name: _header(text) for name, text in headers.items()},
        )

    async def _check(self, surface: Surface, value: Any, response: Answer) -> None:
        where = f"{surface.label} <- {_short(value)}: {response.status_code}"
        assert response.status_code < 500, f"{where} {response.text[:500]}"
        if not surface.operation.path.startswith(DOCUMENTS):
            echoed = [value] if isinstance(value, RawBody) else [value, _as_text(value)]
            assert_no_leak(response.content, where, echoed=echoed)
        media = response.headers.get("content-type", "")
        api_error = response.status_code >= 400 and surface.operation.path.startswith("/api/")
        if api_error or media.startswith("application/json"):
            try:
                orjson.loads(response.content)  # strict: no NaN, no lone surrogates
            except orjson.JSONDecodeError as exc:
                message = f"{where}: not strict JSON ({exc}): {response.text[:300]}"
                raise AssertionError(message) from None
        before, self._state = self._state, await self._fingerprint()
        if _refused(response.status_code) or _tool_error(surface, response):
            assert self._state == before, f"{where} changed the database"


def _refused(status: int) -> bool:
    """A 4xx refuses the request, save Firecrawl's 408: a scrape that was accepted (its job
    stored, its formats added) and not finished within the wait, which goes on."""
    return 400 <= status < 500 and status != 408


def _tool_error(surface: Surface, response: Any) -> bool:
    """A tool call the tool refused (its arguments, or what the API answered it)."""
    if surface.operation.method != TOOL or response.status_code != 200:
        return False
    result = response.json().get("result")
    return isinstance(result, dict) and result.get("isError") is True


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else f"{text[:100]}… ({len(text)} characters)"


def strategy_for(surface: Surface) -> st.SearchStrategy[Any]:
    if surface.name in CURSOR_NAMES:
        return _strategy("cursor")
    if surface.location in ("body", "argument", "arguments-whole"):
        return _strategy("json")
    if surface.location == "body-whole":
        return _strategy("body-whole")
    return _strategy("text")


@functools.cache
def _strategy(kind: str) -> st.SearchStrategy[Any]:
    """One strategy object per kind of surface, shared by all of them: Hypothesis validates a
    strategy once (its character sets cost about 0.1 s to build), and the values drawn are the
    same as from a fresh one."""
    if kind == "cursor":
        return hostile_text() | cursors()
    if kind == "json":
        return hostile_json()
    if kind == "body-whole":
        return hostile_json() | st.sampled_from(RAW_BODIES)
    return hostile_text()


def explicit_examples(surface: Surface) -> list[Any]:
    if surface.name == "Authorization":  # read by one dependency, the same on every route
        return list(CORE_TEXT_EXAMPLES)
    values: list[Any] = list(HOSTILE_TEXT_EXAMPLES)
    if surface.location.startswith(("body", "argument")):
        values += HOSTILE_JSON_EXAMPLES
    if surface.name in CURSOR_NAMES:
        values += EXPLICIT_CURSORS
    if surface.name.endswith("_id"):
        values += ID_SPELLINGS
    if surface.location == "body-whole":
        values += RAW_BODIES
    return values


async def fuzz_surface(fuzzer: Fuzzer, surface: Surface) -> None:
    """``surface``'s explicit values in turn, then Hypothesis's generated ones, all sent from
    the loop; raises on the first failure (a generated value shrunk to a minimal one)."""
    for value in explicit_examples(surface):
        await fuzzer.check(surface, value)
    await fuzz_drawn(fuzzer, surface)


async def fuzz_drawn(fuzzer: Fuzzer, surface: Surface) -> None:
    """The values :func:`fuzz_generated` would send to ``surface``, drawn once for all the
    surfaces of its kind; a failure hands the surface to Hypothesis, which shrinks it.

    Derandomized, Hypothesis seeds a run with the digest of its test's source: ``run`` below,
    the same for every surface. What it draws then depends on the strategy and on the constants
    it gathers from the loaded modules, so every surface of a kind gets the same values while
    ``sys.modules`` stays as it was (a module loaded meanwhile sends the surface to Hypothesis
    too). A run per surface cost more CPU than the app's answers to the values it drew."""
    modules = len(sys.modules)
    values = drawn(surface, modules)
    try:
        for value in values:
            await fuzzer.check(surface, value)
    except (Exception, BaseExceptionGroup):
        await asyncio.to_thread(fuzz_generated, fuzzer, surface)
        raise  # Hypothesis's own run passed: the failure seen stands
    if len(sys.modules) != modules:
        await asyncio.to_thread(fuzz_generated, fuzzer, surface)


class Drawing:
    """Takes the place of a :class:`Fuzzer` in :func:`fuzz_generated`: keeps what it is sent."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def send(self, surface: Surface, value: Any) -> None:
        self.values.append(value)


#: (strategy, how many modules were loaded) -> the values :func:`fuzz_generated` drew.
_DRAWN: dict[tuple[st.SearchStrategy[Any], int], tuple[Any, ...]] = {}


def drawn(surface: Surface, modules: int) -> tuple[Any, ...]:
    """The values :func:`fuzz_generated` sends to a surface of ``surface``'s kind while
    ``modules`` are loaded."""
    key = (strategy_for(surface), modules)
    if key not in _DRAWN:
        drawing = Drawing()
        fuzz_generated(drawing, surface)
        _DRAWN[key] = tuple(drawing.values)
    return _DRAWN[key]


class Sender(Protocol):
    def send(self, surface: Surface, value: Any) -> None: ...


def fuzz_generated(fuzzer: Sender, surface: Surface) -> None:
    """Hypothesis runs synchronously: in a thread, sending each case to the loop."""

    @fuzz_settings(EXAMPLES)
    @given(value=strategy_for(surface))
    def run(value: Any) -> None:
        fuzzer.send(surface, value)

    run()


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Host": "127.0.0.1:8000"}


# --- the tests --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def schema_app() -> FastAPI:
    """The app, for reading its schema and routes only (never started)."""
    return create_app(Settings(database_url="sqlite+aiosqlite:///unused.db"))


def test_every_surface_can_be_fuzzed(schema_app: FastAPI) -> None:
    found = operations(schema_app)
    problems = [problem for op in found for problem in missing_baselines(op)]
    for op in found:
        if op.body is not None and "properties" not in op.body:
            problems.append(f"{op.label}: a body that is not an object with properties")
        unknown = {location for location, _, _ in op.params} - {"path", "query", "header"}
        problems += [f"{op.label}: parameters in {where}" for where in sorted(unknown)]
    assert not problems, "\n".join(problems)
    labels = {op.label for op in found}
    # The map of what is fuzzed: the API, the dashboard, the docs; a route that disappears from
    # it disappears from here too, so the map is checked against what is known to exist.
    assert {
        "POST /api/v1/jobs",
        "GET /api/v1/jobs/{job_id}",
        "POST /api/v1/keys/{key_id}/webhook-secret",
        "GET /api/v1/links",
        "GET /jobs/{job_id}",
        "GET /static/{path}",
        "GET /metrics",
    } <= labels


class _Seeded(BaseModel):
    seed: str


def test_a_new_endpoint_without_baselines_is_named() -> None:
    app = FastAPI()

    @app.post("/api/v1/widgets/{widget_id}")
    async def start(widget_id: str, body: _Seeded, depth: int) -> None:
        """An endpoint this fuzzer has never seen: a required path, query and body field."""

    [operation] = [op for op in operations(app) if op.path.startswith("/api/")]
    assert missing_baselines(operation) == [
        "POST /api/v1/widgets/{widget_id}: no baseline for the required path 'widget_id'",
        "POST /api/v1/widgets/{widget_id}: no baseline for the required query 'depth'",
        "POST /api/v1/widgets/{widget_id}: no baseline for the required body 'seed'",
    ]
    assert [s.label for s in surfaces_of(operation)] == [
        "POST /api/v1/widgets/{widget_id} [path widget_id]",
        "POST /api/v1/widgets/{widget_id} [query depth]",
        "POST /api/v1/widgets/{widget_id} [header Authorization]",
        "POST /api/v1/widgets/{widget_id} [body seed]",
        "POST /api/v1/widgets/{widget_id} [body-whole]",
        "POST /api/v1/widgets/{widget_id} [body-extra]",
    ]


def test_every_surface_of_a_kind_draws_the_same_values() -> None:
    """What :func:`fuzz_drawn` stands on: Hypothesis's run for one surface draws what its run
    for another of the same kind would (a seed or a strategy of a surface's own would make the
    values drawn once for all of them wrong for all but one)."""
    job = Operation("GET", "/api/v1/jobs/{job_id}", (("path", "job_id", True),))
    tool = Operation(TOOL, "crawl_status", ())
    kinds = [
        (Surface(job, "path", "job_id"), Surface(job, "header", "Authorization")),
        (Surface(job, "query", "cursor"), Surface(tool, "argument", "since")),
        (Surface(tool, "argument", "crawl_id"), Surface(job, "body", "url")),
        (Surface(job, "body-whole", ""), Surface(tool, "body-whole", "")),
    ]
    for one, other in kinds:
        first, second = Drawing(), Drawing()
        fuzz_generated(first, one)
        fuzz_generated(second, other)
        assert len(first.values) == EXAMPLES
        assert repr(first.values) == repr(second.values), (one.label, other.label)
        assert repr(drawn(other, len(sys.modules))) == repr(tuple(first.values))


class _Picky:
    """A fuzzer that finds a text of more than three characters wrong: what it is sent, from
    the loop or from Hypothesis's thread, is kept."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def check(self, surface: Surface, value: Any) -> None:
        self.send(surface, value)

    def send(self, surface: Surface, value: Any) -> None:
        self.seen.append(value)
        assert not (isinstance(value, str) and len(value) > 3), "a long text"


async def test_a_drawn_value_that_fails_is_shrunk_by_hypothesis() -> None:
    surface = Surface(Operation("GET", "/api/v1/jobs", ()), "query", "q")
    values = drawn(surface, len(sys.modules))
    assert any(isinstance(value, str) and len(value) > 3 for value in values)
    picky = _Picky()
    with pytest.raises(AssertionError, match="a long text") as failed:
        await fuzz_drawn(picky, surface)  # type: ignore[arg-type]
    assert "run(" in "\n".join(getattr(failed.value, "__notes__", []))  # Hypothesis's report
    assert len(picky.seen) > len(values)  # the drawn values, then Hypothesis's own run
    assert len(picky.seen[-1]) > 3  # which replays the failure it shrank to last


#: The surfaces are fuzzed in this many parts per database, each a test of its own that the
#: suite's processes share (tests/support/scheduling.py: a ``shard`` is a work unit).
SHARDS = 4
shards = pytest.mark.parametrize(
    "shard", range(SHARDS), ids=[f"shard-{n + 1}-of-{SHARDS}" for n in range(SHARDS)]
)


# ~17,600 requests per database: the suite's default watchdog is sized for ordinary tests.
@pytest.mark.timeout(900)
@shards
async def test_every_input_surface_survives_hostile_values(sqlite_url: str, shard: int) -> None:
    """On SQLite. The same on PostgreSQL is tests/e2e/test_fuzz_inputs_postgresql.py."""
    await every_input_surface_survives_hostile_values(sqlite_url, shard)


async def every_input_surface_survives_hostile_values(database_url: str, shard: int) -> None:
    """The surfaces of part ``shard`` of :data:`SHARDS` (every one of them in some part)."""
    # No worker runs: a synchronous scrape would wait out its whole timeout for every case, so
    # the wait is the least there is (one look at the job: the same 408 as after any wait).
    settings = fast_settings(database_url=database_url, scrape_max_wait_seconds=0.001)
    async with running("api", settings) as service:
        admin, _ = await service.services.keys.create("fuzzer", is_admin=True)
        _, victim = await service.services.keys.create("victim")
        ctx = Context(admin=admin.token, victim_key_id=victim.id)
        fuzzer = Fuzzer(service, asyncio.get_running_loop(), ctx)
        without_jobs = await fuzzer.fingerprint()
        created = await service.client.post(
            "/api/v1/jobs",
            json={"url": "http://fuzz.example/job", "formats": ["links", "markdown"]},
            headers={"Authorization": f"Bearer {ctx.admin}"},
        )
        assert created.status_code == 201, created.text
        ctx.job_id = created.json()["id"]
        monitor = await service.client.post(
            "/api/v1/monitors",
            json={"url": "http://fuzz.example/watched", "interval_seconds": 3600},
            headers={"Authorization": f"Bearer {ctx.admin}"},
        )
        assert monitor.status_code == 201, monitor.text
        ctx.monitor_id = monitor.json()["id"]
        crawl = await service.client.post(
            "/api/v1/crawls",
            json={"url": "http://fuzz.example/site"},
            headers={"Authorization": f"Bearer {ctx.admin}"},
        )
        assert crawl.status_code == 201, crawl.text
        ctx.crawl_id = crawl.json()["id"]
        batch = await service.client.post(
            "/v1/batch/scrape",
            json={"urls": ["http://fuzz.example/batched"]},
            headers={"Authorization": f"Bearer {ctx.admin}"},
        )
        assert batch.status_code == 200, batch.text
        ctx.batch_id = batch.json()["id"]
        every = [surface for op in operations(service.app) for surface in surfaces_of(op)]
        every += tool_surfaces()
        found = every[shard::SHARDS]
        # The check that a refusal changed nothing sees a write, however it reads the database.
        assert await fuzzer.fingerprint() != without_jobs
        try:
            failures = await fuzz_all(fuzzer, found)
        finally:
            await fuzzer.aclose()
    backend = "postgresql" if database_url.startswith("postgresql") else "sqlite"
    tools = {s.label for s in found if s.operation.method == TOOL}
    cursor_cases = sum(n for label, n in fuzzer.cases.items() if _names_a_cursor(label))
    print(
        f"fuzz[{backend}, part {shard + 1} of {SHARDS}]: {sum(fuzzer.cases.values())} requests "
        f"over {len(found)} of {len(every)} surfaces of "
        f"{len({s.operation.label for s in found})} operations ({len(tools)} surfaces of "
        f"{len(mcp_tools())} MCP tools: {sum(fuzzer.cases[label] for label in tools)} calls; "
        f"{cursor_cases} to cursor and since surfaces); answers {dict(fuzzer.statuses)}; "
        f"the database read again after {fuzzer.fingerprint_reads} of them"
    )
    assert not failures, "\n\n".join(failures)
    assert all(fuzzer.cases[surface.label] > 0 for surface in found)


def _names_a_cursor(label: str) -> bool:
    return any(
        f"{kind} {name}]" in label for kind in ("query", "argument") for name in CURSOR_NAMES
    )


async def fuzz_all(fuzzer: Fuzzer, found: list[Surface]) -> list[str]:
    """Every surface in turn; the failures of all of them, each shrunk to a minimal value."""
    failures = []
    await fuzzer.begin()
    for surface in found:
        try:
            await fuzz_surface(fuzzer, surface)
        except (Exception, BaseExceptionGroup) as exc:
            failures.append(f"{surface.label}: {exc}")
    return failures


# --- MCP over stdio ---------------------------------------------------------------------------

STDIO_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "fuzzer", "version": "1"},
    },
}


def stdio_examples(surface: Surface) -> list[Any]:
    """The explicit values of a tool surface (Hypothesis's generated ones run over ``/mcp``:
    a process per value would make this test an hour)."""
    if surface.location == "arguments-whole":
        return list(HOSTILE_JSON_EXAMPLES)
    values: list[Any] = [*CORE_TEXT_EXAMPLES, *HOSTILE_JSON_EXAMPLES]
    if surface.name in CURSOR_NAMES:
        values += EXPLICIT_CURSORS
    if surface.name.endswith("_id"):
        values += ID_SPELLINGS
    return values


class StdioTools:
    """``taskcrawler mcp`` as a client drives it: one JSON-RPC line out, its answer back."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.sent = 0

    async def call(self, line: bytes) -> bytes:
        """``line`` must carry the id ``self.sent + 1``; the answer to it (notifications on
        the way are skipped; a line the server could not read is answered with id null)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.sent += 1
        self.process.stdin.write(line + b"\n")
        await self.process.stdin.drain()
        while True:
            answer = await asyncio.wait_for(self.process.stdout.readline(), 60)
            assert answer, "taskcrawler mcp ended"
            document = orjson.loads(answer)
            if document.get("id") == self.sent or (
                document.get("id") is None and "error" in document
            ):
                return answer


@pytest.mark.timeout(900)
async def test_mcp_over_stdio_shows_nothing_of_the_inside(
    database_url: str, processes: ProcessManager, tmp_path: Path
) -> None:
    served = await serve(processes, tmp_path, database_url, TASKCRAWLER_MAX_RETRIES="0")
    token = await served.new_key("fuzzer")
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=served.base_url, headers=auth, timeout=30) as http:
        job = await http.post("/api/v1/jobs", json={"url": "http://fuzz.example/stdio"})
        crawl = await http.post("/api/v1/crawls", json={"url": "http://fuzz.example/stdio-site"})
    assert job.status_code == 201 and crawl.status_code == 201, (job.text, crawl.text)
    ctx = Context(admin=token, job_id=job.json()["id"], crawl_id=crawl.json()["id"])
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "taskcrawler", "mcp", "--api", served.base_url],
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=2**24,
        env=clean_env({"TASKCRAWLER_API_KEY": token}),
    )
    tools = StdioTools(process)
    statuses: Counter[str] = Counter()
    try:
        tools.sent = -1  # initialize is call 0
        assert b'"result"' in await tools.call(orjson.dumps(STDIO_INITIALIZE))
        assert process.stdin is not None
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        found = tool_surfaces()
        for surface in found:
            for value in stdio_examples(surface):
                answer = await tools.call(tool_call(surface, ctx, value, tools.sent + 1))
                where = f"stdio {surface.label} <- {_short(value)}"
                assert_no_leak(answer, where, echoed=[value])
                document = orjson.loads(answer)
                result = document.get("result") or {}
                statuses[
                    "tool error"
                    if result.get("isError")
                    else "error"
                    if "error" in document
                    else "result"
                ] += 1
        # The forgeries of issue 31 are refusals that say what is wrong.
        cursor = Surface(Operation(TOOL, "crawl_status", ()), "argument", "cursor")
        for forged in EXPLICIT_CURSORS:
            answer = orjson.loads(await tools.call(tool_call(cursor, ctx, forged, tools.sent + 1)))
            text = answer["result"]["content"][0]["text"]
            assert answer["result"]["isError"] and "cursor" in text, answer
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
    backend = "postgresql" if database_url.startswith("postgresql") else "sqlite"
    print(
        f"fuzz-stdio[{backend}]: {tools.sent} calls over {len(found)} surfaces of "
        f"{len(mcp_tools())} MCP tools; answers {dict(statuses)}"
    )
