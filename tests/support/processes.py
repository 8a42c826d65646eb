"""Run ``python -m taskcrawler ...`` as real subprocesses: start, wait until up, signal, read logs.

Fault tests need real processes: ``kill -9`` a worker, SIGTERM during work, several
workers on one queue. Waits poll with ``asyncio.sleep`` so the test's event loop (and whatever
runs on it) keeps going; nothing here needs a child watcher.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

import aiohttp

from tests.support.servers import free_port, port_open

REPO_ROOT = Path(__file__).resolve().parents[2]
#: How long a started process may take to be ready: a process that exited fails at once, so
#: this only bounds a slow start, which takes ten times its quiet time when the suite's
#: processes and their children share two cores at their busiest.
READY_SECONDS = 60.0
# Seed-compatible aliases the settings also read: must not leak from the developer's shell either.
_SEED_VARIABLES = {"POSTGRES_ASYNC_URL", "REDIS_URL"}
# A terminal's size, which pytest-xdist's workers inherit set: a child writing to a pipe must
# see what a user's pipe sees, whatever ran the tests.
_TERMINAL_VARIABLES = {"COLUMNS", "LINES"}
_Check = Callable[[], Awaitable[bool]]

__all__ = ["ManagedProcess", "ProcessManager", "clean_env", "free_port", "kill_all"]

# Processes started and not known to have ended: what kill_all() (and atexit) take down when a run
# ends without its teardown.
_LIVE: set[ManagedProcess] = set()


def clean_env(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Our environment minus any TaskCrawler setting, plus ``overrides``.

    A developer's exported ``TASKCRAWLER_DATABASE_URL`` must never point a test's worker at their
    real database; the test says everything the process should see.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not (
            key.startswith("TASKCRAWLER_") or key in _SEED_VARIABLES or key in _TERMINAL_VARIABLES
        )
    }
    env["PYTHONUNBUFFERED"] = "1"  # log lines reach the file as they happen
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.update(overrides or {})
    return env


class ManagedProcess:
    """One subprocess; stdout and stderr go to a file (a pipe nobody reads would block it)."""

    def __init__(self, name: str, args: Sequence[str], popen: subprocess.Popen[bytes], log: Path):
        self.name = name
        self.args = list(args)
        self.popen = popen
        self.log_path = log

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def send_signal(self, sig: signal.Signals) -> None:
        if self.running:
            self.popen.send_signal(sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL the whole process group: a crash, no cleanup code runs."""
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)

    async def wait(self, within: float = 30.0) -> int:
        """The exit code; TimeoutError (with the output) if still running after ``within`` s."""
        deadline = time.monotonic() + within
        while (code := self.popen.poll()) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} still running after {within} s\n{self._tail()}")
            await asyncio.sleep(0.02)
        return code

    async def wait_for_port(
        self, port: int, host: str = "127.0.0.1", within: float = READY_SECONDS
    ) -> None:
        await self._until(lambda: _async_bool(port_open(port, host)), f"port {port}", within)

    async def wait_for_http(self, url: str, within: float = READY_SECONDS) -> None:
        """Until GET ``url`` answers 200 (e.g. ``.../healthz``)."""
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:

            async def ok() -> bool:
                try:
                    async with session.get(url) as response:
                        return response.status == 200
                except (TimeoutError, aiohttp.ClientError):
                    return False

            await self._until(ok, f"200 from {url}", within)

    async def wait_for_output(self, text: str, within: float = READY_SECONDS) -> None:
        await self._until(lambda: _async_bool(text in self.output()), repr(text), within)

    async def _until(self, check: _Check, what: str, within: float) -> None:
        deadline = time.monotonic() + within
        while not await check():
            if not self.running:
                raise RuntimeError(
                    f"{self.name} exited ({self.returncode}) before {what}\n{self._tail()}"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} from {self.name} after {within} s\n{self._tail()}")
            await asyncio.sleep(0.05)

    def _tail(self, chars: int = 4000) -> str:
        return f"--- {self.name} output (tail) ---\n{self.output()[-chars:]}"


class ProcessManager:
    """Starts processes for one test (or one benchmark phase) and makes sure none outlives it.

    ``async with ProcessManager(dir) as processes:`` closes them on the way out, showing their
    output only when an exception is on its way; the tests' ``processes`` fixture closes it itself.
    """

    def __init__(self, workdir: Path, *, grace: float = 5.0) -> None:
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.grace = grace
        self.started: list[ManagedProcess] = []

    async def __aenter__(self) -> ProcessManager:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        await self.close(show_output=exc_type is not None)

    def start(
        self,
        args: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        cwd: Path | None = None,
    ) -> ManagedProcess:
        """Run ``python -m taskcrawler *args`` with a clean environment plus ``env``.

        The default cwd is the manager's workdir, so no ``.env`` of the checkout is read.
        """
        return self.start_command(
            [sys.executable, "-m", "taskcrawler", *args], env, name=name, cwd=cwd
        )

    def start_command(
        self,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        cwd: Path | None = None,
    ) -> ManagedProcess:
        name = name or f"{Path(command[0]).name}-{len(self.started)}"
        log = self.workdir / f"{len(self.started):02d}-{name}.log"
        with log.open("wb") as out:
            # Own session: kill() can take the whole group down, and Ctrl-C in the terminal does
            # not reach it before our teardown does.
            popen = subprocess.Popen(
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=clean_env(env),
                cwd=cwd or self.workdir,
                start_new_session=True,
            )
        process = ManagedProcess(name, command, popen, log)
        self.started.append(process)
        _LIVE.add(process)
        return process

    async def close(self, grace: float | None = None, *, show_output: bool = True) -> None:
        """SIGTERM everything still running, SIGKILL what is left after ``grace`` seconds (the
        manager's own by default); then print each one's output tail unless told not to."""
        for process in self.started:
            process.terminate()
        deadline = time.monotonic() + (self.grace if grace is None else grace)
        # Polling, not an Event: a child's exit has no awaitable without a child watcher.
        while any(p.running for p in self.started) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        for process in self.started:
            process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.popen.wait(5)
            _LIVE.discard(process)
        # Shown by pytest only when the test failed: what each process said.
        for process in self.started if show_output else ():
            print(process._tail())


@atexit.register
def kill_all() -> None:
    """SIGKILL every process started here that may still run (its whole process group)."""
    for process in list(_LIVE):
        process.kill()
        _LIVE.discard(process)


async def _async_bool(value: bool) -> bool:
    return value
