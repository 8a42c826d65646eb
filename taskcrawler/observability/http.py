"""Serving metrics: what ``GET /metrics`` renders on the API (the route is
api/routes/metrics.py), and a small server in ``taskcrawler worker``.

Under ``taskcrawler serve`` the worker runs in a child process with a registry of its own: it
serves its metrics on a Unix socket only its parent can reach, and the API's ``/metrics`` reads
them there on each scrape, so one scrape shows the whole service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web
from prometheus_client import CollectorRegistry

from taskcrawler.observability.metrics import CONTENT_TYPE_LATEST, QueueDepth, render_metrics

log = logging.getLogger(__name__)

#: A scrape waits at most this long for the worker process's metrics.
CHILD_TIMEOUT_SECONDS = 2.0
#: The worker's exposition is a few tens of kilobytes; more than this is not metrics.
CHILD_MAX_BYTES = 4 * 1024 * 1024


@dataclass(slots=True)
class ChildMetrics:
    """The metrics a child process serves on the Unix socket ``path``."""

    path: str

    async def read(self) -> str | None:
        """Its exposition text, or None when it does not answer (restarting, or stopped): the
        scrape then shows the API's series alone rather than failing."""
        try:
            async with asyncio.timeout(CHILD_TIMEOUT_SECONDS):
                connector = aiohttp.UnixConnector(path=self.path)
                async with (
                    aiohttp.ClientSession(connector=connector) as session,
                    session.get("http://worker/metrics") as response,
                ):
                    if response.status != 200:
                        return None
                    body = bytearray()
                    async for chunk in response.content.iter_chunked(65536):
                        body += chunk
                        if len(body) > CHILD_MAX_BYTES:
                            return None
                    return body.decode()
        except (aiohttp.ClientError, OSError, TimeoutError, UnicodeDecodeError) as exc:
            log.warning("worker process metrics unavailable: %s", exc)
            return None


@dataclass(slots=True)
class MetricsEndpoint:
    """What ``/metrics`` renders: a registry, the gauges to refresh when it is scraped, and
    the worker processes whose metrics it includes."""

    registry: CollectorRegistry
    refresh: list[QueueDepth] = field(default_factory=list)
    children: list[ChildMetrics] = field(default_factory=list)

    async def render(self) -> bytes:
        texts = [text for child in self.children if (text := await child.read()) is not None]
        return await render_metrics(self.registry, self.refresh, texts)


async def serve_metrics(endpoint: MetricsEndpoint, host: str, port: int) -> web.AppRunner | None:
    """Serve ``GET /metrics`` (and ``/healthz``) on ``host:port`` from this event loop.

    Returns the runner to clean up, or None when the port is taken: a worker without a metrics
    port still works (several workers on one machine need a port each).
    """

    runner = await _metrics_runner(endpoint)
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        await runner.cleanup()
        log.warning("worker metrics not served: cannot listen on %s:%d: %s", host, port, exc)
        return None
    log.info("worker metrics on http://%s:%d/metrics", host, port)
    return runner


async def serve_metrics_unix(endpoint: MetricsEndpoint, path: str) -> web.AppRunner | None:
    """Serve ``GET /metrics`` on the Unix socket ``path`` (replacing a dead process's socket).

    Returns the runner to clean up, or None when it cannot listen there: the worker still works.
    """
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    runner = await _metrics_runner(endpoint)
    try:
        await web.UnixSite(runner, path).start()
    except OSError as exc:
        await runner.cleanup()
        log.warning("worker metrics not served: cannot listen on %s: %s", path, exc)
        return None
    return runner


async def _metrics_runner(endpoint: MetricsEndpoint) -> web.AppRunner:
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
    return runner
