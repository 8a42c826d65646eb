"""``Idempotency-Key``: a repeated request gets the first answer; the same key with another
request is a conflict, so a client bug cannot silently reuse a key. Once its retention has
passed, a key is forgotten: sent again, it is a new request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from taskcrawler.domain.errors import Conflict
from taskcrawler.domain.idempotency import IdempotencyRetention, StoredResponse
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
    ) -> None:
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
        body), producing it if there is none yet. Concurrent repeats all see the answer stored
        first."""
        since = self.retention.oldest_kept(self.clock())
        stored = await self.responses.get(caller.owner, key, since=since)
        if stored is None:
            code, body = await produce()
            stored = await self.responses.remember(
                caller.owner,
                key,
                StoredResponse(request_hash, code, body),
                at=self.clock(),
                since=since,
            )
        if stored.request_hash != request_hash:
            raise Conflict("this Idempotency-Key was used with a different request")
        return stored.status_code, stored.body
