"""A key revoked through the API is refused by the process that revoked it from then on, also
when a request that was verifying it at that moment would cache it as still active."""

from __future__ import annotations

import asyncio

import pytest

from taskcrawler.domain.errors import Unauthenticated
from taskcrawler.domain.keys import ApiKey
from taskcrawler.service.keys import KeyService
from taskcrawler.storage.keys import KeyStore
from tests.support.stores import Stores


async def test_a_lookup_under_way_as_its_key_is_revoked_does_not_cache_it(
    store: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = KeyStore(store.db)
    service = KeyService(keys, required=True)
    new, _ = await service.create("leaked")
    looked_up, revoked = asyncio.Event(), asyncio.Event()
    find_active = keys.find_active

    async def slow_find_active(key_id: str) -> tuple[ApiKey, str] | None:
        found = await find_active(key_id)  # read before the revocation commits
        looked_up.set()
        await revoked.wait()
        return found

    monkeypatch.setattr(keys, "find_active", slow_find_active)
    in_flight = asyncio.create_task(service.caller(new.token))
    await looked_up.wait()
    await service.revoke(new.id)
    revoked.set()
    await in_flight  # it began before the revocation

    with pytest.raises(Unauthenticated):
        await service.caller(new.token)
