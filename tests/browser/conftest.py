"""Fixtures of the browser tests: Debian's Chromium driven by Playwright (the ``taskcrawler
serve`` to point it at is tests/support/served.py), the local render sites (a public one on
127.0.0.1, an "intranet" on 127.0.0.2) and a renderer whose guard takes 127.0.0.1 for public,
one of each per module.

The browser is the system's ``chromium`` (Debian package), never one Playwright downloads. Where it
is missing and we are root with apt-get, it is installed (as ``make test`` does); otherwise the
tests fail with a message saying how to get it. They never skip.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import Browser, async_playwright

from taskcrawler.browser import BrowserRenderer, processes
from taskcrawler.browser.launcher import INSTANCE_VARIABLE
from taskcrawler.fetch.guard import AddressGuard
from taskcrawler.settings import Settings
from tests.support.hostile import StaticResolver
from tests.support.render_site import RenderSite

PUBLIC_IP = ipaddress.ip_address("127.0.0.1")
GONE_WITHIN_SECONDS = 30.0  # a bound for a hang, not a speed claim
#: The render deadline of a page whose scripts never stop. Its document must arrive before it
#: (else the render fails as the network's timeout, not render_timeout); the page spins a core
#: until then, so no longer than that. The tests render a page first, in the same browser: a
#: fresh browser's first page is the slowest to start (the looping page's request came 0.6-1.0 s
#: after render() on a browser just launched, 0.3-0.6 s on one that had rendered, at load ~14).
LOOPING_PAGE_DEADLINE_SECONDS = 5.0

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


def render_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "browser": chromium_path(),
        "respect_robots": False,
        "render_timeout_seconds": 15.0,
        "browser_concurrency": 2,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


def pretend_public() -> AddressGuard:
    """The production guard, except that 127.0.0.1 counts as a public address."""
    return AddressGuard(allow=lambda ip: ip == PUBLIC_IP)


def resolver() -> StaticResolver:
    return StaticResolver({"public.test": ["127.0.0.1"], "intranet.test": ["127.0.0.2"]})


def new_renderer(**overrides: Any) -> BrowserRenderer:
    return BrowserRenderer(
        render_settings(**overrides), guard=pretend_public(), resolver=resolver()
    )


async def gone(pgid: int, instance: str) -> list[processes.ProcessInfo]:
    """Wait (bounded) until no process of the group or carrying the marker is left; return
    what is left (zombies included: a process nobody reaped is a leak too)."""
    left: list[processes.ProcessInfo] = []
    for _ in range(int(GONE_WITHIN_SECONDS / 0.1)):
        marked = [
            processes.read_process(pid)
            for pid in processes.carrying_variable(INSTANCE_VARIABLE, instance)
        ]
        left = processes.group_members(pgid) + [p for p in marked if p is not None]
        if not left:
            return []
        await asyncio.sleep(0.1)
    return left


@pytest.fixture(scope="module")
async def site() -> AsyncIterator[RenderSite]:
    server = await RenderSite("127.0.0.1").start()
    yield server
    await server.stop()


@pytest.fixture(scope="module")
async def intranet() -> AsyncIterator[RenderSite]:
    server = await RenderSite("127.0.0.2").start()
    yield server
    await server.stop()


@pytest.fixture(scope="module")
async def renderer() -> AsyncIterator[BrowserRenderer]:
    shared = new_renderer()
    yield shared
    await shared.close()
