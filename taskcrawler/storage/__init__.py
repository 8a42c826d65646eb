"""Persistence: the job table, its queries, and the migrations that create it."""

from taskcrawler.storage.migrate import upgrade_database
from taskcrawler.storage.store import Created, JobStore, NewJob

__all__ = ["Created", "JobStore", "NewJob", "upgrade_database"]
