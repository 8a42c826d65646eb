"""Webhook deliveries of a job: every attempt's outcome, visible to the job's owner only."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from fastapi import APIRouter, HTTPException, status
from pydantic import BaseModel, Field

from taskcrawler.api.deps import CallerDep, ServicesDep
from taskcrawler.api.routes.jobs import NOT_FOUND
from taskcrawler.domain.webhooks import Delivery, DeliveryStatus
from taskcrawler.storage.webhooks import WebhookStore

router = APIRouter(prefix="/api/v1/jobs", tags=["webhooks"])


class DeliveryOut(BaseModel):
    id: UUID = Field(description="Sent as X-TaskCrawler-Delivery; the same on every retry.")
    job_id: UUID
    event: str = Field(description="job.completed or job.failed")
    url: str = Field(description="The callback URL.")
    status: DeliveryStatus = Field(
        description="PENDING (due or in flight), DELIVERED, FAILED, or BLOCKED: never sent, "
        "because the callback URL was refused before connecting (a blocked address, or a URL "
        "no request can be made to; last_error says which)."
    )
    attempts: int = Field(
        description="POSTs sent so far, the one in flight included; a refused one is not one."
    )
    last_status_code: int | None = Field(description="The receiver's last HTTP status.")
    last_error: str | None = Field(description="The last failure: its code, then a message.")
    created_at: datetime
    next_attempt_at: datetime | None = Field(description="When a PENDING delivery is due.")
    delivered_at: datetime | None

    @classmethod
    def of(cls, delivery: Delivery) -> DeliveryOut:
        return cls(
            id=delivery.id,
            job_id=delivery.job_id,
            event=delivery.event,
            url=delivery.url,
            status=delivery.status,
            attempts=delivery.attempts,
            last_status_code=delivery.last_status_code,
            last_error=delivery.last_error,
            created_at=delivery.created_at,
            next_attempt_at=delivery.next_attempt_at,
            delivered_at=delivery.delivered_at,
        )


@router.get(
    "/{job_id}/deliveries",
    response_model=list[DeliveryOut],
    responses=NOT_FOUND,
    summary="Webhook deliveries of a job, oldest first",
)
async def job_deliveries(
    job_id: UUID, services: ServicesDep, caller: CallerDep
) -> list[DeliveryOut]:
    # Another tenant's job is unknown here, exactly as on GET /api/v1/jobs/{id}.
    if await services.jobs.get(caller, job_id) is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no job with this id")
    found = await WebhookStore(services.db).list_for_job(job_id, owner=caller.owner)
    return [DeliveryOut.of(delivery) for delivery in found]
