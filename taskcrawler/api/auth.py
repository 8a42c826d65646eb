"""Who is calling: an API key from ``Authorization: Bearer``, or the anonymous tenant."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from taskcrawler.domain.keys import ApiKey, parse_token, secret_matches
from taskcrawler.storage.keys import KeyStore

#: How long a verified key is trusted without asking the database again. Revoking through the
#: API clears it at once in that process; other API processes notice within this time.
KEY_CACHE_SECONDS = 5.0

ANONYMOUS_OWNER = ""


@dataclass(frozen=True, slots=True)
class Principal:
    owner: str
    key: ApiKey | None = None

    @property
    def is_admin(self) -> bool:
        return self.key is not None and self.key.is_admin


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED, detail, headers={"WWW-Authenticate": "Bearer"}
    )


class Authenticator:
    def __init__(self, keys: KeyStore, *, required: bool) -> None:
        self.keys = keys
        self.required = required
        self._cache: dict[str, tuple[float, ApiKey, str]] = {}

    async def principal(self, authorization: str | None) -> Principal:
        if not authorization:
            if self.required:
                raise _unauthorized("an API key is required: Authorization: Bearer <key>")
            return Principal(ANONYMOUS_OWNER)
        scheme, _, token = authorization.partition(" ")
        parsed = parse_token(token.strip()) if scheme.lower() == "bearer" else None
        if parsed is None:
            raise _unauthorized("malformed Authorization header: expected Bearer tc_<id>_<secret>")
        key = await self._verified(*parsed)
        if key is None:
            raise _unauthorized("unknown or revoked API key")
        return Principal(key.owner, key)

    async def _verified(self, key_id: str, secret: str) -> ApiKey | None:
        cached = self._cache.get(key_id)
        if cached is None or cached[0] < time.monotonic():
            found = await self.keys.find_active(key_id)
            if found is None:
                self._cache.pop(key_id, None)
                return None
            cached = (time.monotonic() + KEY_CACHE_SECONDS, *found)
            self._cache[key_id] = cached
        _, key, secret_hash = cached
        return key if secret_matches(secret, secret_hash) else None

    def forget(self, key_id: str) -> None:
        self._cache.pop(key_id, None)


async def get_principal(request: Request) -> Principal:
    authenticator: Authenticator = request.app.state.services.authenticator
    principal = await authenticator.principal(request.headers.get("authorization"))
    request.state.principal = principal
    return principal


async def get_admin(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    if not principal.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this needs an admin key")
    return principal


AdminDep = Annotated[Principal, Depends(get_admin)]
