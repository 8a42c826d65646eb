"""``Idempotency-Key``: a repeated request gets the first answer; the same key with another
request is a conflict, so a client bug cannot silently reuse a key. Once its retention has
passed, a key is forgotten: sent again, it is a new request."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from taskcrawler.domain.errors import Conflict
from taskcrawler.domain.idempotency import (
    CLAIM_SECONDS,
    PENDING,
    WAIT_SECONDS,
    IdempotencyRetention,
    StoredResponse,
)
from taskcrawler.domain.keys import Caller
from taskcrawler.storage.ports import IdempotencyRepository


def _utcnow() -> datetime:
    return datetime.now(UTC)


class IdempotencyService:
    def __init__(
        self,
        responses: IdempotencyRepository,
        retention: IdempotencyRetention | None = None,
        *,
        clock: Callable[[], datetime] = _utcnow,
        wait_seconds: float = WAIT_SECONDS,
        poll_seconds: float = 0.05,
    ) -> None:
        self.wait_seconds = wait_seconds
        self.poll_seconds = poll_seconds
        self.responses = responses
        self.retention = retention or IdempotencyRetention()
        self.clock = clock

    async def answer_once(
        self,
        caller: Caller,
        key: str,
        request_hash: str,
        produce: Callable[[], Awaitable[tuple[int, Any]]],
    ) -> tuple[int, Any]:
        """The first answer given to ``key`` within its retention (a status code and a JSON
        body), producing it if there is none yet. A repeat sent while the first is still being
        answered waits for its answer, up to ``wait_seconds`` (then a :class:`Conflict`)."""
        # The key is claimed before the work runs: two requests sent at once with one key
        # would otherwise both run (two jobs), whatever answer is kept.
        waits = max(1, round(self.wait_seconds / self.poll_seconds))
        for _ in range(waits):
            now = self.clock()
            stored = await self.responses.claim(
                caller.owner,
                key,
                request_hash,
                at=now,
                since=self.retention.oldest_kept(now),
                stale_before=now - timedelta(seconds=CLAIM_SECONDS),
            )
            if stored is None:
                return await self._produce(caller, key, request_hash, now, produce)
            if stored.request_hash != request_hash:
                raise Conflict("this Idempotency-Key was used with a different request")
            if stored.status_code != PENDING:
                return stored.status_code, stored.body
            await asyncio.sleep(self.poll_seconds)
        raise Conflict("a request with this Idempotency-Key is still being answered")

    async def _produce(
        self,
        caller: Caller,
        key: str,
        request_hash: str,
        at: datetime,
        produce: Callable[[], Awaitable[tuple[int, Any]]],
    ) -> tuple[int, Any]:
        try:
            code, body = await produce()
        except BaseException:
            # No answer to keep (a refusal is answered again): the key is free for a retry.
            await self.responses.release(caller.owner, key, request_hash, at=at)
            raise
        answer = StoredResponse(request_hash, code, body)
        await self.responses.fulfil(caller.owner, key, answer, at=at)
        return code, body
