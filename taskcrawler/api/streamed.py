"""Streamed answers: a long list (a map of 100,000 URLs) written a slice at a time, and the
response every streamed answer (a map, an export) is sent with.

Validating and encoding such a list as one model holds the event loop for tens of
milliseconds (0.4 s of CPU for Firecrawl's ``{"url": …}`` objects), every other request of the
process waiting. Here the list is encoded by orjson a slice at a time, the loop running
between slices; the answer is the same JSON its model describes (which documents the route).
A client that takes nothing of a streamed answer for :data:`SEND_IDLE_SECONDS` is let go, and
what the answer held with it: :class:`IdleLimitedStreamingResponse`, every streamed route's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import orjson
from starlette.responses import StreamingResponse
from starlette.types import Message, Receive, Scope, Send

log = logging.getLogger(__name__)

#: Items encoded per step: a few hundred microseconds of the loop.
SLICE = 5_000
#: How long one part of the answer may wait for the client to take it. A client that stops
#: reading held the whole list in memory, and its connection, for as long as it stayed.
SEND_IDLE_SECONDS = 60.0


def json_with_list(
    fields: Mapping[str, Any],
    key: str,
    items: Sequence[Any],
    *,
    item: Callable[[Any], Any] | None = None,
) -> StreamingResponse:
    """``{**fields, key: [item(x) for x in items]}`` as JSON, streamed."""
    return IdleLimitedStreamingResponse(
        _encoded(fields, key, items, item), media_type="application/json"
    )


class _ClientIdle(Exception):
    """Not a TimeoutError: Starlette takes an OSError in sending for the client gone."""


class IdleLimitedStreamingResponse(StreamingResponse):
    """A streamed answer ended once its client has taken nothing of it for
    :data:`SEND_IDLE_SECONDS`: uvicorn's flow control waits for a client that stopped reading
    for as long as it stays connected, holding what the answer holds and its connection."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def sending(message: Message) -> None:
            try:
                async with asyncio.timeout(SEND_IDLE_SECONDS):
                    await send(message)
            except TimeoutError:
                raise _ClientIdle from None

        try:
            await super().__call__(scope, receive, sending)
        except _ClientIdle:
            log.warning(
                "a client took nothing of a streamed answer for %g s: ended", SEND_IDLE_SECONDS
            )


async def _encoded(
    fields: Mapping[str, Any], key: str, items: Sequence[Any], item: Callable[[Any], Any] | None
) -> AsyncIterator[bytes]:
    head = orjson.dumps(dict(fields))[:-1]  # without its closing brace
    yield head + (b"," if fields else b"") + orjson.dumps(key) + b":["
    for start in range(0, len(items), SLICE):
        await asyncio.sleep(0)
        part = items[start : start + SLICE]
        encoded = orjson.dumps([item(x) for x in part] if item else list(part))
        yield (b"," if start else b"") + encoded[1:-1]
    yield b"]}"


__all__ = ["SEND_IDLE_SECONDS", "SLICE", "IdleLimitedStreamingResponse", "json_with_list"]
