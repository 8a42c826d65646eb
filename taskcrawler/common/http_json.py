"""A JSON answer of a server the operator configured (an embedder, a reranker, an LLM, a
search engine), read within a size bound: a server that is broken, or not what it claims,
must not make a worker or the API hold an unbounded body in memory."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

#: Bytes read per step: a body over the bound is stopped within one step of it.
_BLOCK = 1 << 16


class AnswerTooLarge(Exception):
    """The body was longer than the bound (reading stopped there)."""


class AnswerNotJSON(Exception):
    """The body was not one JSON document."""


async def read_bounded(response: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    """The body, or :class:`AnswerTooLarge` as soon as it passes ``max_bytes``."""
    data = bytearray()
    async for block in response.content.iter_chunked(_BLOCK):
        data += block
        if len(data) > max_bytes:
            raise AnswerTooLarge(f"the answer is over {max_bytes:,} bytes")
    return bytes(data)


async def read_json(response: aiohttp.ClientResponse, max_bytes: int) -> Any:
    """The body as JSON; :class:`AnswerTooLarge` or :class:`AnswerNotJSON` (whose message
    never quotes the body)."""
    body = await read_bounded(response, max_bytes)
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        raise AnswerNotJSON("the answer is not JSON") from None


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` in seconds (its delta form; a date or garbage is None)."""
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


__all__ = ["AnswerNotJSON", "AnswerTooLarge", "read_bounded", "read_json", "retry_after_seconds"]
