"""A long list streamed a slice at a time is the same JSON as the whole document; a streamed
answer (a map, an export) whose client stops reading is ended."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from starlette.responses import Response
from starlette.types import Message

from taskcrawler.api import streamed
from taskcrawler.api.routes.export import export
from taskcrawler.api.streamed import SLICE, json_with_list
from taskcrawler.domain.keys import Caller
from taskcrawler.service.exports import Export


async def body_of(fields: dict[str, Any], items: list[str], **options: Any) -> bytes:
    response = json_with_list(fields, "links", items, **options)
    assert response.media_type == "application/json"
    return b"".join([chunk async for chunk in response.body_iterator])  # type: ignore[misc]


@pytest.mark.parametrize("count", [0, 1, SLICE, 2 * SLICE + 1])
@pytest.mark.parametrize("fields", [{}, {"success": True, "warnings": ['a "quoted" one']}])
async def test_the_same_json_as_the_whole_document(count: int, fields: dict[str, Any]) -> None:
    items = [f'http://a.test/{n}?q=\u00e9"' for n in range(count)]
    assert orjson.loads(await body_of(fields, items)) == {**fields, "links": items}
    objects = orjson.loads(await body_of(fields, items, item=lambda url: {"url": url}))
    assert objects == {**fields, "links": [{"url": url} for url in items]}


async def a_map() -> Response:
    return json_with_list({}, "links", [f"http://a.test/{n}" for n in range(3 * SLICE)])


async def an_export() -> Response:
    """The export route's answer, its three parts from a stand-in export service."""

    async def chunks() -> AsyncIterator[bytes]:
        for n in range(3):
            yield b'{"n": %d}\n' % n

    class Exports:
        async def export(self, caller: Caller, fmt: str, **_: Any) -> Export:
            return Export("cursor", None, chunks(), "application/x-ndjson")

    services = SimpleNamespace(exports=Exports())
    return await export(services, Caller("o"))  # type: ignore[arg-type]


@pytest.mark.parametrize("answer", [a_map, an_export])
@pytest.mark.parametrize("spec_version", ["2.3", "2.4"])
async def test_a_client_that_stops_reading_is_let_go(
    answer: Callable[[], Awaitable[Response]], spec_version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its connection takes the first part and then nothing: the answer ends (it waited for
    the client for ever, holding what it had yet to send)."""
    monkeypatch.setattr(streamed, "SEND_IDLE_SECONDS", 0.1)
    sent: list[Message] = []
    never = asyncio.Event()

    async def stalled(message: Message) -> None:
        sent.append(message)
        if len(sent) > 2:  # the start, the first part: then the client reads no more
            await never.wait()

    async def receive() -> Message:
        await never.wait()
        return {"type": "http.disconnect"}

    response = await answer()
    scope = {"type": "http", "asgi": {"spec_version": spec_version}}
    async with asyncio.timeout(30):  # ends at its idle deadline; this one only stops a hang
        await response(scope, receive, stalled)
    assert [message["type"] for message in sent] == ["http.response.start"] + [
        "http.response.body"
    ] * 2
