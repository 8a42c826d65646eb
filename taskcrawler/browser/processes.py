"""The browser's processes, read from /proc: who they are, what memory they hold, how to end them.

Chromium is a tree of processes (the browser, a storage service, one renderer per page) that
Playwright starts in a process group of its own, so the group id names all of them, orphans
included. Two kinds of process escape the group: the crash reporter's handlers (they start a
session of their own) and anything a renderer might spawn. Every process the browser starts
inherits its environment, so an environment marker finds them all; that is what the final sweep
uses. Everything here is Linux-only and cheap (one small read per process).
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass

# Plain strings rather than pathlib: every page scans /proc, and pathlib would intern each pid.
PROC = "/proc"
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
#: The names (``comm``, 15 characters at most) a chromium process can carry.
CHROMIUM_NAMES = frozenset({"chromium", "chrome", "chrome_crashpad", "headless_shell"})


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    pid: int
    ppid: int
    pgid: int
    state: str  # "R", "S", "Z" (zombie: dead, waiting for its parent to reap it), ...
    name: str
    rss_bytes: int

    @property
    def is_zombie(self) -> bool:
        return self.state in ("Z", "X")


def read_process(pid: int) -> ProcessInfo | None:
    """One process from ``/proc/<pid>/stat``, or ``None`` if it is gone."""
    try:
        raw = _read(f"{PROC}/{pid}/stat").decode("utf-8", "replace")
    except OSError:
        return None
    # The name is in parentheses and may itself hold spaces and parentheses.
    left, right = raw.find("("), raw.rfind(")")
    fields = raw[right + 2 :].split()
    # fields[0] is field 3 of proc(5): state, ppid, pgrp, ..., rss (field 24) in pages.
    return ProcessInfo(
        pid=pid,
        ppid=int(fields[1]),
        pgid=int(fields[2]),
        state=fields[0],
        name=raw[left + 1 : right],
        rss_bytes=int(fields[21]) * PAGE_SIZE,
    )


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _pids() -> list[int]:
    return [int(name) for name in os.listdir(PROC) if name.isdigit()]


def all_processes() -> list[ProcessInfo]:
    found = (read_process(pid) for pid in _pids())
    return [info for info in found if info is not None]


def group_members(pgid: int) -> list[ProcessInfo]:
    """Every process (zombies included) of the process group ``pgid``."""
    return [info for info in all_processes() if info.pgid == pgid]


def resident_bytes(processes: list[ProcessInfo]) -> int:
    """The sum of their RSS. Pages shared between them count once per process, so this is an
    upper bound of what they really hold, and a limit on it errs on the safe side."""
    return sum(info.rss_bytes for info in processes)


def _cmdline(pid: int) -> bytes:
    try:
        return _read(f"{PROC}/{pid}/cmdline")
    except OSError:
        return b""


def _environ(pid: int) -> bytes:
    try:
        return _read(f"{PROC}/{pid}/environ")
    except OSError:
        return b""


def find_by_argument(argument: str) -> ProcessInfo | None:
    """The process whose command line holds ``argument`` exactly (the browser carries a unique
    one), or ``None``."""
    wanted = argument.encode()
    for pid in _pids():
        if wanted in _cmdline(pid).split(b"\0"):
            return read_process(pid)
    return None


def carrying_variable(name: str, value: str) -> list[int]:
    """Pids of the live processes whose environment holds ``name=value``."""
    wanted = f"{name}={value}".encode()
    return [pid for pid in _pids() if wanted in _environ(pid).split(b"\0")]


def kill_group(pgid: int) -> None:
    """SIGKILL every process of the group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def reap_orphaned_zombies() -> int:
    """Reap dead chromium processes that were re-parented to this process.

    That happens when this process is PID 1 (a container started without an init) or a child
    subreaper: nobody else would ever collect them. Only chromium's names are reaped, and only
    zombies, so a child that asyncio (or anyone) is waiting for is never taken from it.
    """
    me = os.getpid()
    reaped = 0
    for info in all_processes():
        if info.ppid == me and info.is_zombie and info.name in CHROMIUM_NAMES:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(info.pid, os.WNOHANG)
                reaped += 1
    return reaped
