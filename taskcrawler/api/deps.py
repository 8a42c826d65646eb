from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from taskcrawler.api.auth import Authenticator
from taskcrawler.queue import JobQueue
from taskcrawler.service import Submitter
from taskcrawler.settings import Settings
from taskcrawler.storage import Database, JobStore, KeyStore


@dataclass(slots=True)
class Services:
    """What the lifespan built for this app; handlers get it through :data:`ServicesDep`."""

    settings: Settings
    db: Database
    jobs: JobStore
    keys: KeyStore
    queue: JobQueue
    submitter: Submitter
    authenticator: Authenticator


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
