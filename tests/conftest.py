"""The suite's hooks: bytecode written before the test processes start, SIGINT as in a
terminal, and the plugins of the processes that run tests (the shared fixtures, in
tests/support/fixtures.py, and the deadlines).

Those plugins are imported in a process that runs or collects tests, not in pytest-xdist's
controller, which only hands the files out: they import the service's storage, aiohttp,
asyncpg and Redis, about 1 s of CPU the controller would spend for nothing.
"""

from __future__ import annotations

import compileall
import signal
from pathlib import Path

import pytest

from tests.support.bytecode import already_rewritten, rewritten_modules, write_rewritten

# Under ``--dist loadfile`` the longest files go out first (tests/support/scheduling.py).
pytest_plugins = ["tests.support.scheduling"]

#: The processes that run tests: every test has a deadline (see the module for the watchdog
#: behind it), and the shared fixtures.
TEST_PROCESS_PLUGINS = ("tests.support.timeouts", "tests.support.fixtures")

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The code the suite's own processes import: the service, the tests' helpers, the benchmarks.
COMPILED = ("taskcrawler", "tests", "bench")


def pytest_configure(config: pytest.Config) -> None:
    """Bytecode for the repository's code, written once before any test runs (by xdist's
    controller, before it starts its processes). The suite starts hundreds of Python
    processes (``taskcrawler serve``, workers, parser processes, CLI calls); where
    ``PYTHONDONTWRITEBYTECODE`` is set, as on CI's machines, each of them would compile the
    package's sources again (about a tenth of a second of CPU for the API's imports)."""
    _interruptible()
    if not _is_xdist_controller(config):
        for plugin in TEST_PROCESS_PLUGINS:
            config.pluginmanager.import_plugin(plugin)
    if hasattr(config, "workerinput"):
        return
    for folder in COMPILED:
        compileall.compile_dir(REPO_ROOT / folder, quiet=1)
    if config.getoption("dist", "no") != "no":
        # Each test process would rewrite the test modules' asserts (tests/support/bytecode.py).
        modules = rewritten_modules(config, REPO_ROOT / "tests") + already_rewritten(config)
        write_rewritten(config, modules)


def _is_xdist_controller(config: pytest.Config) -> bool:
    """Whether this process hands the tests to others and runs none (xdist's own test of its
    distributed mode; with ``--collect-only`` the controller collects the tests itself)."""
    return (
        not hasattr(config, "workerinput")
        and not config.getoption("collectonly")
        and config.getoption("dist", "no") != "no"
        and bool(config.getoption("tx", None))
    )


def _interruptible() -> None:
    """SIGINT as in a terminal, in this process and the processes it starts. A shell without job
    control starts a command run in the background (``make test &``) with SIGINT ignored, and a
    child inherits that: a test that interrupts a child it started would wait for it in vain."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
