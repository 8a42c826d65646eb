"""The supervisor of ``serve``'s worker process, with stand-in children."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path
from uuid import uuid4

import pytest

from taskcrawler.queue.pipe import PipeSender
from taskcrawler.worker import process as worker_process
from taskcrawler.worker.process import WorkerProcess, WorkerProcesses

#: A child that runs until SIGTERM, then exits 0 as a worker's graceful stop does.
SLEEPER = (
    sys.executable,
    "-c",
    "import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(0)); "
    "time.sleep(120)",
)


async def _new_pid(supervisor: WorkerProcess, old: int | None) -> int:
    async with asyncio.timeout(30):
        while True:
            if supervisor.pid is not None and supervisor.pid != old:
                return supervisor.pid
            await asyncio.sleep(0.02)


@pytest.mark.parametrize("ending", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "stopped"])
async def test_an_ended_child_is_replaced_and_stop_ends_the_last_one(ending: int) -> None:
    """Killed, or stopped while nobody stops ``serve`` (then after a pause of a few seconds)."""
    supervisor = WorkerProcess({}, sender=None, grace_seconds=1, command=SLEEPER)
    await supervisor.start()
    first = await _new_pid(supervisor, None)
    os.kill(first, ending)
    second = await _new_pid(supervisor, first)
    assert supervisor.restarts == 1
    await supervisor.stop()
    assert _gone(second)


async def test_a_child_that_keeps_dying_is_restarted_after_a_pause_stop_interrupts() -> None:
    supervisor = WorkerProcess(
        {}, sender=None, grace_seconds=1, command=(sys.executable, "-c", "raise SystemExit(3)")
    )
    await supervisor.start()
    async with asyncio.timeout(30):
        while True:
            if supervisor.restarts >= 2:  # after pauses of 0.5 s, then 1 s
                break
            await asyncio.sleep(0.05)
    async with asyncio.timeout(5):  # not the next pause, nor the 30 s cap
        await supervisor.stop()


async def test_a_child_gets_its_socket_and_the_environment_given(tmp_path: Path) -> None:
    """The child finds the socket's fd in --wake-fd, ids published arrive on it, and its
    settings come from the environment given."""
    out = tmp_path / "out"
    child = (
        sys.executable,
        "-c",
        "import os, socket, sys; s = socket.socket(fileno=int(sys.argv[-1])); "
        f"open({str(out)!r}, 'a').write(os.environ['TASKCRAWLER_PROBE'] + ' ' + s.recv(16).hex())",
    )
    sender = PipeSender()
    supervisor = WorkerProcess(
        {"TASKCRAWLER_PROBE": "hello"}, sender=sender, grace_seconds=1, command=child
    )
    await supervisor.start()
    job_id = uuid4()
    await sender.publish([job_id])
    async with asyncio.timeout(30):
        while True:
            if supervisor.restarts:  # it exited once it had written
                break
            await asyncio.sleep(0.02)
    await supervisor.stop()
    assert out.read_text() == f"hello {job_id.hex}"


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_the_first_of_several_worker_processes_alone_sweeps_and_runs_the_scheduled_work() -> None:
    def processes(shared_queue: bool) -> WorkerProcesses:
        return WorkerProcesses(3, lambda i: {}, grace_seconds=1, shared_queue=shared_queue)

    shared = processes(True)
    assert shared.duties_args(0) == ()
    assert shared.duties_args(1) == shared.duties_args(2) == ("--no-scheduled", "--no-sweeper")
    # Without Redis each process has a queue of its own: only its own sweeper publishes to it.
    own = processes(False)
    assert own.duties_args(0) == ()
    assert own.duties_args(2) == ("--no-scheduled",)


async def test_a_child_stopped_by_a_group_signal_is_not_replaced_while_serve_stops(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Ctrl-C in a terminal signals the child and ``serve`` together: the child's stop comes
    first, and its supervisor starts no other child (nor calls it a failure) while its own stop
    is on the way."""
    supervisor = WorkerProcess({}, sender=None, grace_seconds=1, command=SLEEPER)
    await supervisor.start()
    first = await _new_pid(supervisor, None)
    os.kill(first, signal.SIGTERM)
    await asyncio.sleep(0.5)  # the child has exited; serve's own stop begins
    await supervisor.stop()
    assert supervisor.restarts == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("ending", [signal.SIGINT, signal.SIGKILL], ids=["stopped", "crashed"])
async def test_no_child_is_started_once_serve_itself_was_signalled(
    ending: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """uvicorn stops the app (and so the supervisor) only once its requests have ended, up to
    the grace period: a child that ends meanwhile, by the group's Ctrl-C or by a crash, is not
    replaced in the middle of the shutdown."""
    monkeypatch.setattr(worker_process, "STOP_SETTLE_SECONDS", 0.2)
    received: list[int] = []
    # As uvicorn's: the server's own stop, which lets its requests end before the app's.
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        supervisor = WorkerProcess({}, sender=None, grace_seconds=1, command=SLEEPER)
        await supervisor.start()
        child = await _new_pid(supervisor, None)
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(child, ending)
        await asyncio.sleep(1.0)  # a request still answered, five times the settling
        assert received == [signal.SIGINT]
        assert supervisor.pid == child and supervisor.restarts == 0
        await supervisor.stop()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_no_child_is_started_after_a_pause_during_which_serve_was_signalled(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A child that keeps dying is started again after a pause; ``serve``'s own stop signal
    that comes during the pause starts none at its end (one was started in the middle of
    the shutdown)."""
    monkeypatch.setattr(worker_process, "RESTART_BASE_SECONDS", 0.3)
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        supervisor = WorkerProcess(
            {}, sender=None, grace_seconds=1, command=(sys.executable, "-c", "raise SystemExit(3)")
        )
        await supervisor.start()
        first = supervisor.pid
        async with asyncio.timeout(30):
            while True:  # until it pauses
                if [r for r in caplog.records if "starting another in" in r.getMessage()]:
                    break
                await asyncio.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)  # in the pause of 0.3 s
        await asyncio.sleep(1.0)  # a request still answered, past the pause
        assert received == [signal.SIGINT]
        assert supervisor.pid == first and supervisor.restarts == 0
        await supervisor.stop()
    finally:
        signal.signal(signal.SIGINT, previous)
