"""Run ``taskcrawler ARGS`` in the test's own process: its exit code, stdout and stderr.

What a command prints and does is the same in a child process and here, and a child pays a new
interpreter and the package's imports (most of a second of CPU) on every call. The command runs
in a thread with its own event loop, as in a process of its own, so the test's loop (a stub API,
the target server) keeps going meanwhile; what a user's shell sees of it is the process's
environment without any setting of the developer's (``clean_env``), its working directory (no
``.env`` read), and standard output and error as pipes, not a terminal.

The tests that are about the process itself (its exit status through the interpreter, its
standard streams, signals) start a real one: tests/support/processes.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest

from taskcrawler.cli import main as cli_main
from tests.support.processes import clean_env
from tests.support.served import Served

#: One command at a time: the process's environment, directory and standard streams are global.
_ONE_AT_A_TIME = threading.Lock()
#: What :func:`taskcrawler.cli.logs.configure_logging` changes besides the root logger.
_LOGGERS_IT_TUNES = ("alembic.runtime.plugins", "httpx", "httpcore")


@dataclass
class Result:
    code: int
    out: str
    err: str


async def run_cli(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None, stdin: str = ""
) -> Result:
    """``taskcrawler *args`` with ``env`` on top of a clean environment, in ``cwd``."""
    return await asyncio.to_thread(run_cli_now, list(args), cwd=cwd, env=env, stdin=stdin)


@dataclass
class Api:
    """A running API as one test's key sees it (a key sees its own jobs, crawls and monitors)."""

    base_url: str
    key: str | None = None

    async def cli(self, *args: str, cwd: Path, env: Mapping[str, str] | None = None) -> Result:
        """``taskcrawler *args --api base_url``, with the key in TASKCRAWLER_API_KEY."""
        keyed = {"TASKCRAWLER_API_KEY": self.key} if self.key else {}
        return await run_cli(*args, "--api", self.base_url, cwd=cwd, env={**keyed, **(env or {})})


async def keyed(server: Served, request: pytest.FixtureRequest) -> Api:
    """A module's ``server`` as the requesting test's own key sees it."""
    return Api(server.base_url, await server.new_key(request.node.name))


def run_cli_now(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None, stdin: str = ""
) -> Result:
    """:func:`run_cli`, blocking: for a test that has no event loop running."""
    out, err = _Pipe(), _Pipe()
    with (
        _ONE_AT_A_TIME,
        _environment(clean_env(env)),
        contextlib.chdir(cwd),
        _logging_restored(),
        mock.patch("sys.stdin", io.StringIO(stdin)),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        _only_this_threads_logs(),
    ):
        try:
            code = cli_main.main(list(argv))
        except SystemExit as exited:  # argparse's refusals, --help, --version
            code = _exit_status(exited.code)
    return Result(code, out.getvalue(), err.getvalue())


class _Pipe(io.TextIOWrapper):
    """A standard stream that is a pipe, not a terminal, as in ``subprocess.run(capture_output)``:
    text, and bytes through its ``buffer`` (``export`` writes those)."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", write_through=True)

    def getvalue(self) -> str:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue().decode("utf-8", errors="replace")


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # what the interpreter does with a message
    return 1


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _logging_restored() -> Iterator[None]:
    """The test process's logging as it was: the command configures the root logger its way."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    tuned = {name: logging.getLogger(name).level for name in _LOGGERS_IT_TUNES}
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, was in tuned.items():
            logging.getLogger(name).setLevel(was)


@contextlib.contextmanager
def _only_this_threads_logs() -> Iterator[None]:
    """The command's log lines on its stderr, not those the test's own servers log meanwhile
    (a process of the command's own would not have heard them)."""
    thread = threading.get_ident()
    configure = cli_main.configure_logging

    def configure_for_this_thread(log_format: str = "auto", level: str = "INFO") -> None:
        configure(log_format, level)
        for handler in logging.getLogger().handlers:
            handler.addFilter(lambda record: record.thread == thread)

    with mock.patch.object(cli_main, "configure_logging", configure_for_this_thread):
        yield
