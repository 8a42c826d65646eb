"""The embedded mode's worker in a process of its own, and the supervisor that keeps it running.

``taskcrawler serve`` answers HTTP in its main process and runs the worker in a child (started
with ``python -m taskcrawler.cli.embedded_worker``), so each has a core and neither waits for the
other's event loop. The :class:`WorkerProcess` supervisor, run by the API's lifespan, starts the
child once the database is migrated, starts it again when it dies, and stops it on shutdown with
SIGTERM, which is ``taskcrawler worker``'s graceful stop: in-flight jobs get the grace period,
the rest are handed back. Nothing is lost when the child dies: the jobs are in the database,
leases expire and the next child's sweeper publishes every PENDING job again.

Job ids travel from the API to the child over a Unix socket pair (:mod:`taskcrawler.queue.pipe`),
a new pair for each child. When the API process goes away without stopping it (SIGKILL), the
child reads the end of its socket and stops by itself, so no worker outlives its ``serve``.

``taskcrawler worker`` runs several such children the same way (:class:`WorkerProcesses`), one
event loop per core: the worker's loop (fetching, extracting, writing) is the bottleneck of one
process, and Python runs one loop on one core. The children share nothing but PostgreSQL and
Redis, as workers on different machines do: leases, politeness and the queue need nothing more.
The first child alone runs the sweeper and the scheduled work (monitors, webhooks) for all of
them, which the others would only poll for too. Each reads the end of a pipe whose other end
only the parent holds, so a parent killed with SIGKILL leaves no child behind: each stops
gracefully, handing its jobs back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Any

from taskcrawler.queue.pipe import PipeSender

log = logging.getLogger(__name__)

#: A child that lived this long before dying is restarted at once; one that died sooner waits
#: a little longer each time (up to the cap), so a crash at start-up does not spin a core.
STABLE_SECONDS = 30.0
RESTART_BASE_SECONDS = 0.5
RESTART_MAX_SECONDS = 30.0
#: After SIGTERM the child has the grace period for its jobs, then this long to close up.
STOP_MARGIN_SECONDS = 10.0
#: How long a child that stopped as if asked to (exit 0, SIGTERM, SIGINT) waits to be replaced:
#: the signal was most likely sent to the whole process group (Ctrl-C in a terminal, a process
#: manager stopping the group), and this process's own stop is on its way.
STOP_SETTLE_SECONDS = 2.0
#: The signals that stop this process (uvicorn's, and ``taskcrawler worker``'s).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

SignalHandler = Callable[[int, FrameType | None], Any]


class WorkerProcess:
    """Runs ``python -m taskcrawler.cli.embedded_worker`` and keeps one running until :meth:`stop`.

    ``env`` is added to this process's environment for the child (its settings come from the
    environment and ``.env``, as this process's did, plus the command line's overrides given
    here). With a ``sender`` (no Redis), each child gets a new socket pair, attached to it.
    With ``metrics_socket``, each child serves its metrics on a Unix socket in a private folder
    of this process (:attr:`metrics_socket` once started), for the API to include in its own.
    """

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        sender: PipeSender | None,
        grace_seconds: float,
        command: Sequence[str] = (sys.executable, "-m", "taskcrawler.cli.embedded_worker"),
        pass_fds: Sequence[int] = (),
        metrics_socket: bool = False,
    ) -> None:
        self.env = dict(env)
        self.wants_metrics_socket = metrics_socket
        #: Where the child serves its metrics (set by :meth:`start`), None without.
        self.metrics_socket: str | None = None
        self.pass_fds = tuple(pass_fds)
        self.sender = sender
        self.grace_seconds = grace_seconds
        self.command = tuple(command)
        self.restarts = 0
        self._process: asyncio.subprocess.Process | None = None
        self._stopping = asyncio.Event()
        #: This process got a stop signal: its stop is on its way (see :meth:`_observe_signals`).
        self._signalled = False
        self._observed: dict[int, tuple[SignalHandler, SignalHandler]] = {}
        self._supervisor: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    async def start(self) -> None:
        """Start the child (failing here if it cannot be spawned), then watch it."""
        if self.wants_metrics_socket and self.metrics_socket is None:
            # A folder only this user can enter: nobody else can read or fake the metrics.
            folder = tempfile.mkdtemp(prefix="taskcrawler-worker-")
            self.metrics_socket = os.path.join(folder, "metrics.sock")
        await self._spawn()
        self._observe_signals()
        self._supervisor = asyncio.create_task(self._supervise(), name="worker-process")

    def _observe_signals(self) -> None:
        """Note this process's stop signals, then hand each to the handler it had.

        The stop reaches :meth:`stop` late: uvicorn lets its requests end first (up to the
        grace period, plus 5 s), and only then stops the app. A child ending meanwhile, stopped
        by the same Ctrl-C or crashed, must not be replaced in the middle of that shutdown.
        Only a handler that is a function is wrapped: with the default one, SIGTERM ends this
        process at once, and an ignored signal stops nothing. Signals are the main thread's.
        """
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in STOP_SIGNALS:
            previous = signal.getsignal(signum)
            if not callable(previous):
                continue

            def observed(
                number: int, frame: FrameType | None, previous: SignalHandler = previous
            ) -> Any:
                # Only a flag: a handler runs between any two bytecodes of the loop's.
                self._signalled = True
                return previous(number, frame)

            signal.signal(signum, observed)
            self._observed[signum] = (observed, previous)

    def _unobserve_signals(self) -> None:
        """The handlers :meth:`_observe_signals` wrapped, back; unless another replaced ours."""
        for signum, (observed, previous) in self._observed.items():
            if signal.getsignal(signum) is observed:
                signal.signal(signum, previous)
        self._observed.clear()

    async def _spawn(self) -> None:
        args = list(self.command)
        pass_fds = self.pass_fds
        ours: socket.socket | None = None
        theirs: socket.socket | None = None
        if self.sender is not None:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            pass_fds += (theirs.fileno(),)
            args += ["--wake-fd", str(theirs.fileno())]
        if self.metrics_socket is not None:
            args += ["--metrics-socket", self.metrics_socket]
        try:
            self._process = await asyncio.create_subprocess_exec(
                *args, env=os.environ | self.env, pass_fds=pass_fds
            )
        finally:
            if theirs is not None:
                theirs.close()
        if self.sender is not None and ours is not None:
            await self.sender.attach(ours)
        log.info("worker process %d started", self._process.pid)

    async def _supervise(self) -> None:
        failures = 0
        while True:
            process = self._process
            assert process is not None
            started = time.monotonic()
            code = await process.wait()
            if self.sender is not None:
                self.sender.detach()
            if _stopped_as_asked(code):
                await self._stopping_within(STOP_SETTLE_SECONDS)
            if self._signalled:
                await self._stopping.wait()  # however long its requests take to end
            if self._stopping.is_set():
                return
            failures = 0 if time.monotonic() - started >= STABLE_SECONDS else failures + 1
            delay = min(RESTART_BASE_SECONDS * 2 ** max(failures - 1, 0), RESTART_MAX_SECONDS)
            log.error(
                "worker process %d exited with %s; starting another in %.1fs",
                process.pid,
                _describe(code),
                delay if failures else 0.0,
            )
            if failures:
                await self._stopping_within(delay)
                if self._signalled:  # serve's own stop came during the pause
                    await self._stopping.wait()
                if self._stopping.is_set():
                    return
            try:
                await self._spawn()
            except OSError:
                log.exception("could not start a worker process; trying again")
                failures += 1
                await asyncio.sleep(RESTART_MAX_SECONDS)
                continue
            self.restarts += 1

    async def _stopping_within(self, seconds: float) -> None:
        """Wait until :meth:`stop` is called, ``seconds`` at most."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._stopping.wait()

    async def stop(self) -> None:
        """SIGTERM the child and wait for its graceful stop; SIGKILL it if that never ends."""
        self._stopping.set()
        self._unobserve_signals()
        if self._supervisor is not None:
            # Wherever it is (waiting, pausing, starting a child), it starts no other one.
            self._supervisor.cancel()
            await asyncio.gather(self._supervisor, return_exceptions=True)
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(self.grace_seconds + STOP_MARGIN_SECONDS):
                    await process.wait()
            except TimeoutError:
                log.error("worker process %d did not stop; killing it", process.pid)
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        if self.sender is not None:
            self.sender.detach()
        if self.metrics_socket is not None:
            shutil.rmtree(os.path.dirname(self.metrics_socket), ignore_errors=True)


