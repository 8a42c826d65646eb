"""Servers the tests run as child processes: start, wait until ready, stop, kill, restart.

``ServerProcess`` is the common part of our own PostgreSQL (``postgres.py``) and Redis
(``redis.py``); a subclass says how to start its server and when it is ready. Every server still
running when the interpreter exits is stopped (atexit), so none outlives a run that died.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

START_TIMEOUT_SECONDS = 30.0

# Processes started here and not stopped yet. atexit stops them when a session ends without running
# its fixture teardown (Ctrl-C at a bad moment, an internal pytest error), so no server outlives us.
_LIVE: set[ServerProcess] = set()


def scratch_dir() -> str | None:
    """Where throwaway servers keep their data: tmpfs (/dev/shm) when it has room, else $TMPDIR.

    Measured here: copying 40 MB takes 3.6 s on the disk and 0.12 s on tmpfs; initdb and CREATE
    DATABASE write about that much. The data dies with the server anyway.
    """
    shm = Path("/dev/shm")
    try:
        usage = shutil.disk_usage(shm)
    except OSError:
        return None
    return str(shm) if usage.free > 1 << 30 and os.access(shm, os.W_OK) else None


#: Where free ports are drawn from: below the kernel's ephemeral range.
_LOWEST_PORT = 10_000


def _ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (Linux: 32768 unless set otherwise)."""
    with contextlib.suppress(OSError, ValueError):
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    return 32_768


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now, drawn at random below the kernel's ephemeral range.

    A port the kernel hands out for ``bind(0)`` comes from that range, which is also where every
    outgoing connection takes its source port: with the suite's thousands of connections (to
    PostgreSQL, Redis, its sites), one of them took such a port before the server meant to
    listen on it did. Below the range, only another ``free_port`` draw can meet it."""
    highest = _ephemeral_start()
    if highest > _LOWEST_PORT + 1_000:
        for _ in range(200):
            port = random.randrange(_LOWEST_PORT, highest)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind((host, port))
                except OSError:
                    continue
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class ServerProcess:
    """A server run in the foreground as our child, so stop/kill act on its real pid."""

    name = "server"

    def __init__(
        self, port: int, log_path: Path, *, host: str = "127.0.0.1", launcher: Sequence[str] = ()
    ) -> None:
        self.port = port
        self.log_path = log_path
        # Where it listens, and what runs its command (``ip netns exec NAME``: a server on a host
        # of its own in the multi-host tests).
        self.host = host
        self.launcher = list(launcher)
        self._proc: subprocess.Popen[bytes] | None = None

    # subclasses say how to start and when the server is ready
    def _command(self) -> list[str]:
        raise NotImplementedError

    def _is_ready(self) -> bool:
        raise NotImplementedError

    _user: str | None = None
    _stop_signal = signal.SIGTERM

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _spawn(self) -> None:
        if self.running:
            raise RuntimeError(f"{self.name} on port {self.port} is already running")
        with self.log_path.open("ab") as log:
            # Popen in the calling thread, never a worker thread: the child must not be tied to a
            # thread that may end. start_new_session keeps Ctrl-C in the terminal from reaching it
            # before our teardown stops it in order.
            self._proc = subprocess.Popen(
                self._launched_command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                user=None if self.launcher else self._user,
                cwd=self.log_path.parent,
                start_new_session=True,
            )
        _LIVE.add(self)

    def _launched_command(self) -> list[str]:
        """The command, behind the launcher if any. A launcher needs root (entering a network
        namespace), so the server's own user is taken after it, by setpriv, which execs the
        server (the signals sent to our child reach the server itself)."""
        if not self.launcher:
            return self._command()
        as_user = (
            ["setpriv", f"--reuid={self._user}", f"--regid={self._user}", "--init-groups"]
            if self._user
            else []
        )
        return [*self.launcher, *as_user, *self._command()]

    def _check_starting(self, deadline: float, within: float) -> None:
        """Raise (with the server's log) if it died or is not ready in time."""
        if self._proc is not None and self._proc.poll() is not None:
            raise RuntimeError(
                f"{self.name} exited with {self._proc.returncode} while starting:\n{self._tail()}"
            )
        if time.monotonic() > deadline:
            self.kill()
            raise TimeoutError(f"{self.name} not ready after {within} s:\n{self._tail()}")

    def _tail(self) -> str:
        return self.log()[-4000:]

    def start(self, within: float = START_TIMEOUT_SECONDS) -> None:
        """Start and block until the server accepts clients."""
        self._spawn()
        deadline = time.monotonic() + within
        while not self._is_ready():
            self._check_starting(deadline, within)
            time.sleep(0.01)

    async def start_async(self, within: float = START_TIMEOUT_SECONDS) -> None:
        """Like start(), but lets the event loop run (in-process API/workers) while it waits."""
        self._spawn()
        deadline = time.monotonic() + within
        while not self._is_ready():
            self._check_starting(deadline, within)
            await asyncio.sleep(0.01)

    def stop(self, within: float = 15.0) -> None:
        """Graceful stop; SIGKILL if it does not go within ``within`` seconds."""
        self._signal_and_wait(self._stop_signal, within)

    async def stop_async(self, within: float = 15.0) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(self._stop_signal)
        deadline = time.monotonic() + within
        # Polling, not an Event: a child's exit has no awaitable without a child watcher.
        while proc.poll() is None and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        self._signal_and_wait(signal.SIGKILL, 5.0)

    def kill(self) -> None:
        """SIGKILL: a crash, no shutdown work at all."""
        self._signal_and_wait(signal.SIGKILL, 5.0)

    def restart(self) -> None:
        self.stop()
        self.start()

    async def restart_async(self) -> None:
        await self.stop_async()
        await self.start_async()

    def _signal_and_wait(self, sig: signal.Signals, timeout: float) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5.0)
        _LIVE.discard(self)

    def close(self) -> None:
        """Stop for good (fixture teardown)."""
        self.stop()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@atexit.register
def stop_all() -> None:
    """Stop every server started here and not stopped yet."""
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.close()
