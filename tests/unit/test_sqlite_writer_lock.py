"""SQLite's writers queue across processes on a flock beside the database."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path

import pytest

from taskcrawler.storage.sqlite.locking import NoLock, WriterLock, writer_lock


async def test_a_second_holder_waits_for_the_first(tmp_path: Path) -> None:
    # Two descriptors of one file are two lock holders, as two processes are.
    first, second = WriterLock(str(tmp_path / "db-writer")), WriterLock(str(tmp_path / "db-writer"))
    order: list[str] = []
    async with first.held():
        waiting = asyncio.create_task(_hold(second, order))
        await asyncio.sleep(0.1)
        assert order == []  # still waiting, and the event loop was free meanwhile
        order.append("first done")
    await asyncio.wait_for(waiting, 5)
    assert order == ["first done", "second"]
    first.close()
    second.close()


async def _hold(lock: WriterLock, order: list[str]) -> None:
    async with lock.held():
        order.append("second")


async def test_a_waiter_cancelled_does_not_keep_the_lock(tmp_path: Path) -> None:
    path = str(tmp_path / "db-writer")
    first, second = WriterLock(path), WriterLock(path)
    async with first.held():
        waiting = asyncio.create_task(_hold(second, []))
        await asyncio.sleep(0.1)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    # The cancelled waiter's thread took the lock once it was free, and let it go again.
    fd = os.open(path, os.O_RDWR)
    try:
        for _ in range(100):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(0.05)
        else:
            pytest.fail("the lock stayed taken after its waiter was cancelled")
    finally:
        os.close(fd)
    first.close()
    second.close()


def test_only_a_database_file_has_a_lock_file() -> None:
    assert isinstance(writer_lock(":memory:"), NoLock)
    assert isinstance(writer_lock(None), NoLock)
    lock = writer_lock("/data/taskcrawler.db")
    assert isinstance(lock, WriterLock)
    assert lock.path == "/data/taskcrawler.db-writer"
