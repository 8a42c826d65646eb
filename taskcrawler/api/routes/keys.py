from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, status

from taskcrawler.api.deps import AdminDep, ServicesDep
from taskcrawler.contract.base import ErrorOut
from taskcrawler.contract.keys import KeyCreate, KeyCreated, KeyOut, KeyWithSecret
from taskcrawler.domain.keys import KEY_ID_PATTERN

router = APIRouter(prefix="/api/v1/keys", tags=["keys (admin)"])

ADMIN_ONLY: dict[int | str, dict[str, object]] = {
    401: {"model": ErrorOut},
    403: {"model": ErrorOut, "description": "Not an admin key."},
}
UNKNOWN_KEY: dict[int | str, dict[str, object]] = {
    404: {"model": ErrorOut, "description": "No active key with this id."},
    **ADMIN_ONLY,
}

KeyId = Annotated[
    str, Path(pattern=KEY_ID_PATTERN, description="The key's id, as `GET /api/v1/keys` shows it.")
]


@router.post(
    "",
    response_model=KeyCreated,
    status_code=status.HTTP_201_CREATED,
    responses=ADMIN_ONLY,
    summary="Create an API key (its token and webhook secret are shown once)",
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


@router.post(
    "/{key_id}/webhook-secret",
    response_model=KeyWithSecret,
    responses=UNKNOWN_KEY,
    summary="Rotate a key's webhook secret (the new one is shown once)",
)
async def rotate_webhook_secret(key_id: KeyId, services: ServicesDep, _: AdminDep) -> KeyWithSecret:
    """Every webhook POST from now on is signed with the new secret, retries of earlier
    deliveries included; the old one stops working at once."""
    key = await services.keys.rotate_webhook_secret(key_id)
    return KeyWithSecret(
        **KeyOut.model_validate(key).model_dump(), webhook_secret=key.webhook_secret or ""
    )


@router.delete(
    "/{key_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=UNKNOWN_KEY,
    summary="Revoke an API key",
)
async def revoke_key(key_id: KeyId, services: ServicesDep, _: AdminDep) -> None:
    await services.keys.revoke(key_id)
