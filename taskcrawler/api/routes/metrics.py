"""``GET /metrics``: what the app's :class:`MetricsEndpoint` renders.

Here rather than beside the endpoint (observability/http.py): ``taskcrawler worker`` imports that
module to serve its own metrics with aiohttp, and the web framework would cost it about a tenth
of a second of CPU at every start.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from taskcrawler.observability.http import MetricsEndpoint
from taskcrawler.observability.metrics import CONTENT_TYPE_LATEST

router = APIRouter(tags=["health"])


@router.get(
    "/metrics",
    summary="Prometheus metrics of this process (and of its worker under `serve`)",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}},
)
async def metrics(request: Request) -> Response:
    endpoint: MetricsEndpoint = request.app.state.metrics
    return Response(await endpoint.render(), media_type=CONTENT_TYPE_LATEST)
