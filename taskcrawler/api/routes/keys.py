from __future__ import annotations

from fastapi import APIRouter, status

from taskcrawler.api.deps import AdminDep, ServicesDep
from taskcrawler.api.schemas import ErrorOut, KeyCreate, KeyCreated, KeyOut

router = APIRouter(prefix="/api/v1/keys", tags=["keys (admin)"])

ADMIN_ONLY: dict[int | str, dict[str, object]] = {
    401: {"model": ErrorOut},
    403: {"model": ErrorOut, "description": "Not an admin key."},
}


@router.post(
    "",
    response_model=KeyCreated,
    status_code=status.HTTP_201_CREATED,
    responses=ADMIN_ONLY,
    summary="Create an API key (its token is shown once)",
)
async def create_key(body: KeyCreate, services: ServicesDep, _: AdminDep) -> KeyCreated:
    new, key = await services.keys.create(
        body.name,
        is_admin=body.is_admin,
        requests_per_minute=body.requests_per_minute,
        max_pending_jobs=body.max_pending_jobs,
        callback_url=body.callback_url,
    )
    return KeyCreated(
        **KeyOut.model_validate(key).model_dump(),
        key=new.token,
        webhook_secret=key.webhook_secret or "",
    )


@router.get("", response_model=list[KeyOut], responses=ADMIN_ONLY, summary="List API keys")
async def list_keys(services: ServicesDep, _: AdminDep) -> list[KeyOut]:
    return [KeyOut.model_validate(key) for key in await services.keys.list_keys()]


@router.delete(
    "/{key_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={404: {"model": ErrorOut}, **ADMIN_ONLY},
    summary="Revoke an API key",
)
async def revoke_key(key_id: str, services: ServicesDep, _: AdminDep) -> None:
    await services.keys.revoke(key_id)
