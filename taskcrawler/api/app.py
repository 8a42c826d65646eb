from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI
from prometheus_client import CollectorRegistry
from starlette.routing import Route

from taskcrawler import __version__, bootstrap
from taskcrawler.api.errors import install_error_handlers
from taskcrawler.api.inputs import EdgeGuard
from taskcrawler.api.limits import BodySizeLimit
from taskcrawler.api.routes import content, health, jobs
from taskcrawler.api.routes import crawls as crawls_routes
from taskcrawler.api.routes import dashboard as dashboard_routes
from taskcrawler.api.routes import deliveries as deliveries_routes
from taskcrawler.api.routes import export as export_routes
from taskcrawler.api.routes import keys as keys_routes
from taskcrawler.api.routes import map as map_routes
from taskcrawler.api.routes import metrics as metrics_routes
from taskcrawler.api.routes import monitors as monitor_routes
from taskcrawler.api.routes import search as search_routes
from taskcrawler.api.routes import web_search as web_search_routes
from taskcrawler.api.routing import include_flat
from taskcrawler.bootstrap import Runtime
from taskcrawler.firecrawl import errors as firecrawl_errors
from taskcrawler.firecrawl import routes as firecrawl_routes
from taskcrawler.observability import ApiMetrics, QueueDepth, process_registry
from taskcrawler.observability.http import ChildMetrics, MetricsEndpoint
from taskcrawler.settings import Settings

if TYPE_CHECKING:
    from taskcrawler.embed import Embedder
    from taskcrawler.worker import Worker

log = logging.getLogger(__name__)

#: The API's routers, in the order their routes are matched and documented.
ROUTERS = (
    jobs.router,
    deliveries_routes.router,
    content.router,
    map_routes.router,
    search_routes.router,
    web_search_routes.router,
    crawls_routes.router,
    monitor_routes.router,
    monitor_routes.runs_router,
    export_routes.router,
    firecrawl_routes.router,
    keys_routes.router,
    health.router,
    dashboard_routes.router,
    metrics_routes.router,
)

DESCRIPTION = """
Submit a URL; a worker fetches it in the background and stores what the page says.
Jobs are idempotent per URL: submitting a URL again returns its job.
"""


def create_app(
    settings: Settings,
    *,
    run_worker: bool = False,
    worker_process: bool = False,
    runtime: Runtime | None = None,
) -> FastAPI:
    """The ASGI app. Resources are built (by :mod:`taskcrawler.bootstrap`) and closed by its
    lifespan, never at import.

    ``worker_process`` runs a worker in a child process that the app starts, restarts when it
    dies and stops on shutdown (``taskcrawler serve``, the embedded mode). ``run_worker`` runs
    one inside the API process instead (tests, embedders). A ``runtime`` may be passed in by
    tests or embedders, and is then not closed.
    Metrics go to a registry of this app's own (``app.state.metrics``), the worker's included
    (read from the worker process when it has one).
    """
    registry = process_registry()
    api_metrics = ApiMetrics(registry)
    queue_depth = QueueDepth(registry)
    metrics_endpoint = MetricsEndpoint(registry, [queue_depth])

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        supervisor = None
        if worker_process:
            shared, supervisor = bootstrap.serve_runtime(settings)
        else:
            shared = runtime or Runtime.open(settings)
        queue_depth.source = shared.queue.depth
        app.state.runtime = shared
        fetcher = bootstrap.api_fetcher(shared)
        embedder = bootstrap.embedder(settings)  # for search queries; loaded when first used
        parsers = bootstrap.api_parsers(settings)
        reranker = bootstrap.reranker(settings)
        web_engine = bootstrap.web_search(settings)
        app.state.services = bootstrap.api_services(
            shared,
            fetcher,
            embedder,
            parsers,
            reranker=reranker,
            web_engine=web_engine,
            on_created=api_metrics.created,
        )
        app.state.firecrawl = bootstrap.firecrawl_service(shared, app.state.services)
        stop = asyncio.Event()
        worker_task = (
            _start_worker(settings, shared, stop, registry, embedder) if run_worker else None
        )
        try:
            if supervisor is not None:
                await supervisor.start()
                if supervisor.metrics_socket is not None:
                    metrics_endpoint.children.append(ChildMetrics(supervisor.metrics_socket))
            async with mcp.running():
                yield
        finally:
            stop.set()
            if worker_task is not None:
                await worker_task
            if supervisor is not None:
                await supervisor.stop()
            await fetcher.close()
            await parsers.aclose()
            await embedder.close()
            if reranker is not None:
                await reranker.close()
            if web_engine is not None:
                await web_engine.close()
            if runtime is None or supervisor is not None:
                await shared.close()

    app = FastAPI(
        title="TaskCrawler",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    install_error_handlers(app)
    firecrawl_errors.install_error_handlers(app)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(EdgeGuard)  # a NUL anywhere in the request line or headers: a 422
    # Added last, the outermost: Firecrawl's error body on /v1 and /v2 for every refusal, the
    # edge guard's included.
    app.add_middleware(firecrawl_errors.FirecrawlErrors)
    for router in ROUTERS:
        include_flat(app.router, router)
    app.state.metrics = metrics_endpoint
    # Here, not at the top: the MCP tools read the request models of this package.
    from taskcrawler.api.mcp import PATH as MCP_PATH
    from taskcrawler.api.mcp import McpEndpoint

    mcp = McpEndpoint(app, settings)
    app.router.routes.append(Route(MCP_PATH, endpoint=mcp, methods=["GET", "POST", "DELETE"]))
    return app


def _start_worker(
    settings: Settings,
    runtime: Runtime,
    stop: asyncio.Event,
    registry: CollectorRegistry,
    embedder: Embedder,
) -> asyncio.Task[Worker]:
    from taskcrawler.running import run_worker  # the API-only process needs no fetcher

    return asyncio.create_task(
        run_worker(settings, runtime=runtime, stop=stop, registry=registry, embedder=embedder)
    )
