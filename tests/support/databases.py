"""Databases for tests on a PostgreSQL server: create, drop, clone a template, reuse emptied.

Every database a run creates is marked with its owner (host, PID namespace, pid), so a later run
drops those a dead run left behind, and nothing else.
"""

from __future__ import annotations

import contextlib
import graphlib
import os
import secrets
import socket
from collections.abc import AsyncIterator

import asyncpg

from tests.support.postgres import asyncpg_url, with_database


def unique_name(prefix: str) -> str:
    """``prefix`` + 12 random hex digits: no clash between parallel runs, and short enough for
    PostgreSQL's 63-byte identifiers."""
    return f"{prefix}{secrets.token_hex(6)}"


async def admin_execute(admin_url: str, *statements: str) -> None:
    conn = await asyncpg.connect(asyncpg_url(admin_url), timeout=10)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


async def create_database(admin_url: str, name: str, template: str | None = None) -> str:
    """CREATE DATABASE (a copy of ``template`` when given); returns its SQLAlchemy URL."""
    clause = f' TEMPLATE "{template}"' if template else ""
    await admin_execute(admin_url, f'CREATE DATABASE "{name}"{clause}')
    return with_database(admin_url, name, driver="postgresql+asyncpg")


async def drop_database(admin_url: str, name: str) -> None:
    # WITH (FORCE) ends connections a test leaked (an engine not disposed, a killed worker's pool)
    # instead of failing the DROP; PostgreSQL 13+.
    await admin_execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.asynccontextmanager
async def temporary_database(
    admin_url: str, template: str | None = None, prefix: str = "tc_"
) -> AsyncIterator[str]:
    """A database of its own for the block, dropped afterwards; yields its SQLAlchemy URL."""
    name = unique_name(prefix)
    url = await create_database(admin_url, name, template)
    try:
        yield url
    finally:
        await drop_database(admin_url, name)


# Every database a test run creates carries this comment, so a later run on the same machine can
# tell databases of a run that died (kill -9, OOM, CI timeout) from those of a run still going.
_OWNER_MARK = "taskcrawler-tests owner="


def _owner_id(pid: int | None = None) -> str:
    # Host and PID namespace make a pid comparable: two containers may share a hostname-less
    # PostgreSQL but never a pid namespace.
    try:
        pidns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        pidns = 0
    return f"{socket.gethostname()}/{pidns}/{pid or os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def mark_owned(admin_url: str, name: str) -> None:
    await admin_execute(
        admin_url, f"COMMENT ON DATABASE \"{name}\" IS '{_OWNER_MARK}{_owner_id()}'"
    )


async def drop_abandoned_databases(admin_url: str) -> list[str]:
    """Drop databases that earlier test runs on this machine left behind when they died."""
    conn = await asyncpg.connect(asyncpg_url(admin_url), timeout=10)
    try:
        rows = await conn.fetch(
            "SELECT datname, shobj_description(oid, 'pg_database') AS note FROM pg_database"
            " WHERE shobj_description(oid, 'pg_database') LIKE $1",
            f"{_OWNER_MARK}%",
        )
    finally:
        await conn.close()
    host_ns = _owner_id().rsplit("/", 1)[0]
    dropped = []
    for row in rows:
        owner = row["note"].removeprefix(_OWNER_MARK)
        owner_host_ns, _, pid = owner.rpartition("/")
        if owner_host_ns == host_ns and pid.isdigit() and not _pid_alive(int(pid)):
            await drop_database(admin_url, row["datname"])
            dropped.append(row["datname"])
    return dropped


