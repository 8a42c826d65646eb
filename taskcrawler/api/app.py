from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from taskcrawler import __version__
from taskcrawler.api.auth import Authenticator
from taskcrawler.api.deps import Services
from taskcrawler.api.errors import install_error_handlers
from taskcrawler.api.limits import BodySizeLimit
from taskcrawler.api.routes import content, health, jobs
from taskcrawler.api.routes import dashboard as dashboard_routes
from taskcrawler.api.routes import deliveries as deliveries_routes
from taskcrawler.api.routes import keys as keys_routes
from taskcrawler.api.routes import map as map_routes
from taskcrawler.fetch import Fetcher, make_host_limiter
from taskcrawler.observability import ApiMetrics, QueueDepth, process_registry
from taskcrawler.observability.http import MetricsEndpoint
from taskcrawler.observability.http import router as metrics_router
from taskcrawler.queue import JobQueue, queue_from_settings
from taskcrawler.queue.redis import RedisQueue
from taskcrawler.service.jobs import JobService
from taskcrawler.service.mapping import MapService
from taskcrawler.service.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter
from taskcrawler.settings import Settings
from taskcrawler.storage import Database, JobStore, KeyStore, WorkStore
from taskcrawler.storage.content import ContentStore
from taskcrawler.storage.idempotency import IdempotencyStore

if TYPE_CHECKING:
    from taskcrawler.worker import Worker

log = logging.getLogger(__name__)

DESCRIPTION = """
Submit a URL; a worker fetches it in the background and stores what the page says.
Jobs are idempotent per URL: submitting a URL again returns its job.
"""


def create_app(
    settings: Settings,
    *,
    run_worker: bool = False,
    db: Database | None = None,
    queue: JobQueue | None = None,
    fetcher: Fetcher | None = None,
) -> FastAPI:
    """The ASGI app. Resources are built and closed by its lifespan, never at import.

    ``run_worker`` runs a worker inside the API process (``taskcrawler serve``, the embedded
    mode); ``db``, ``queue`` and ``fetcher`` (what ``POST /api/v1/map`` fetches with) may be
    passed in by tests or embedders, and are then not closed.
    Metrics go to a registry of this app's own (``app.state.metrics``), the worker's included.
    """
    registry = process_registry()
    api_metrics = ApiMetrics(registry)
    queue_depth = QueueDepth(registry)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own_db = db or Database.from_url(settings.database_url, pool_size=settings.db_pool_size)
        own_queue = queue or queue_from_settings(settings)
        own_fetcher = fetcher or _fetcher(settings, own_queue)
        queue_depth.source = own_queue.depth
        keys = KeyStore(own_db)
        app.state.services = Services(
            settings=settings,
            db=own_db,
            queue=own_queue,
            keys=keys,
            jobs=JobService(
                settings,
                JobStore(own_db),
                WorkStore(own_db),
                own_queue,
                _limiter(own_queue),
                on_created=api_metrics.created,
            ),
            idempotency=IdempotencyStore(own_db),
            content=ContentStore(own_db),
            authenticator=Authenticator(keys, required=settings.auth_required),
            mapper=MapService(own_fetcher, settings),
        )
        stop = asyncio.Event()
        worker_task = (
            _start_worker(settings, own_db, own_queue, stop, registry) if run_worker else None
        )
        try:
            yield
        finally:
            stop.set()
            if worker_task is not None:
                await worker_task
            if fetcher is None:
                await own_fetcher.close()
            if queue is None:
                await own_queue.close()
            if db is None:
                await own_db.close()

    app = FastAPI(
        title="TaskCrawler",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    app.include_router(jobs.router)
    app.include_router(deliveries_routes.router)
    app.include_router(content.router)
    app.include_router(map_routes.router)
    app.include_router(keys_routes.router)
    app.include_router(health.router)
    app.include_router(dashboard_routes.router)
    app.state.metrics = MetricsEndpoint(registry, [queue_depth])
    app.include_router(metrics_router)
    return app


def _limiter(queue: JobQueue) -> RateLimiter:
    """Shared through Redis when the queue is Redis, so every API process counts together."""
    if isinstance(queue, RedisQueue):
        return RedisRateLimiter(queue.client, prefix=queue.prefix)
    return MemoryRateLimiter()


def _fetcher(settings: Settings, queue: JobQueue) -> Fetcher:
    """The API's own fetcher (for map): the guard, robots.txt and politeness of a worker's,
    shared through Redis with the workers when the queue is Redis. It waits for a politeness
    slot as long as the fetch deadline allows, rather than giving up at once like a job."""
    redis = queue.client if isinstance(queue, RedisQueue) else None
    return Fetcher(
        settings,
        limiter=make_host_limiter(settings, redis),
        redis=redis,
        redis_prefix=settings.redis_prefix,
    )


def _start_worker(
    settings: Settings,
    db: Database,
    queue: JobQueue,
    stop: asyncio.Event,
    registry: CollectorRegistry,
) -> asyncio.Task[Worker]:
    from taskcrawler.worker.runner import run_worker  # the API-only process needs no fetcher

    return asyncio.create_task(
        run_worker(settings, db=db, queue=queue, stop=stop, registry=registry)
    )
