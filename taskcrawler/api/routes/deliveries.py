"""Webhook deliveries of a job: every attempt's outcome, visible to the job's owner only."""

from __future__ import annotations

from fastapi import APIRouter

from taskcrawler.api.deps import CallerDep, ServicesDep
from taskcrawler.api.params import RowLimit
from taskcrawler.api.routes.jobs import NOT_FOUND
from taskcrawler.contract.base import Id
from taskcrawler.contract.deliveries import DeliveryOut

router = APIRouter(prefix="/api/v1/jobs", tags=["webhooks"])


@router.get(
    "/{job_id}/deliveries",
    response_model=list[DeliveryOut],
    responses=NOT_FOUND,
    summary="A job's last webhook deliveries (one a run), oldest first",
)
async def job_deliveries(
    job_id: Id,
    services: ServicesDep,
    caller: CallerDep,
    limit: RowLimit = 100,
) -> list[DeliveryOut]:
    found = await services.deliveries.of_job(caller, job_id, limit=limit)
    return [DeliveryOut.model_validate(delivery) for delivery in found]
