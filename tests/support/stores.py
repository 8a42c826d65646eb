"""The stores a storage test works with, over one database."""

from __future__ import annotations

from dataclasses import dataclass

from taskcrawler.storage import Database, JobStore, WorkStore


@dataclass
class Stores:
    db: Database
    jobs: JobStore
    work: WorkStore
