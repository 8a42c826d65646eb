"""The checkpoint thread outlives a checkpoint that fails: the next commit's checkpoint runs."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from taskcrawler.storage.sqlite.checkpoints import Checkpointer

GIVE_UP_SECONDS = 20


class FailsOnce:
    """A connection whose first statement fails as a disk error would."""

    def __init__(self, path: Path, failed: threading.Event) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None)
        self.failed = failed

    def execute(self, sql: str) -> Any:
        if not self.failed.is_set():
            self.failed.set()
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql)

    def close(self) -> None:
        self._conn.close()


def _wal_database(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.close()


def _until(done: Any) -> bool:
    stop = threading.Event()
    for _ in range(GIVE_UP_SECONDS * 100):
        if done():
            return True
        stop.wait(0.01)
    return False


def test_a_failed_checkpoint_leaves_the_thread_to_checkpoint_again(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    _wal_database(path)
    failed = threading.Event()
    checkpoints = Checkpointer(lambda: FailsOnce(path, failed), interval=0.0)  # type: ignore[arg-type, return-value]
    try:
        checkpoints.wrote()
        assert failed.wait(GIVE_UP_SECONDS)
        assert checkpoints.done == 0
        checkpoints.wrote()
        assert _until(lambda: checkpoints.done == 1)
    finally:
        checkpoints.close()
    assert checkpoints.last is not None
    assert checkpoints.last[0] == 0  # not busy: it ran


def test_a_closed_checkpointer_starts_again_on_the_next_commit(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    _wal_database(path)
    checkpoints = Checkpointer(lambda: sqlite3.connect(path, isolation_level=None), interval=0.0)
    try:
        checkpoints.wrote()
        assert _until(lambda: checkpoints.done == 1)
        checkpoints.close()
        checkpoints.wrote()
        assert _until(lambda: checkpoints.done == 2)
    finally:
        checkpoints.close()
