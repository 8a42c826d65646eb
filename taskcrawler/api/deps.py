"""What handlers get: the services the lifespan built, and who is calling."""

from __future__ import annotations

from dataclasses import dataclass
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


def client_address(request: Request) -> str | None:
    """The peer's address (a proxy's, behind one), which failed authentications count against."""
    return request.client.host if request.client else None


async def _authenticated(request: Request) -> Caller:
    services = await get_services(request)
    token = _bearer_token(request.headers.get("authorization"))
    caller = await services.keys.caller(token, client_address(request))
    return caller


async def get_caller(request: Request) -> Caller:
    """The authenticated caller, counted against its rate limit.

    One dependency rather than three (key, services, caller): FastAPI resolves every
    sub-dependency per request, which on the hot POST was a tenth of the API's CPU.
    """
    caller = await _authenticated(request)
    await (await get_services(request)).jobs.check_rate(caller)
    return caller


@dataclass(frozen=True, slots=True)
class Call:
    """The services and the authenticated, rate-counted caller, from one dependency."""

    services: Services
    caller: Caller


async def get_call(request: Request) -> Call:
    """:func:`get_services` and :func:`get_caller` as one dependency, for the hottest route
    (a single submission): each dependency FastAPI solves costs its own validation pass and,
    on FastAPI's native telemetry, its own operation span, per request."""
    services: Services = request.app.state.services
    token = _bearer_token(request.headers.get("authorization"))
    caller = await services.keys.caller(token, client_address(request))
    await services.jobs.check_rate(caller)
    return Call(services, caller)


async def get_foreign_caller(request: Request) -> Caller:
    """:func:`get_caller` for the routes of another service's API (Firecrawl's): a token that
    is not a TaskCrawler key is anonymous where keys are not required."""
    services = await get_services(request)
    token = _bearer_token(request.headers.get("authorization"))
    caller = await services.keys.foreign_caller(token, client_address(request))
    await services.jobs.check_rate(caller)
    return caller


async def get_admin(request: Request) -> Caller:
    caller = await _authenticated(request)
    if not caller.is_admin:
        raise Forbidden(
            "this needs an admin key: `taskcrawler keys create --name NAME --admin` makes one"
        )
    return caller


CallerDep = Annotated[Caller, Depends(get_caller)]
CallDep = Annotated[Call, Depends(get_call)]
AdminDep = Annotated[Caller, Depends(get_admin)]
ForeignCallerDep = Annotated[Caller, Depends(get_foreign_caller)]
