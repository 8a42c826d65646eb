from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from taskcrawler.api.auth import Authenticator, get_principal
from taskcrawler.queue import JobQueue
from taskcrawler.service.jobs import Caller, JobService
from taskcrawler.service.mapping import MapService
from taskcrawler.settings import Settings
from taskcrawler.storage import Database, KeyStore
from taskcrawler.storage.content import ContentStore
from taskcrawler.storage.idempotency import IdempotencyStore


@dataclass(slots=True)
class Services:
    """What the lifespan built for this app; handlers get it through :data:`ServicesDep`."""

    settings: Settings
    db: Database
    queue: JobQueue
    keys: KeyStore
    jobs: JobService
    idempotency: IdempotencyStore
    content: ContentStore
    authenticator: Authenticator
    mapper: MapService


async def get_services(request: Request) -> Services:
    # async: FastAPI runs a plain `def` dependency in a thread pool, a thread hop per request.
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


async def get_caller(request: Request) -> Caller:
    """The authenticated caller, counted against its rate limit.

    One dependency rather than three (principal, services, caller): FastAPI resolves every
    sub-dependency per request, which on the hot POST was a tenth of the API's CPU.
    """
    services = await get_services(request)
    principal = await get_principal(request)
    caller = Caller(principal.owner, principal.key)
    await services.jobs.check_rate(caller)
    return caller


CallerDep = Annotated[Caller, Depends(get_caller)]
