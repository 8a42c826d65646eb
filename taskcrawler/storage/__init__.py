"""Persistence: the schema, its migrations, and the repositories behind :mod:`.ports`.

:func:`open_storage` is how the rest of the system gets them: one database, its backend picked by
the URL's scheme, and every repository on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from taskcrawler.domain.jobs import Created, NewJob
from taskcrawler.storage.adapters import chunk_store_for, open_database
from taskcrawler.storage.batches import BatchStore
from taskcrawler.storage.content import ContentStore
from taskcrawler.storage.crawls import CrawlStore
from taskcrawler.storage.database import Database
from taskcrawler.storage.exports import ExportStore
from taskcrawler.storage.idempotency import IdempotencyStore
from taskcrawler.storage.jobs import JobStore
from taskcrawler.storage.keys import KeyStore
from taskcrawler.storage.monitor_work import MonitorWorkStore
from taskcrawler.storage.monitors import MonitorStore
from taskcrawler.storage.ports import (
    BatchRepository,
    ChunkRepository,
    ContentRepository,
    CrawlRepository,
    ExportRepository,
    IdempotencyRepository,
    JobRepository,
    KeyRepository,
    MonitorRepository,
    MonitorWorkRepository,
    TrackingRepository,
    WebhookRepository,
    WorkRepository,
)
from taskcrawler.storage.tracking import TrackingStore
from taskcrawler.storage.webhooks import WebhookStore
from taskcrawler.storage.work import WorkStore


@dataclass(frozen=True, slots=True)
class Storage:
    """One database and every repository on it."""

    db: Database
    jobs: JobRepository
    work: WorkRepository
    content: ContentRepository
    keys: KeyRepository
    idempotency: IdempotencyRepository
    webhooks: WebhookRepository
    chunks: ChunkRepository
    crawls: CrawlRepository
    monitors: MonitorRepository
    monitor_work: MonitorWorkRepository
    exports: ExportRepository
    batches: BatchRepository
    tracking: TrackingRepository

    @classmethod
    def on(cls, db: Database) -> Storage:
        return cls(
            db=db,
            jobs=JobStore(db),
            work=WorkStore(db),
            content=ContentStore(db),
            keys=KeyStore(db),
            idempotency=IdempotencyStore(db),
            webhooks=WebhookStore(db),
            chunks=chunk_store_for(db),
            crawls=CrawlStore(db),
            monitors=MonitorStore(db),
            monitor_work=MonitorWorkStore(db),
            exports=ExportStore(db),
            batches=BatchStore(db),
            tracking=TrackingStore(db),
        )

    async def close(self) -> None:
        try:
            await self.chunks.settle()
        finally:
            await self.db.close()


def open_storage(url: str, *, pool_size: int = 10) -> Storage:
    """The database at ``url`` (``postgresql+asyncpg://…`` or ``sqlite+aiosqlite://…``) and
    its repositories. Close it with :meth:`Storage.close`."""
    return Storage.on(open_database(url, pool_size=pool_size))


__all__ = [
    "CrawlStore",
    "Created",
    "Database",
    "JobStore",
    "KeyStore",
    "MonitorStore",
    "MonitorWorkStore",
    "NewJob",
    "Storage",
    "WorkStore",
    "open_storage",
    "upgrade_database",
]


async def upgrade_database(database_url: str, revision: str = "head") -> None:
    """Migrate the database (Alembic, imported only here: the API and workers never need it)."""
    from taskcrawler.storage.migrate import upgrade_database as upgrade

    await upgrade(database_url, revision)
