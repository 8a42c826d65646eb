"""What handlers get: the services the lifespan built, and who is calling."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from taskcrawler.domain.errors import Forbidden
from taskcrawler.domain.keys import Caller
from taskcrawler.service import Services


async def get_services(request: Request) -> Services:
    # async: FastAPI runs a plain `def` dependency in a thread pool, a thread hop per request.
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


def _bearer_token(authorization: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>``; "" for any other form (refused)."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def _authenticated(request: Request) -> Caller:
    services = await get_services(request)
    caller = await services.keys.caller(_bearer_token(request.headers.get("authorization")))
    return caller


async def get_caller(request: Request) -> Caller:
    """The authenticated caller, counted against its rate limit.

    One dependency rather than three (key, services, caller): FastAPI resolves every
    sub-dependency per request, which on the hot POST was a tenth of the API's CPU.
    """
    caller = await _authenticated(request)
    await (await get_services(request)).jobs.check_rate(caller)
    return caller


async def get_admin(request: Request) -> Caller:
    caller = await _authenticated(request)
    if not caller.is_admin:
        raise Forbidden(
            "this needs an admin key: `taskcrawler keys create --name NAME --admin` makes one"
        )
    return caller


CallerDep = Annotated[Caller, Depends(get_caller)]
AdminDep = Annotated[Caller, Depends(get_admin)]
