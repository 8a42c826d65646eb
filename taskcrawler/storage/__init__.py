"""Persistence: the tables, their queries, and the migrations that create them."""

from taskcrawler.storage.database import Database
from taskcrawler.storage.jobs import JobStore
from taskcrawler.storage.keys import KeyStore
from taskcrawler.storage.migrate import upgrade_database
from taskcrawler.storage.rows import Created, NewJob
from taskcrawler.storage.work import WorkStore

__all__ = [
    "Created",
    "Database",
    "JobStore",
    "KeyStore",
    "NewJob",
    "WorkStore",
    "upgrade_database",
]
