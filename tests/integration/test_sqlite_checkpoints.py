"""SQLite's checkpoints happen outside the writer lock: a commit leaves the log's pages to a
thread of the process's own (``storage/sqlite/checkpoints.py``), which copies them into the
database file soon after; a commit still checkpoints once the log passes its bound.

What a checkpoint did is read from the log's index (how many frames the log holds, how many of
them are in the database file), never from the clock."""

from __future__ import annotations

import asyncio
import sqlite3
import struct
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection, make_url

from taskcrawler.storage import Database
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.sqlite.checkpoints import BOUND_PAGES, Checkpointer

GIVE_UP_SECONDS = 20
PAGE = 4096


def _blob_table(conn: Connection) -> None:
    conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS blobs (b BLOB)")


def _pages(pages: int) -> object:
    """A write of about ``pages`` pages of the log."""

    def write(conn: Connection) -> None:
        conn.execute(sa.text("INSERT INTO blobs VALUES (:b)"), {"b": b"x" * (pages * PAGE)})

    return write


def _log(sqlite_url: str) -> tuple[int, int]:
    """(frames in the log, frames of it already copied into the database file), read from the
    log's index without a connection, so without checkpointing: its header's ``mxFrame`` and
    the checkpoint information's ``nBackfill`` (https://sqlite.org/walformat.html)."""
    index = Path(f"{make_url(sqlite_url).database}-shm").read_bytes()[:100]
    (frames,) = struct.unpack_from("=I", index, 16)
    (copied,) = struct.unpack_from("=I", index, 96)
    return frames, copied


@pytest.fixture
def no_checkpoint_thread(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The checkpoint thread told of commits but never started: what is left in the log is
    what the commits themselves left."""
    told: list[int] = []
    monkeypatch.setattr(Checkpointer, "wrote", lambda self: told.append(1))
    return told


async def test_a_commit_leaves_the_log_to_the_checkpoint_thread(
    sqlite_url: str, no_checkpoint_thread: list[int]
) -> None:
    db = open_database(sqlite_url)
    try:
        await db.run_write(_blob_table)
        before = len(no_checkpoint_thread)
        # Past SQLite's default bound (1,000 pages), at which a commit used to checkpoint.
        await db.run_write(_pages(1_500))  # type: ignore[arg-type]
        assert len(no_checkpoint_thread) == before + 1
        pages, copied = _log(sqlite_url)
    finally:
        await db.close()
    assert pages - copied > 1_000


async def test_a_commit_still_checkpoints_past_the_bound(
    sqlite_url: str, no_checkpoint_thread: list[int]
) -> None:
    db = open_database(sqlite_url)
    try:
        await db.run_write(_blob_table)
        await db.run_write(_pages(BOUND_PAGES + 500))  # type: ignore[arg-type]
        pages, copied = _log(sqlite_url)
    finally:
        await db.close()
    assert pages > BOUND_PAGES
    assert copied == pages


async def test_the_thread_copies_the_log_after_writes(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = threading.Event()
    checkpoint = Checkpointer._checkpoint

    def checkpointed(self: Checkpointer, conn: sqlite3.Connection) -> None:
        checkpoint(self, conn)
        if self.last is not None and self.last[1] > 1_000:
            done.set()

    monkeypatch.setattr(Checkpointer, "_checkpoint", checkpointed)
    db = open_database(sqlite_url)
    try:
        await db.run_write(_blob_table)
        await db.run_write(_pages(1_500))  # type: ignore[arg-type]
        assert await asyncio.to_thread(done.wait, GIVE_UP_SECONDS)
        last = _checkpoints_of(db).last
        frames, copied = _log(sqlite_url)
    finally:
        await db.close()
    assert last is not None
    assert (last[0], last[2]) == (0, last[1])
    assert copied == frames > 1_000


def _checkpoints_of(db: Database) -> Checkpointer:
    found = getattr(db.backend, "_checkpoints", None)
    assert isinstance(found, Checkpointer)
    return found
