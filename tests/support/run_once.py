"""What a test run builds once for all its test processes: a file in the folder they share.

Under pytest-xdist each process has a temporary folder of its own inside the run's
(``pytest-N/popen-gwK``); the run's folder is their parent. The first process to ask for a
file builds it there under a lock, and the others wait for it and read it. Without xdist the
run's folder is the process's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder every test process of this run shares."""
    own = tmp_path_factory.getbasetemp()
    return own.parent if os.environ.get("PYTEST_XDIST_WORKER") else own


@contextlib.asynccontextmanager
async def _locked(lock: Path) -> AsyncIterator[None]:
    with lock.open("a") as handle:
        # In a thread: the session's event loop goes on while another process builds.
        await asyncio.to_thread(fcntl.flock, handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


async def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Awaitable[None]]
) -> Path:
    """The path of the run's file ``name``, built by ``build(path)`` by the first process that
    asks. ``build`` writes into a folder of its own; the file appears under ``name`` only
    whole, so a process never reads half of it."""
    shared = run_folder(tmp_path_factory)
    path = shared / name
    async with _locked(shared / f"{name}.lock"):
        if not path.exists():
            workdir = tmp_path_factory.mktemp(f"{name}-build")
            built = workdir / name
            await build(built)
            built.rename(path)
    return path
