"""Whether this worker can render pages, and why not: checked without starting a browser."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
from dataclasses import dataclass

from taskcrawler.settings import Settings

#: Names Debian, Ubuntu, Fedora and Alpine give the chromium executable, in the order tried.
CHROMIUM_NAMES = ("chromium", "chromium-browser")


@dataclass(frozen=True, slots=True)
class Availability:
    """``available`` and, either way, a sentence for the startup log and the metrics."""

    available: bool
    reason: str
    executable: str | None = None
    playwright_version: str | None = None


def find_chromium(settings: Settings) -> str | None:
    """The executable ``TASKCRAWLER_BROWSER`` names, else the first chromium on PATH."""
    if settings.browser:
        return settings.browser if _is_executable(settings.browser) else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _playwright_version() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return None
    try:
        return importlib.metadata.version("playwright")
    except importlib.metadata.PackageNotFoundError:
        return None


def render_availability(settings: Settings) -> Availability:
    """Can this process render? Looks for the executable and the Playwright package only; a
    browser that then fails to start is reported by the render itself (``render_crashed``)."""
    version = _playwright_version()
    if version is None:
        return Availability(False, "the playwright package is not installed")
    executable = find_chromium(settings)
    if executable is None:
        if settings.browser:
            reason = f"TASKCRAWLER_BROWSER={settings.browser} is not an executable file"
        else:
            reason = (
                "no chromium on PATH (install Debian's package: apt-get install chromium, "
                "or set TASKCRAWLER_BROWSER)"
            )
        return Availability(False, reason, playwright_version=version)
    return Availability(
        True,
        f"chromium at {executable}, driven by Playwright {version}",
        executable=executable,
        playwright_version=version,
    )