# Schema fingerprint: every object a test could add, change or drop, in a stable text form. A
# database whose fingerprint differs from the template's after a test is dropped, never reused.
_FINGERPRINT_SQL = r"""
WITH ns AS (
    SELECT oid, nspname FROM pg_namespace
    WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'
)
SELECT md5(coalesce(string_agg(item, E'\n' ORDER BY item), '')) FROM (
    SELECT 'ns ' || nspname FROM ns
    UNION ALL
    SELECT 'rel ' || ns.nspname || '.' || c.relname || ' ' || c.relkind::text
    FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
    UNION ALL
    SELECT 'col ' || ns.nspname || '.' || c.relname || '.' || a.attname || ' '
        || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' '
        || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN ns ON ns.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT 'idx ' || schemaname || ' ' || indexdef FROM pg_indexes
    WHERE schemaname IN (SELECT nspname FROM ns)
    UNION ALL
    SELECT 'con ' || ns.nspname || ' ' || conname || ' ' || pg_get_constraintdef(co.oid)
    FROM pg_constraint co JOIN ns ON ns.oid = co.connamespace
    UNION ALL
    SELECT 'fn ' || ns.nspname || '.' || p.proname || '('
        || pg_get_function_identity_arguments(p.oid) || ') ' || md5(coalesce(p.prosrc, ''))
    FROM pg_proc p JOIN ns ON ns.oid = p.pronamespace
    UNION ALL
    SELECT 'trg ' || t.tgrelid::regclass::text || ' ' || t.tgname
    FROM pg_trigger t WHERE NOT t.tgisinternal
    UNION ALL
    SELECT 'enum ' || e.enumtypid::regtype::text || ' ' || e.enumlabel FROM pg_enum e
    UNION ALL
    SELECT 'ext ' || extname || ' ' || extversion FROM pg_extension
    UNION ALL
    SELECT 'set ' || array_to_string(setconfig, ',') FROM pg_db_role_setting
    WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
    UNION ALL
    SELECT 'alembic ' || version_num FROM alembic_version
) AS items(item)
"""

_TABLES_SQL = r"""
SELECT format('%I.%I', n.nspname, c.relname)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT LIKE 'pg\_%'
    AND n.nspname <> 'information_schema' AND c.relname <> 'alembic_version'
"""

_FOREIGN_KEYS_SQL = """
SELECT conrelid::regclass::text AS child, confrelid::regclass::text AS parent
FROM pg_constraint WHERE contype = 'f'
"""

# Sequences a test advanced go back to their start, as in a fresh clone.
_RESET_SEQUENCES_SQL = r"""
SELECT setval(format('%I.%I', schemaname, sequencename), start_value, false)
FROM pg_sequences
WHERE last_value IS NOT NULL AND schemaname NOT LIKE 'pg\_%' AND schemaname <> 'information_schema'
"""


async def _emptying_script(conn: asyncpg.Connection) -> str:
    """One round trip that empties every table: DELETEs, children before parents.

    DELETE, not TRUNCATE: TRUNCATE makes new files for each table and index and costs ~120 ms for
    ``jobs`` with its cascade here; DELETE of a test's few rows takes ~1 ms.
    """
    tables = [row[0] for row in await conn.fetch(_TABLES_SQL)]
    order: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter({t: () for t in tables})
    for row in await conn.fetch(_FOREIGN_KEYS_SQL):
        if row["child"] != row["parent"]:
            order.add(row["parent"], row["child"])  # the parent after its children
    try:
        ordered = [t for t in order.static_order() if t in tables]
    except graphlib.CycleError:
        return f"TRUNCATE {', '.join(tables)} CASCADE" if tables else ""
    # No wait for the WAL flush at commit: these rows are test leftovers, and on a busy disk the
    # flush is most of the cost.
    return "SET synchronous_commit = off;" + "".join(f"DELETE FROM {t};" for t in ordered)


# A value for each type a required column may have; built from the live schema so the test does
# not break whenever the jobs table gains a column.
_VALUES = {
    "uuid": "gen_random_uuid()",
    "boolean": "false",
    "json": "'{}'",
    "jsonb": "'{}'",
    "bytea": "''",
}


