"""Every test has a deadline (pytest-timeout), and a hang ends the run even where SIGALRM cannot.

pytest-timeout's ``signal`` method (``timeout`` in pyproject.toml, ``@pytest.mark.timeout(N)`` for
a test that needs longer) raises in the main thread when a test runs past its deadline: the test
fails, its fixtures are torn down, and the session goes on. That works when the alarm lands in the
event loop's wait or in the test's own coroutine. When it lands in another asyncio task (one that
spins without awaiting, say), that task takes the exception as its result and the test hangs on.
So a watchdog thread, armed with the alarm, ends the whole run ``BACKSTOP_SECONDS`` later: it dumps
every thread's stack, stops the servers and processes the harness started, and exits 1.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import pytest_timeout

from tests.support import processes, servers

BACKSTOP_SECONDS = 30.0


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool:
    pytest_timeout.pytest_timeout_set_timer(item, settings)  # the alarm, as the plugin sets it
    cancel_alarm = getattr(item, "cancel_timeout", None)
    if settings.method != "signal" or cancel_alarm is None:
        return True
    watchdog = threading.Timer(settings.timeout + BACKSTOP_SECONDS, _end_run, (item, settings))
    watchdog.name = f"timeout backstop {item.nodeid}"
    watchdog.daemon = True

    def cancel() -> None:
        cancel_alarm()
        watchdog.cancel()

    item.cancel_timeout = cancel  # type: ignore[attr-defined]
    watchdog.start()
    return True


def _end_run(item: pytest.Item, settings: Any) -> None:
    """The alarm did not end the test: stop what we started (os._exit runs no atexit), then the
    plugin's thread method reports the stacks and exits."""
    if not settings.disable_debugger_detection and pytest_timeout.is_debugging():
        return  # a developer stopped at a breakpoint, as pytest-timeout itself allows
    processes.kill_all()
    servers.stop_all()
    pytest_timeout.timeout_timer(item, settings)
