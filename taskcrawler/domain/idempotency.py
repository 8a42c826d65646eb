"""A response remembered by ``Idempotency-Key``, so a client may safely repeat a request, and
how long it is remembered: a key is forgotten after its retention, as Stripe forgets its keys
after 24 hours, so that a client sending a new key with every request grows no table for ever."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

#: How long an answer is remembered by default: a day, as Stripe's.
DEFAULT_IDEMPOTENCY_RETENTION_HOURS = 24.0
#: The longest retention taken: ten years (a much longer one overflows a date).
MAX_IDEMPOTENCY_RETENTION_HOURS = 10 * 366 * 24.0
#: The status code a key holds while the request that claimed it is being answered.
PENDING = 0
#: A claim this old was left by a request that died unanswered (a server stopped): taken over.
CLAIM_SECONDS = 120.0
#: How long a repeat waits for the answer of the request that claimed its key, then a 409.
WAIT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class StoredResponse:
    request_hash: str
    status_code: int
    body: Any


@dataclass(frozen=True, slots=True)
class IdempotencyRetention:
    """An answer stored more than ``keep_hours`` ago is expired: its key is answered as a new
    request, whatever it was sent with before, and the sweeper deletes it."""

    keep_hours: float = DEFAULT_IDEMPOTENCY_RETENTION_HOURS

    def __post_init__(self) -> None:
        if not 0 < self.keep_hours <= MAX_IDEMPOTENCY_RETENTION_HOURS:
            raise ValueError(
                f"keep_hours must be above 0 and at most {MAX_IDEMPOTENCY_RETENTION_HOURS:g}"
            )

    def oldest_kept(self, now: datetime) -> datetime:
        """Answers stored before this are expired."""
        return now - timedelta(hours=self.keep_hours)
