"""API keys: who is calling, and the keys an admin manages."""

from __future__ import annotations

import time

from taskcrawler.domain.errors import NotFound, Unauthenticated
from taskcrawler.domain.keys import (
    ANONYMOUS_OWNER,
    KEY_PREFIX,
    ApiKey,
    Caller,
    NewKey,
    parse_token,
    secret_matches,
)
from taskcrawler.storage.ports import KeyRepository

#: How long a verified key is trusted without asking the database again. Revoking through the
#: API clears it at once in that process; other API processes notice within this time.
KEY_CACHE_SECONDS = 5.0


class KeyService:
    def __init__(self, keys: KeyRepository, *, required: bool) -> None:
        self.keys = keys
        #: Whether a request without a key is refused (else it is the anonymous tenant's).
        self.required = required
        self._cache: dict[str, tuple[float, ApiKey, str]] = {}
        #: Counts the keys this process revoked or changed: a lookup that began before one
        #: may have read it as it was, and must not cache that.
        self._changes = 0

    # --- authentication -------------------------------------------------------------------

    async def caller(self, token: str | None) -> Caller:
        """The caller a bearer token (None: no token sent) stands for."""
        if token is None:
            if self.required:
                raise Unauthenticated(
                    "an API key is required: Authorization: Bearer <key> (an operator makes "
                    "one with `taskcrawler keys create --name NAME`)"
                )
            return Caller(ANONYMOUS_OWNER)
        parsed = parse_token(token)
        if parsed is None:
            raise Unauthenticated(
                "malformed Authorization header: expected Bearer tc_<id>_<secret>"
            )
        key = await self._verified(*parsed)
        if key is None:
            raise Unauthenticated(
                "unknown or revoked API key: `taskcrawler keys list` shows the active ones"
            )
        return Caller(key.owner, key)

    async def foreign_caller(self, token: str | None) -> Caller:
        """The caller of a request from another service's tools (Firecrawl's), which insist on
        sending a key of their own kind (``fc-…``). Where keys are not required such a token
        stands for nobody: the anonymous tenant. A TaskCrawler key (``tc_…``) is checked as
        ever, so a mistyped one is refused rather than quietly taken for another tenant."""
        if token is not None and not self.required and not token.startswith(KEY_PREFIX + "_"):
            token = None
        return await self.caller(token)

    async def _verified(self, key_id: str, secret: str) -> ApiKey | None:
        cached = self._cache.get(key_id)
        if cached is None or cached[0] < time.monotonic():
            changes = self._changes
            found = await self.keys.find_active(key_id)
            if found is None:
                self._cache.pop(key_id, None)
                return None
            cached = (time.monotonic() + KEY_CACHE_SECONDS, *found)
            if changes == self._changes:
                self._cache[key_id] = cached
        _, key, secret_hash = cached
        return key if secret_matches(secret, secret_hash) else None

    # --- management -----------------------------------------------------------------------

    async def create(
        self,
        name: str,
        *,
        is_admin: bool = False,
        requests_per_minute: int | None = None,
        max_pending_jobs: int | None = None,
        callback_url: str | None = None,
    ) -> tuple[NewKey, ApiKey]:
        """A new key; its token is returned once and never stored."""
        return await self.keys.create(
            name,
            is_admin=is_admin,
            requests_per_minute=requests_per_minute,
            max_pending_jobs=max_pending_jobs,
            callback_url=callback_url,
        )

    async def list_keys(self) -> list[ApiKey]:
        return await self.keys.list_keys()

    async def revoke(self, key_id: str) -> None:
        if not await self.keys.revoke(key_id):
            raise NotFound("no active key with this id")
        self._forget(key_id)

    async def rotate_webhook_secret(self, key_id: str) -> ApiKey:
        """The key with a new webhook secret (shown this once). Deliveries are signed when
        sent, so every POST from now on, retries of earlier ones included, carries it."""
        key = await self.keys.rotate_webhook_secret(key_id)
        if key is None:
            raise NotFound("no active key with this id")
        self._forget(key_id)  # the cached key holds the old secret
        return key

    def _forget(self, key_id: str) -> None:
        self._changes += 1
        self._cache.pop(key_id, None)
