"""Serving metrics: ``GET /metrics`` on the API, and a small server in ``taskcrawler worker``."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from aiohttp import web
from fastapi import APIRouter, Request, Response
from prometheus_client import CollectorRegistry

from taskcrawler.observability.metrics import CONTENT_TYPE_LATEST, QueueDepth, render_metrics

log = logging.getLogger(__name__)

router = APIRouter(tags=["health"])


@dataclass(slots=True)
class MetricsEndpoint:
    """What ``/metrics`` renders: a registry, and the gauges to refresh when it is scraped."""

    registry: CollectorRegistry
    refresh: list[QueueDepth] = field(default_factory=list)

    async def render(self) -> bytes:
        return await render_metrics(self.registry, self.refresh)


@router.get(
    "/metrics",
    summary="Prometheus metrics of this process (and of its worker under `serve`)",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}},
)
async def metrics(request: Request) -> Response:
    endpoint: MetricsEndpoint = request.app.state.metrics
    return Response(await endpoint.render(), media_type=CONTENT_TYPE_LATEST)


async def serve_metrics(endpoint: MetricsEndpoint, host: str, port: int) -> web.AppRunner | None:
    """Serve ``GET /metrics`` (and ``/healthz``) on ``host:port`` from this event loop.

    Returns the runner to clean up, or None when the port is taken: a worker without a metrics
    port still works (several workers on one machine need a port each).
    """

    async def handle_metrics(request: web.Request) -> web.Response:
        body = await endpoint.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def handle_health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_get("/metrics", handle_metrics)
    app.router.add_get("/healthz", handle_health)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        await runner.cleanup()
        log.warning("worker metrics not served: cannot listen on %s:%d: %s", host, port, exc)
        return None
    log.info("worker metrics on http://%s:%d/metrics", host, port)
    return runner
