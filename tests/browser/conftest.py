"""Fixtures of the browser tests: Debian's Chromium driven by Playwright (the ``taskcrawler
serve`` to point it at is tests/support/served.py).

The browser is the system's ``chromium`` (Debian package), never one Playwright downloads. Where it
is missing and we are root with apt-get, it is installed (as ``make test`` does); otherwise the
tests fail with a message saying how to get it. They never skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, async_playwright

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
