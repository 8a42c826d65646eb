"""The composition root: what every process runs is built here from its settings, and only here.

``taskcrawler serve``, ``api`` and ``worker`` open one :class:`Runtime` (the database and its
repositories, the queue, and the Redis client when there is one) and build their parts on it;
``reextract`` and ``keys`` open the storage alone. Components receive the settings they use as
small config objects or parameters, and the resources they share from here: none opens its own,
and none borrows one from another. Worker-side parts import lazily, so an API-only process never
loads the fetcher.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from taskcrawler import __version__
from taskcrawler.queue import JobQueue, MemoryQueue
from taskcrawler.service import Services
from taskcrawler.service.content import ContentService
from taskcrawler.service.deliveries import DeliveryService
from taskcrawler.service.exports import ExportService
from taskcrawler.service.health import HealthService
from taskcrawler.service.idempotency import IdempotencyService
from taskcrawler.service.jobs import JobPolicy, JobService
from taskcrawler.service.keys import KeyService
from taskcrawler.service.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter
from taskcrawler.settings import Settings
from taskcrawler.storage import Storage, open_storage

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from taskcrawler.domain.transitions import RetryPolicy
    from taskcrawler.fetch import Fetcher, HostLimiter
    from taskcrawler.observability import WorkerMetrics
    from taskcrawler.worker import Worker
    from taskcrawler.worker.parsing import PageParser
    from taskcrawler.worker.webhooks import WebhookDispatcher
    from taskcrawler.worker.worker import WorkerConfig


@dataclass(frozen=True, slots=True)
class Runtime:
    """What a process opens once and shares: storage, the queue, and Redis when configured
    (the queue, rate limits, politeness and the robots cache all use the one client)."""

    settings: Settings
    storage: Storage
    queue: JobQueue
    redis: Redis | None = None

    @classmethod
    def open(cls, settings: Settings) -> Runtime:
        storage = storage_of(settings)
        if settings.redis_url is None:
            return cls(settings, storage, MemoryQueue())
        from taskcrawler.queue.redis import RedisQueue, redis_client  # embedded: no Redis

        redis = redis_client(settings.redis_url)
        return cls(settings, storage, RedisQueue(redis, prefix=settings.redis_prefix), redis)

    async def close(self) -> None:
        await self.queue.close()
        if self.redis is not None:
            await self.redis.aclose()
        await self.storage.close()


def storage_of(settings: Settings, *, pool_size: int | None = None) -> Storage:
    """The database of ``settings`` and its repositories."""
    return open_storage(settings.database_url, pool_size=pool_size or settings.db_pool_size)


@asynccontextmanager
async def storage_only(settings: Settings, *, pool_size: int) -> AsyncIterator[Storage]:
    """The storage alone, for a command that needs no queue (``reextract``, ``keys``)."""
    storage = storage_of(settings, pool_size=pool_size)
    try:
        yield storage
    finally:
        await storage.close()


def key_service(storage: Storage, settings: Settings) -> KeyService:
    """Keys as the API and ``taskcrawler keys`` manage them, on ``storage``."""
    return KeyService(storage.keys, required=settings.auth_required)


# --- the API ------------------------------------------------------------------------------------


def job_policy(settings: Settings) -> JobPolicy:
    return JobPolicy(
        redispatch_after=settings.redispatch_seconds,
        rate_limit_per_minute=settings.rate_limit_per_minute,
        max_pending_jobs=settings.max_pending_jobs,
    )


def rate_limiter(runtime: Runtime) -> RateLimiter:
    """Shared through Redis when there is one, so every API process counts together."""
    if runtime.redis is None:
        return MemoryRateLimiter()
    return RedisRateLimiter(runtime.redis, prefix=runtime.settings.redis_prefix)


def api_fetcher(runtime: Runtime) -> Fetcher:
    """The API's own fetcher (for map): the guard, robots.txt and politeness of a worker's,
    shared through Redis with the workers when there is one. It waits for a politeness slot as
    long as the fetch deadline allows, rather than giving up at once like a job."""
    from taskcrawler.fetch import Fetcher

    settings = runtime.settings
    return Fetcher(
        settings,
        limiter=host_limiter(settings, runtime.redis),
        redis=runtime.redis,
        redis_prefix=settings.redis_prefix,
    )


def api_services(
    runtime: Runtime,
    page_fetcher: Fetcher,
    *,
    on_created: Callable[[int], object] = lambda count: None,
) -> Services:
    from taskcrawler.service.firecrawl import FirecrawlService
    from taskcrawler.service.mapping import MapService

    storage = runtime.storage
    jobs = JobService(
        job_policy(runtime.settings),
        storage.jobs,
        runtime.queue,
        rate_limiter(runtime),
        on_created=on_created,
    )
    content = ContentService(jobs, storage.content)
    mapper = MapService(page_fetcher, runtime.settings)
    return Services(
        jobs=jobs,
        content=content,
        deliveries=DeliveryService(jobs, storage.webhooks),
        keys=key_service(storage, runtime.settings),
        idempotency=IdempotencyService(storage.idempotency),
        health=HealthService(storage.db.ping, runtime.queue.ping),
        mapper=mapper,
        exports=export_service(storage, runtime.settings),
        firecrawl=FirecrawlService(jobs, content, mapper, storage.batches),
    )


def export_service(storage: Storage, settings: Settings) -> ExportService:
    return ExportService(
        storage.exports,
        request_headers={"user-agent": settings.user_agent},
        software=f"TaskCrawler {__version__}",
    )


# --- the worker ---------------------------------------------------------------------------------


def retry_policy(settings: Settings) -> RetryPolicy:
    from taskcrawler.domain.transitions import RetryPolicy

    return RetryPolicy(
        max_retries=settings.max_retries,
        base_seconds=settings.retry_base_seconds,
        max_seconds=settings.retry_max_seconds,
    )


def worker_config(settings: Settings) -> WorkerConfig:
    from taskcrawler.worker.sweeper import SweepConfig
    from taskcrawler.worker.worker import WorkerConfig

    return WorkerConfig(
        concurrency=settings.worker_concurrency,
        retry=retry_policy(settings),
        sweep=SweepConfig(
            interval_seconds=settings.sweep_interval_seconds,
            max_retries=settings.max_retries,
            redispatch_seconds=settings.redispatch_seconds,
        ),
        lease_seconds=settings.lease_seconds,
        shutdown_grace_seconds=settings.shutdown_grace_seconds,
        archive_pages=settings.archive_pages,
    )


def host_limiter(settings: Settings, redis: Redis | None = None) -> HostLimiter:
    """Politeness per host: shared through Redis when there is one (every worker process and
    machine counts together), else kept in this process."""
    from taskcrawler.fetch import make_host_limiter

    return make_host_limiter(settings, redis)


def fetcher(settings: Settings, redis: Redis | None = None) -> Fetcher:
    """A fetcher whose politeness and robots cache are shared through ``redis`` when given."""
    from taskcrawler.fetch import Fetcher

    return Fetcher(
        settings,
        limiter=host_limiter(settings, redis),
        host_wait_seconds=settings.host_wait_seconds,
        redis=redis,
        redis_prefix=settings.redis_prefix,
    )


def standalone_fetcher(settings: Settings) -> Fetcher:
    """A fetcher for one page in the foreground (``taskcrawler scrape``): politeness in this
    process, no wait bound for its slot but the fetch's deadline."""
    from taskcrawler.fetch import Fetcher

    return Fetcher(settings, limiter=host_limiter(settings))


def page_parser(settings: Settings) -> PageParser:
    """Where a worker parses its pages: small ones inline, the rest in a thread or in a pool
    of parser processes, each parse there under a deadline."""
    from taskcrawler.worker.parsing import PageParser

    return PageParser(
        timeout=settings.parse_timeout_seconds,
        processes=settings.parse_processes,
        max_links=settings.max_links_per_page,
    )


def worker(
    runtime: Runtime, page_fetcher: Fetcher, parser: PageParser, metrics: WorkerMetrics
) -> Worker:
    from taskcrawler.worker import Worker

    return Worker(
        worker_config(runtime.settings),
        runtime.storage.work,
        runtime.queue,
        page_fetcher,
        parser,
        metrics=metrics,
    )


def webhook_dispatcher(runtime: Runtime) -> WebhookDispatcher:
    from taskcrawler.worker.webhooks import WebhookDispatcher

    return WebhookDispatcher(runtime.settings, runtime.storage.webhooks)
