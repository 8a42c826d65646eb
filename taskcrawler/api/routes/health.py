from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from taskcrawler.api.deps import ServicesDep
from taskcrawler.contract.base import Health

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, summary="Liveness: the process answers")
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Health,
    responses={503: {"model": Health, "description": "A dependency is down."}},
    summary="Readiness: the database and the queue answer",
)
async def readyz(services: ServicesDep) -> JSONResponse:
    checks = await services.health.checks()
    ready = services.health.ready(checks)
    body = Health(status="ok" if ready else "unavailable", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)