async def insert_some_row(conn: asyncpg.Connection, table: str) -> None:
    """One row of placeholder values in ``table``, its only row (a test's leftovers, say)."""
    columns = await conn.fetch(
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_name = $1 AND is_nullable = 'NO' AND column_default IS NULL",
        table,
    )
    names, values = [], []
    for column in columns:
        kind = column["data_type"]
        if kind.startswith("timestamp"):
            value = "now()"
        elif kind in {"integer", "bigint", "smallint", "numeric", "double precision", "real"}:
            value = "0"
        else:
            value = _VALUES.get(kind, "'x'")
        names.append(f'"{column["column_name"]}"')
        values.append(value)
    await conn.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(values)})")
    assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 1


class DatabasePool:
    """Migrated databases for tests: cloned from the template, emptied and reused between tests.

    Why not a fresh ``CREATE DATABASE ... TEMPLATE`` per test: it writes the whole catalog (~8 MB).
    On the shared server here (a disk, load 6 from other runs) a clone and its drop took 501-660 ms
    per test, reuse 126-151 ms; on a throwaway server (tmpfs, no fsync) both took ~95 ms
    (``python -m bench.database_per_test``, 2026-12-04). A
    database comes back only if its schema still matches the template's exactly (fingerprint
    above) and nobody is connected to it any more; otherwise it is dropped and the next test gets a
    fresh clone. So each test still sees a migrated, empty database that no one else uses.
    """

    def __init__(self, admin_url: str, template: str, fingerprint: str, emptying: str) -> None:
        self.admin_url = admin_url
        self.template = template
        self.fingerprint = fingerprint
        self._emptying = emptying
        self._free: list[str] = []
        self._all: set[str] = set()
        self._admin: asyncpg.Connection | None = None

    @classmethod
    async def for_template(cls, admin_url: str, template: str) -> DatabasePool:
        conn = await asyncpg.connect(with_database(admin_url, template), timeout=10)
        try:
            fingerprint = await conn.fetchval(_FINGERPRINT_SQL)
            emptying = await _emptying_script(conn)
        finally:
            await conn.close()
        return cls(admin_url, template, fingerprint, emptying)

    def url(self, name: str) -> str:
        return with_database(self.admin_url, name, driver="postgresql+asyncpg")

    async def _admin_conn(self) -> asyncpg.Connection:
        # One long-lived admin connection: a connect costs ~10 ms, paid per test otherwise.
        if self._admin is None or self._admin.is_closed():
            self._admin = await asyncpg.connect(asyncpg_url(self.admin_url), timeout=10)
        return self._admin

    async def acquire(self) -> str:
        """Name of an empty migrated database that no one else uses."""
        if self._free:
            return self._free.pop()
        name = unique_name("tc_")
        admin = await self._admin_conn()
        await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
        self._all.add(name)
        await admin.execute(f"COMMENT ON DATABASE \"{name}\" IS '{_OWNER_MARK}{_owner_id()}'")
        return name

    async def release(self, name: str) -> bool:
        """Empty ``name`` for the next test, or drop it when that is not safe. True if kept."""
        try:
            kept = await self._reset(name)
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            kept = False
        if kept:
            self._free.append(name)
        else:
            await self._drop(name)
        return kept

    async def _reset(self, name: str) -> bool:
        # Connections the test leaked (an engine not disposed, a killed worker) would see the next
        # test's rows or hold locks: end them first.
        admin = await self._admin_conn()
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = $1 AND pid <> pg_backend_pid()",
            name,
        )
        conn = await asyncpg.connect(with_database(self.admin_url, name), timeout=10)
        try:
            if await conn.fetchval(_FINGERPRINT_SQL) != self.fingerprint:
                return False
            if self._emptying:
                await conn.execute(self._emptying)
            await conn.fetch(_RESET_SEQUENCES_SQL)
            others = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return bool(others == 0)
        finally:
            await conn.close()

    async def _drop(self, name: str) -> None:
        self._all.discard(name)
        admin = await self._admin_conn()
        # WITH (FORCE) ends connections that are still there (PostgreSQL 13+).
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    async def close(self) -> None:
        for name in list(self._all):
            await self._drop(name)
        self._free.clear()
        if self._admin is not None:
            await self._admin.close()
            self._admin = None
