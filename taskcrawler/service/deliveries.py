"""Webhook deliveries of a job, as its owner may see them."""

from __future__ import annotations

from uuid import UUID

from taskcrawler.domain.keys import Caller
from taskcrawler.domain.webhooks import Delivery
from taskcrawler.service.jobs import JobService
from taskcrawler.storage.ports import WebhookRepository


class DeliveryService:
    def __init__(self, jobs: JobService, webhooks: WebhookRepository) -> None:
        self.jobs = jobs
        self.webhooks = webhooks

    async def of_job(self, caller: Caller, job_id: UUID, *, limit: int) -> list[Delivery]:
        """A job's last ``limit`` deliveries, oldest first; another tenant's job is unknown here
        too."""
        await self.jobs.get(caller, job_id)
        return await self.webhooks.list_for_job(job_id, owner=caller.owner, limit=limit)
