"""Running a worker with its own resources, as ``taskcrawler worker`` or inside ``serve``."""

from __future__ import annotations

import asyncio
import logging

from prometheus_client import CollectorRegistry

from taskcrawler.fetch import Fetcher, make_host_limiter
from taskcrawler.observability import QueueDepth, WorkerMetrics, process_registry
from taskcrawler.observability.http import MetricsEndpoint, serve_metrics
from taskcrawler.queue import JobQueue, queue_from_settings
from taskcrawler.queue.redis import RedisQueue
from taskcrawler.settings import Settings
from taskcrawler.storage import Database, WorkStore
from taskcrawler.worker.webhooks import webhook_dispatcher
from taskcrawler.worker.worker import Worker

log = logging.getLogger(__name__)


def build_fetcher(settings: Settings, queue: JobQueue) -> Fetcher:
    """A fetcher whose politeness and robots cache are shared through Redis when the queue is
    Redis (every worker process and machine counts together), else kept in this process."""
    redis = queue.client if isinstance(queue, RedisQueue) else None
    return Fetcher(
        settings,
        limiter=make_host_limiter(settings, redis),
        host_wait_seconds=settings.host_wait_seconds,
        redis=redis,
        redis_prefix=settings.redis_prefix,
    )


async def run_worker(
    settings: Settings,
    *,
    stop: asyncio.Event,
    db: Database | None = None,
    queue: JobQueue | None = None,
    registry: CollectorRegistry | None = None,
    serve_metrics_port: bool = False,
) -> Worker:
    """Run one worker until ``stop`` is set. Resources passed in are shared and left open.

    Its metrics go to ``registry`` (the API's, under ``serve``) or a registry of its own, served
    on TASKCRAWLER_WORKER_METRICS_PORT when ``serve_metrics_port`` (``taskcrawler worker``).
    """
    own_db = db or Database.from_url(settings.database_url, pool_size=settings.db_pool_size)
    own_queue = queue or queue_from_settings(settings)
    fetcher = build_fetcher(settings, own_queue)
    metrics = WorkerMetrics(registry or process_registry())
    worker = Worker(settings, WorkStore(own_db), own_queue, fetcher, metrics=metrics)
    server = None
    if serve_metrics_port and settings.worker_metrics_port:
        endpoint = MetricsEndpoint(
            metrics.registry, [QueueDepth(metrics.registry, own_queue.depth)]
        )
        host, port = settings.worker_metrics_host, settings.worker_metrics_port
        server = await serve_metrics(endpoint, host, port)
    log.info("worker started: concurrency %d", settings.worker_concurrency)
    try:
        async with webhook_dispatcher(settings, own_db, stop):
            await worker.run(stop)
    finally:
        if server is not None:
            await server.cleanup()
        await fetcher.close()
        if queue is None:
            await own_queue.close()
        if db is None:
            await own_db.close()
        log.info("worker stopped: %s", worker.stats)
    return worker
