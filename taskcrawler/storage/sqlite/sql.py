"""Every statement SQLite runs that PostgreSQL does not: raw SQL, and SQLite's own dialect."""

from __future__ import annotations

from sqlalchemy.dialects import sqlite

from taskcrawler.storage.tables import jobs

#: Run on every new connection. WAL lets readers run beside the writer; NORMAL syncs at
#: checkpoints, not at every commit, which is safe against application crashes (the embedded
#: mode's realistic failure).
PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA busy_timeout=10000",
    "PRAGMA temp_store=MEMORY",
    "PRAGMA cache_size=-65536",
)

#: New jobs, deduplicated by the unique (owner, url_key) index; run as an executemany.
INSERT_NEW_JOBS = (
    sqlite.insert(jobs)
    .on_conflict_do_nothing(index_elements=["owner", "url_key"])
    .returning(jobs.c.id)
)

#: A crawl's new pages: the same statement, their rows carry ``crawl_id`` and ``depth`` too.
INSERT_FRONTIER_JOBS = INSERT_NEW_JOBS
