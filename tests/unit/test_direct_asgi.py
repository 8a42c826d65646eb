"""tests/support/asgi.py sends what httpx's ASGI transport sends: the fuzzers' cases go through
it, so a request that differed would fuzz something else than it says."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import httpx
import pytest

from tests.support.asgi import DirectClient, without_dot_segments

Message = MutableMapping[str, Any]


class Recorder:
    """An ASGI app that keeps the scope and body it got and answers with a JSON document."""

    def __init__(self, status: int = 418) -> None:
        self.status = status
        self.seen: list[tuple[dict[str, Any], bytes]] = []

    async def __call__(
        self,
        scope: Message,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.seen.append((dict(scope), body))
        headers = [(b"content-type", b"application/json"), (b"x-answer", b"1")]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": b'{"ok": ', "more_body": True})
        await send({"type": "http.response.body", "body": b"true}"})


REQUESTS: list[tuple[str, str, bytes | None, dict[str, bytes]]] = [
    ("GET", "/api/v1/jobs/%00%ED%A0%80x?cursor=%F0%9F%98%80&limit=1", None, {}),
    ("GET", "/api/v1/jobs/..", None, {"Authorization": b"Bearer \xed\xa0\x80"}),
    ("GET", "/static/./a/../b", None, {}),
    ("GET", "/static/..", None, {}),
    ("DELETE", "/api/v1/keys/%2F..%2F", None, {"X-Odd": b"\r\nX-Injected: 1"}),
    ("POST", "/api/v1/jobs", None, {}),
    ("POST", "/api/v1/jobs", b"", {"Content-Type": b"application/json"}),
    ("PUT", "/v1/crawl/x", b'{"url": NaN}', {"Content-Type": b"application/json"}),
    (
        "POST",
        "/mcp",
        b"{}",
        {"Accept": b"application/json, text/event-stream", "Host": b"127.0.0.1:8000"},
    ),
]


@pytest.mark.parametrize(("method", "target", "content", "headers"), REQUESTS)
async def test_the_app_gets_what_httpx_would_send_it(
    method: str, target: str, content: bytes | None, headers: dict[str, bytes]
) -> None:
    by_httpx, direct = Recorder(), Recorder()
    transport = httpx.ASGITransport(app=by_httpx)
    async with httpx.AsyncClient(transport=transport, base_url="http://taskcrawler") as client:
        raw = {name.encode(): value for name, value in headers.items()}
        answered = await client.request(method, target, content=content, headers=raw)
        answer = await DirectClient(direct, client).request(
            method, target, content=content, headers=headers
        )
    [(expected, expected_body)] = by_httpx.seen
    [(scope, body)] = direct.seen
    assert body == expected_body
    assert {**scope, "headers": sorted(scope["headers"])} == {
        **expected,
        "headers": sorted(expected["headers"]),
    }
    assert (answer.status_code, answer.content) == (answered.status_code, answered.content)
    assert answer.headers["x-answer"] == answered.headers["x-answer"]
    assert answer.json() == answered.json() == {"ok": True}


async def test_an_app_that_raises_raises_here_too() -> None:
    async def failing(scope: Message, receive: Any, send: Any) -> None:
        raise RuntimeError("the app failed")

    async with httpx.AsyncClient(base_url="http://taskcrawler") as client:
        with pytest.raises(RuntimeError, match="the app failed"):
            await DirectClient(failing, client).request("GET", "/")


async def test_an_app_that_answers_nothing_fails_the_request() -> None:
    async def silent(scope: Message, receive: Any, send: Any) -> None:
        return None

    async with httpx.AsyncClient(base_url="http://taskcrawler") as client:
        with pytest.raises(AssertionError, match="answered nothing"):
            await DirectClient(silent, client).request("GET", "/")


@pytest.mark.parametrize(
    ("path", "resolved"),
    [
        ("/a/b", "/a/b"),
        ("/a/./b", "/a/b"),
        ("/a/b/..", "/a"),
        ("/static/..", "/"),
        ("/..", "/"),
        ("/a/../../b", "/b"),
        ("/a/.b/..c", "/a/.b/..c"),
    ],
)
def test_dot_segments_are_resolved_as_httpx_does(path: str, resolved: str) -> None:
    assert without_dot_segments(path) == resolved
    assert httpx.URL("http://taskcrawler" + path).raw_path.decode() == resolved
