"""One chromium and the Playwright driver that drives it, started and ended without leftovers.

Playwright's driver (a Node.js process, our child) starts chromium in a process group of its
own; :class:`BrowserProcess` finds that group through a unique command-line argument, measures it
through /proc, and ends it with SIGKILL to the group, then to anything that still carries its
environment marker (the crash reporter's handlers leave the group), then reaps what was
re-parented to us. A browser is never reused after a crash: a new driver and browser replace it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import uuid

from playwright.async_api import Browser, Playwright, async_playwright

from taskcrawler.browser import processes
from taskcrawler.browser.processes import ProcessInfo

#: Chromium takes only the last ``--disable-features`` (and ``--enable-features``) it is given,
#: so Playwright's own lists (1.65.2, chromiumSwitches.ts) are repeated here with ours added;
#: tests/browser/test_renderer.py checks that no feature of Playwright's goes missing.
PLAYWRIGHT_DISABLED_FEATURES = (
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
    "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion",
)
PLAYWRIGHT_ENABLED_FEATURES = ("CDPScreenshotNewSurface", "SkipListAccountsWithoutGaiaCookies")
# Processes per page: the omnibox popup is a WebUI renderer of its own in every headless window,
# and a spare renderer is kept warm for the next navigation. Neither serves a scraper.
OUR_DISABLED_FEATURES = (
    "WebUIOmniboxPopup",
    "WebUIOmniboxAimPopup",
    "WebUIOmniboxFullPopup",
    "SpareRendererForSitePerProcess",
)
# The network service and the GPU code run inside the browser process instead of two more.
OUR_ENABLED_FEATURES = ("NetworkServiceInProcess2",)

#: The environment variable every process of one browser inherits (never a setting).
INSTANCE_VARIABLE = "TC_BROWSER_INSTANCE"
INSTANCE_ARGUMENT = "--taskcrawler-browser-instance"


def chromium_arguments(instance: str) -> list[str]:
    """The command line, on top of Playwright's own (headless, --no-sandbox, ...)."""
    return [
        # Processes: one renderer per page and the browser (plus its storage service). Without
        # a zygote each renderer is started by the browser itself, so it is its child and in its
        # process group; --no-zygote needs --no-sandbox, which Playwright passes (see the docs).
        "--no-zygote",
        "--disable-gpu",
        "--in-process-gpu",
        "--disable-site-isolation-trials",  # cross-site frames share the page's renderer
        "--disable-features=" + ",".join(PLAYWRIGHT_DISABLED_FEATURES + OUR_DISABLED_FEATURES),
        "--enable-features=" + ",".join(PLAYWRIGHT_ENABLED_FEATURES + OUR_ENABLED_FEATURES),
        # Network: the browser never resolves a name itself (each page's proxy does, behind the
        # address guard), never speaks QUIC (UDP would not go through the proxy), and WebRTC
        # may use only proxied connections.
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        "--disable-quic",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--no-pings",
        # A page's scripts may hold at most this much JavaScript heap; past it the page crashes.
        "--js-flags=--max-old-space-size=512",
        f"{INSTANCE_ARGUMENT}={instance}",
    ]


class BrowserError(Exception):
    """The browser could not be started."""


def _dead_port() -> tuple[socket.socket, int]:
    """A loopback port that refuses every connection (bound, never listening), held open so
    nothing else can take it: the proxy of the browser's own background requests."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock, int(sock.getsockname()[1])


class BrowserProcess:
    """A running chromium: its Playwright objects, its process group, and its use count."""

    def __init__(
        self,
        playwright: Playwright,
        browser: Browser,
        main: ProcessInfo,
        instance: str,
        dead_port: socket.socket,
    ) -> None:
        self.playwright = playwright
        self.browser = browser
        self.pid = main.pid
        self.pgid = main.pgid
        self.driver_pid = main.ppid
        self.instance = instance
        self._dead_port = dead_port
        self.pages_started = 0
        self.active = 0
        self.retiring = False  # no new pages; closed once the active ones are done
        self.crashed = False  # gone without being asked: never reused
        self.closing = False
        self.closed = asyncio.Event()
        browser.on("disconnected", self._on_disconnected)

    def _on_disconnected(self, _browser: Browser) -> None:
        if not self.closing:
            self.crashed = True

    @property
    def usable(self) -> bool:
        return not (self.retiring or self.crashed or self.closing)

    @classmethod
    async def launch(cls, executable: str, *, timeout_seconds: float) -> BrowserProcess:
        instance = uuid.uuid4().hex
        dead, dead_port = _dead_port()
        playwright = await async_playwright().start()
        try:
            browser = await playwright.chromium.launch(
                executable_path=executable,
                args=chromium_arguments(instance),
                env={**os.environ, INSTANCE_VARIABLE: instance},
                proxy={"server": f"http://127.0.0.1:{dead_port}"},
                timeout=timeout_seconds * 1000,
            )
        except BaseException:
            dead.close()
            with contextlib.suppress(Exception):
                await playwright.stop()
            _sweep(instance)
            raise
        main = processes.find_by_argument(f"{INSTANCE_ARGUMENT}={instance}")
        if main is None:  # it started and is already gone
            dead.close()
            with contextlib.suppress(Exception):
                await browser.close()
                await playwright.stop()
            _sweep(instance)
            raise BrowserError("chromium exited right after it started")
        return cls(playwright, browser, main, instance, dead)

    def members(self) -> list[ProcessInfo]:
        """The browser's live processes (its group; zombies are not counted)."""
        return [p for p in processes.group_members(self.pgid) if not p.is_zombie]

    def resident_bytes(self) -> int:
        return processes.resident_bytes(self.members())

    def kill(self) -> None:
        """End every process of the browser now (the driver notices and reports it gone)."""
        self.crashed = True
        processes.kill_group(self.pgid)
        _sweep(self.instance)

    async def close(self, grace_seconds: float) -> None:
        """Close politely within ``grace_seconds``, then kill whatever is left, stop the driver
        and reap. Safe to call more than once and after a crash."""
        if self.closing:
            await self.closed.wait()
            return
        self.closing = True
        try:
            if not self.crashed:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(grace_seconds):
                        await self.browser.close()
            processes.kill_group(self.pgid)
            _sweep(self.instance)
            await self._stop_driver(grace_seconds)
            self._dead_port.close()
            processes.reap_orphaned_zombies()
        finally:
            self.closed.set()

    async def _stop_driver(self, grace_seconds: float) -> None:
        try:
            async with asyncio.timeout(grace_seconds):
                await self.playwright.stop()
        except Exception:
            # A driver that does not stop is killed; it is our child, so asyncio reaps it.
            driver = processes.read_process(self.driver_pid)
            if driver is not None and driver.ppid == os.getpid():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(self.driver_pid, signal.SIGKILL)


def _sweep(instance: str) -> None:
    """SIGKILL every process that still carries the browser's marker, in any group."""
    processes.kill_all(processes.carrying_variable(INSTANCE_VARIABLE, instance))
