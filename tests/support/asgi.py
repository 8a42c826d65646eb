"""One request straight into an ASGI app, as ``httpx.ASGITransport`` makes it, for tests that
send thousands (the fuzzers): httpx's client spends more CPU than the app on such a request
(it parses and validates the URL character by character, and looks for trio on every one).

The scope is the one httpx builds for the same request: the client's own headers first, the
path's dot segments removed, ``path`` decoded and ``raw_path`` as sent, the same client and
server addresses; an exception of the app is raised, as the transport does.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import httpx
from starlette.types import ASGIApp

#: Where httpx's transport says a request comes from.
CLIENT = ("127.0.0.1", 123)


@dataclass(frozen=True)
class Answer:
    """What the app answered: the parts of an ``httpx.Response`` the fuzzers read."""

    status_code: int
    headers: Mapping[str, str]  # names in lower case; a repeated header's last value
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


def without_dot_segments(path: str) -> str:
    """``path`` with its "." and ".." segments resolved (RFC 3986, 5.2.4), as httpx does."""
    segments = path.split("/")
    if "." not in segments and ".." not in segments:
        return path
    kept: list[str] = []
    for segment in segments:
        if segment == "..":
            if kept and kept != [""]:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    return "/".join(kept) or "/"  # nothing left is the root, as httpx sends it


class DirectClient:
    """Requests to ``app`` with ``client``'s headers and host, without going through httpx."""

    def __init__(self, app: ASGIApp, client: httpx.AsyncClient) -> None:
        self.app = app
        self.host = client.base_url.host
        self.default_headers = [(name.lower(), value) for name, value in client.headers.raw]
        self.host_header = client.base_url.netloc

    async def request(
        self,
        method: str,
        target: str,
        *,
        content: bytes | None = None,
        headers: Mapping[str, bytes] | None = None,
    ) -> Answer:
        """``target``: an already percent-encoded path, with its query if any."""
        path, _, query = target.partition("?")
        path = without_dot_segments(path)
        given = {_bytes(name).lower(): value for name, value in (headers or {}).items()}
        sent = [(name, value) for name, value in self.default_headers if name not in given]
        sent += list(given.items())
        if b"host" not in given:
            sent.insert(0, (b"host", self.host_header))
        if content is not None:
            sent.append((b"content-length", str(len(content)).encode()))
        elif method in ("POST", "PUT", "PATCH"):
            sent.insert(1, (b"content-length", b"0"))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "headers": sent,
            "scheme": "http",
            "path": unquote(path),
            "raw_path": path.encode("ascii"),
            "query_string": query.encode("ascii"),
            "server": (self.host, None),
            "client": CLIENT,
            "root_path": "",
        }
        return await _call(self.app, scope, content or b"")


def _bytes(name: str | bytes) -> bytes:
    return name if isinstance(name, bytes) else name.encode("ascii")


async def _call(app: ASGIApp, scope: dict[str, Any], body: bytes) -> Answer:
    complete = asyncio.Event()
    sent_body = False
    status = 0
    headers: dict[str, str] = {}
    parts: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if sent_body:
            await complete.wait()
            return {"type": "http.disconnect"}
        sent_body = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            for name, value in message.get("headers", []):
                headers[name.decode("latin-1").lower()] = value.decode("latin-1")
        elif message["type"] == "http.response.body":
            if message.get("body") and scope["method"] != "HEAD":
                parts.append(message["body"])
            if not message.get("more_body", False):
                complete.set()

    await app(scope, receive, send)
    assert status, f"{scope['method']} {scope['path']!r}: the app answered nothing"
    return Answer(status, headers, b"".join(parts))
