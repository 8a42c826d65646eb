"""A dashboard whose load a network change aborted is loaded again (tests/support/dashboard.py),
its document included; any other failure to load fails the test at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError

from tests.support import dashboard


class Loads:
    """A page whose loads fail with ``failures`` in turn, then succeed."""

    def __init__(self, *failures: str) -> None:
        self.failures = list(failures)
        self.loads = 0

    async def goto(self, url: str) -> None:
        self.loads += 1
        if self.failures:
            raise PlaywrightError(self.failures.pop(0))

    def on(self, event: str, handler: Callable[..., Any]) -> None:
        pass

    def remove_listener(self, event: str, handler: Callable[..., Any]) -> None:
        pass


async def _ready(page: Any) -> None:
    pass


async def test_a_document_a_network_change_aborted_is_loaded_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dashboard, "dashboard_ready", _ready)
    page = Loads(f"{dashboard.NETWORK_CHANGED} at http://127.0.0.1/")
    await dashboard.open_dashboard(page, "http://127.0.0.1/")  # type: ignore[arg-type]
    assert page.loads == 2


async def test_any_other_failure_to_load_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dashboard, "dashboard_ready", _ready)
    page = Loads("net::ERR_CONNECTION_REFUSED at http://127.0.0.1/")
    with pytest.raises(PlaywrightError, match="REFUSED"):
        await dashboard.open_dashboard(page, "http://127.0.0.1/")  # type: ignore[arg-type]
    assert page.loads == 1


async def test_network_changes_are_loaded_again_only_so_often(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dashboard, "dashboard_ready", _ready)
    page = Loads(*[dashboard.NETWORK_CHANGED] * dashboard.LOADS)
    with pytest.raises(PlaywrightError):
        await dashboard.open_dashboard(page, "http://127.0.0.1/")  # type: ignore[arg-type]
    assert page.loads == dashboard.LOADS
