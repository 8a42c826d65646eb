"""Firecrawl's error bodies on ``/v1`` and ``/v2`` (:class:`FirecrawlErrors`), at the ASGI level:
an error body too large to rewrite is passed on once, as it was sent."""

from __future__ import annotations

from starlette.types import Message, Receive, Scope, Send

from taskcrawler.firecrawl.errors import MAX_ERROR_BYTES, FirecrawlErrors

CHUNK = b"x" * (MAX_ERROR_BYTES // 2 + 1)


async def _large_error(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 400, "headers": []})
    for last in (False, False, False, True):
        await send({"type": "http.response.body", "body": CHUNK, "more_body": not last})


async def test_a_large_error_body_is_passed_on_once() -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    scope: Scope = {"type": "http", "path": "/v2/scrape", "method": "POST", "headers": []}
    await FirecrawlErrors(_large_error)(scope, receive, send)
    starts = [m for m in sent if m["type"] == "http.response.start"]
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert [m["status"] for m in starts] == [400]
    assert body == CHUNK * 4
    assert not sent[-1].get("more_body")
