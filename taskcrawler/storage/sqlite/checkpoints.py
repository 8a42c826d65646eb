"""SQLite's checkpoints, taken out of the writer lock.

In WAL mode a commit that finds the log past ``wal_autocheckpoint`` pages copies the log into
the database file and syncs both files before it returns, so the writer lock every process
queues for (:mod:`.locking`) is held for two ``fdatasync`` calls and the copy. Measured in
``taskcrawler serve`` while its worker drained and the API took 500 POST/s, one commit in every
1-1.5 s did so, 7-260 ms each on a loaded machine, and every POST arriving meanwhile waited
for it (bench/results/2026-12-07-embedded-p99.md).

A passive checkpoint needs no writer: SQLite runs it beside one, copying what was committed
when it began. So each process that writes runs its own in a thread of its own, soon after its
commits. The commits' automatic checkpoint is left as the bound of the log's size
(``BOUND_PAGES``): a copy is whole (and the log can start again from its beginning) only if no
commit overtook it, which under a steady stream of writes is rare, so the commit that reaches
the bound still finishes the copy under the lock, with little left to copy.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

#: The log's size (pages) at which a commit still checkpoints, under the lock: SQLite's default
#: is 1,000, which a draining worker and the API filled every 1-1.5 s. 10,000 pages (40 MB at
#: most of log file) took 2-3 s in the same run.
BOUND_PAGES = 2_000

#: How long commits gather before a checkpoint: each costs two syncs, and each restart of the
#: log that follows one costs the next writer a sync of the log's header, under the lock.
INTERVAL_SECONDS = 1.0

#: Checkpoints in a row, at most, to copy the whole log while commits go on.
ATTEMPTS = 5

PASSIVE = "PRAGMA wal_checkpoint(PASSIVE)"


class Checkpointer:
    """Runs a passive checkpoint within ``interval`` seconds of :meth:`wrote`, in its own thread
    on its own connection (``connect()``: one that never takes the writer lock)."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        *,
        interval: float = INTERVAL_SECONDS,
    ) -> None:
        self._connect = connect
        self._interval = interval
        self._wrote = threading.Event()
        self._stopping = threading.Event()
        self._start = threading.Lock()
        self._thread: threading.Thread | None = None
        #: What the last checkpoint said: (busy, pages in the log, pages checkpointed).
        self.last: tuple[int, int, int] | None = None
        self.done = 0

    def wrote(self) -> None:
        """A transaction was committed: its pages reach the database file by a checkpoint here,
        the thread started first if it is not running (as after :meth:`close`)."""
        with self._start:
            if self._thread is None:
                self._stopping.clear()
                self._thread = threading.Thread(
                    target=self._run, name="sqlite-checkpoints", daemon=True
                )
                self._thread.start()
        self._wrote.set()

    def _run(self) -> None:
        conn = self._connect()
        try:
            while self._wait_for_commits():
                self._checkpoint(conn)
        finally:
            conn.close()

    def _wait_for_commits(self) -> bool:
        """False once closing. The commits made while this waits are in the next checkpoint."""
        self._wrote.wait()
        if self._stopping.wait(self._interval):
            return False
        self._wrote.clear()
        return True

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        """Passive checkpoints until one copies the whole log, ``ATTEMPTS`` at most. Only a
        whole copy lets the next writer start the log again from its beginning; one that a
        commit overtook (the API commits about a hundred times a second while a worker drains)
        copies what was committed when it began, and the next has only the rest to copy."""
        for _ in range(ATTEMPTS):
            try:
                busy, pages, copied = conn.execute(PASSIVE).fetchone()
            except sqlite3.Error as exc:
                # The commits' own checkpoint still bounds the log; the next commit tries again.
                log.warning("SQLite checkpoint failed: %s", exc)
                return
            self.last = (busy, pages, copied)
            self.done += 1
            if busy or copied == pages:  # another process's checkpoint runs, or all is copied
                return

    def close(self) -> None:
        """Stops the thread (a checkpoint under way ends first); the last connection to close
        checkpoints what is left, as SQLite does."""
        with self._start:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            self._wrote.set()
            thread.join()
