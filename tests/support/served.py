"""A real ``taskcrawler serve`` in a child process, for the tests that drive it from outside
(a browser, the Firecrawl SDKs, the CLI client, MCP)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from taskcrawler.storage import KeyStore
from taskcrawler.storage.adapters import open_database
from tests.support.processes import ManagedProcess, ProcessManager
from tests.support.services import free_port

#: What the Firecrawl-compatible API is served with in its tests: keys required (Firecrawl's
#: SDKs send one), and no retries, so that a failed page is final at once.
FIRECRAWL_ENV = {"TASKCRAWLER_AUTH_REQUIRED": "true", "TASKCRAWLER_MAX_RETRIES": "0"}


@dataclass
class Served:
    base_url: str
    process: ManagedProcess
    database_url: str

    async def new_key(self, name: str = "dashboard") -> str:
        """A token of a fresh API key, written straight to the server's database."""
        db = open_database(self.database_url)
        try:
            new, _ = await KeyStore(db).create(name)
        finally:
            await db.close()
        return new.token


async def serve(processes: ProcessManager, tmp_path: Path, sqlite_url: str, **env: str) -> Served:
    """``taskcrawler serve`` on a free port, fetching local pages, on the test's own SQLite."""
    port = free_port()
    process = processes.start(
        ["serve"],
        {
            "TASKCRAWLER_DATABASE_URL": sqlite_url,
            "TASKCRAWLER_PORT": str(port),
            "TASKCRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
            "TASKCRAWLER_RESPECT_ROBOTS": "false",
            "TASKCRAWLER_RETRY_BASE_SECONDS": "0.05",
            "TASKCRAWLER_RETRY_MAX_SECONDS": "0.2",
            "TASKCRAWLER_LOG_FORMAT": "text",
            **env,
        },
        name="serve",
    )
    base_url = f"http://127.0.0.1:{port}"
    await process.wait_for_http(f"{base_url}/healthz")
    return Served(base_url, process, sqlite_url)


@contextlib.asynccontextmanager
async def served_by_module(workdir: Path, database_url: str, **env: str) -> AsyncIterator[Served]:
    """:func:`serve` for a whole test module, in processes of its own: its tests keep out of
    each other's way with a key each (:meth:`Served.new_key`: a key sees its own jobs, crawls
    and monitors only)."""
    async with ProcessManager(workdir / "processes") as processes:
        yield await serve(processes, workdir, database_url, **env)


@contextlib.asynccontextmanager
async def served_on_sqlite(
    tmp_path_factory: pytest.TempPathFactory, template: Path, **env: str
) -> AsyncIterator[Served]:
    """:func:`served_by_module` on a copy of the session's migrated SQLite ``template``, in a
    folder of its own."""
    workdir = tmp_path_factory.mktemp("served")
    async with served_by_module(workdir, sqlite_copy(template, workdir), **env) as served:
        yield served


def sqlite_copy(template: Path, folder: Path) -> str:
    """The URL of a copy of the session's migrated SQLite template in ``folder``."""
    path = folder / "tc.db"
    shutil.copyfile(template, path)
    return f"sqlite+aiosqlite:///{path}"