class WorkerProcesses:
    """``count`` worker processes (``python -m taskcrawler.cli.embedded_worker``), each kept
    running by a :class:`WorkerProcess`, until :meth:`stop`.

    ``env_of(i)`` is the environment added for the ``i``-th child (its metrics port, say).
    Every child is handed the read end of one pipe whose write end only this process holds:
    when this process ends, however it ends, the children read its end and stop.

    The first child runs the scheduled work (monitors, webhooks) for all, the others only
    jobs; with ``shared_queue`` (Redis) it sweeps for all too, else each sweeps into its own
    queue. A first child that dies is started again like any other: meanwhile expired leases
    and due monitors wait (at most the restart's pause), none is lost.
    """

    def __init__(
        self,
        count: int,
        env_of: Callable[[int], Mapping[str, str]],
        *,
        grace_seconds: float,
        shared_queue: bool,
        module: str = "taskcrawler.cli.embedded_worker",
    ) -> None:
        self.count = count
        self.env_of = env_of
        self.grace_seconds = grace_seconds
        self.shared_queue = shared_queue
        self.module = module
        self.children: list[WorkerProcess] = []
        self._pipe: tuple[int, int] | None = None

    @property
    def pids(self) -> list[int]:
        return [pid for child in self.children if (pid := child.pid) is not None]

    async def start(self) -> None:
        read_end, write_end = os.pipe()
        self._pipe = (read_end, write_end)
        command = (sys.executable, "-m", self.module, "--parent-fd", str(read_end))
        for index in range(self.count):
            child = WorkerProcess(
                self.env_of(index),
                sender=None,
                grace_seconds=self.grace_seconds,
                command=command + self.duties_args(index),
                pass_fds=(read_end,),
            )
            self.children.append(child)
            await child.start()

    def duties_args(self, index: int) -> tuple[str, ...]:
        """The arguments that leave the ``index``-th child's shared duties to the first."""
        if index == 0:
            return ()
        return ("--no-scheduled", "--no-sweeper") if self.shared_queue else ("--no-scheduled",)

    async def stop(self) -> None:
        """Every child's graceful stop, at the same time (each has the grace period)."""
        await asyncio.gather(*(child.stop() for child in self.children))
        if self._pipe is not None:
            for fd in self._pipe:
                os.close(fd)
            self._pipe = None


def parent_gone(fd: int) -> asyncio.Event:
    """An event set once the pipe ``fd`` reads its end: the process holding the other end (the
    parent) is gone. Nothing is ever written on it."""
    loop = asyncio.get_running_loop()
    gone = asyncio.Event()
    os.set_blocking(fd, False)

    def readable() -> None:
        try:
            data = os.read(fd, 1)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(fd)
            gone.set()

    loop.add_reader(fd, readable)
    return gone


def _stopped_as_asked(code: int) -> bool:
    """The child ended as its graceful stop ends it, or as SIGTERM or SIGINT end a process."""
    return code in (0, -signal.SIGTERM, -signal.SIGINT)


def _describe(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
    return f"code {code}"
