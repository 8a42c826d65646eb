"""Running a worker until asked to stop, as ``taskcrawler worker``, inside ``serve``'s worker
process, or beside an API: the parts :mod:`taskcrawler.bootstrap` builds, started and closed
together. Wiring, beside the composition root: the worker package never imports either."""

from __future__ import annotations

import asyncio
import logging

from prometheus_client import CollectorRegistry

from taskcrawler import bootstrap
from taskcrawler.bootstrap import Runtime
from taskcrawler.embed import Embedder
from taskcrawler.observability import QueueDepth, WorkerMetrics, process_registry
from taskcrawler.observability.http import MetricsEndpoint, serve_metrics, serve_metrics_unix
from taskcrawler.settings import Settings
from taskcrawler.worker.parsing import PageParser
from taskcrawler.worker.runner import ALL_DUTIES, Duties
from taskcrawler.worker.webhooks import running_beside
from taskcrawler.worker.worker import Worker

#: The worker's start and stop lines, under the logger name they have always had.
log = logging.getLogger("taskcrawler.worker.runner")


async def run_worker(
    settings: Settings,
    *,
    stop: asyncio.Event,
    runtime: Runtime | None = None,
    registry: CollectorRegistry | None = None,
    serve_metrics_port: bool = False,
    metrics_socket: str | None = None,
    embedder: Embedder | None = None,
    duties: Duties = ALL_DUTIES,
) -> Worker:
    """Run one worker until ``stop`` is set. A ``runtime`` passed in is shared and left open.

    ``duties``: what it runs beside its jobs (all of it but where a ``taskcrawler worker`` of
    several processes gives one of them the rest, see :class:`Duties`).

    An ``embedder`` passed in (the API's, under ``serve``: one model in memory) is left open.
    Its metrics go to ``registry`` (the API's, under ``serve``) or a registry of its own, served
    on TASKCRAWLER_WORKER_METRICS_PORT when ``serve_metrics_port`` (``taskcrawler worker``),
    and on the Unix socket ``metrics_socket`` for ``serve``'s API to include in its own.
    """
    shared = runtime or Runtime.open(settings)
    fetcher = bootstrap.fetcher(settings, shared.redis)
    parser = bootstrap.page_parser(settings)
    metrics = WorkerMetrics(registry or process_registry())
    rendering = bootstrap.render_step(settings, parser)
    metrics.track_rendering(rendering.available, rendering.stats)
    page_embedder = embedder or bootstrap.embedder(settings)
    chat_model = bootstrap.chat_model(settings)
    worker = bootstrap.worker(
        shared,
        fetcher,
        parser,
        metrics,
        rendering,
        page_embedder,
        chat_model,
        sweeps=duties.sweeper,
    )
    servers = []
    if serve_metrics_port and settings.worker_metrics_port:
        endpoint = MetricsEndpoint(
            metrics.registry, [QueueDepth(metrics.registry, shared.queue.depth)]
        )
        host, port = settings.worker_metrics_host, settings.worker_metrics_port
        servers.append(await serve_metrics(endpoint, host, port))
    if metrics_socket is not None:
        # The API reports the queue's depth itself: only this process's own series.
        servers.append(await serve_metrics_unix(MetricsEndpoint(metrics.registry), metrics_socket))
    log.info("worker started: concurrency %d", settings.worker_concurrency)
    if rendering.available:
        log.info(
            "rendering available: %s, %d pages at once",
            rendering.availability.reason,
            settings.browser_concurrency,
        )
    else:
        log.warning(
            "rendering unavailable: %s; jobs with render=always fail as render_unavailable, "
            "render=auto extracts the fetched HTML",
            rendering.availability.reason,
        )
    try:
        if duties.scheduled:
            await _run_with_scheduled(worker, shared, parser, stop)
        else:
            await worker.run(stop)
    finally:
        for server in servers:
            if server is not None:
                await server.cleanup()
        await rendering.close()  # no chromium process outlives the worker
        await fetcher.close()
        await parser.aclose()
        if embedder is None:
            await page_embedder.close()
        if chat_model is not None:
            await chat_model.close()
        if runtime is None:
            await shared.close()
        log.info("worker stopped: %s", worker.stats)
    return worker


async def _run_with_scheduled(
    worker: Worker, shared: Runtime, parser: PageParser, stop: asyncio.Event
) -> None:
    """``worker`` with the monitor scheduler, the webhook dispatcher and the hook announcer."""
    dispatcher = bootstrap.webhook_dispatcher(shared)
    scheduler = bootstrap.monitor_scheduler(shared, parser)
    monitoring = asyncio.create_task(scheduler.run(stop), name="monitors")
    announcer = bootstrap.hook_announcer(shared)
    announcing = asyncio.create_task(announcer.run(stop), name="firecrawl-webhooks")
    try:
        async with running_beside(dispatcher, stop, shared.settings.webhook_timeout_seconds):
            await worker.run(stop)
    finally:
        stop.set()
        await asyncio.gather(monitoring, announcing, return_exceptions=True)
