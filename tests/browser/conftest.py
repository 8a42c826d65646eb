"""Fixtures of the browser tests: Debian's Chromium driven by Playwright, and a real
``taskcrawler serve`` to point it at.

The browser is the system's ``chromium`` (Debian package), never one Playwright downloads. Where it
is missing and we are root with apt-get, it is installed (as ``make test`` does); otherwise the
tests fail with a message saying how to get it. They never skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright

from taskcrawler.storage import Database, KeyStore
from tests.support.processes import ManagedProcess, ProcessManager
from tests.support.services import free_port

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env)
        found = shutil.which("chromium")
        if found:
            return found
    pytest.fail(
        "Chromium is missing: install Debian's `chromium` package (`make test` does it when run "
        "as root). Playwright's own browser download is not used."
    )


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    executable = chromium_path()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@dataclass
class Served:
    base_url: str
    process: ManagedProcess
    database_url: str

    async def new_key(self, name: str = "dashboard") -> str:
        """A token of a fresh API key, written straight to the server's database."""
        db = Database.from_url(self.database_url)
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
