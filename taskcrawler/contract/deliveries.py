"""A job's webhook deliveries."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from taskcrawler.domain.webhooks import DeliveryStatus


class DeliveryOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

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
