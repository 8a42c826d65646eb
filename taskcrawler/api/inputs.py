"""What the API refuses at its edge before any route: a NUL in the path, the query string or the
headers (:class:`EdgeGuard`; request bodies are checked by
:class:`~taskcrawler.contract.base.RequestModel`).

Each refusal is a ``422`` naming the field, in FastAPI's usual shape.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Receive, Scope, Send

from taskcrawler.api.errors import send_json
from taskcrawler.contract.base import UNSTORABLE


class EdgeGuard:
    """A pure ASGI middleware: a NUL in the path, the query string or a header gets a 422 before
    any route sees it (routes take ids, cursors, hosts and keys from there into queries)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (error := _nul_in(scope)) is not None:
            await send_json(send, 422, {"detail": [error]})
            return
        await self.app(scope, receive, send)


def _nul_in(scope: Scope) -> dict[str, Any] | None:
    """The validation error for the first NUL in the request line or headers, if any."""
    path: str = scope["path"]
    if "\x00" in path:
        return _error(("path",), "the path", path)
    query: bytes = scope["query_string"]
    if b"%00" in query or b"\x00" in query:
        for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            if "\x00" in name or "\x00" in value:
                return _error(("query", name), f"the query parameter {name!r}", value)
    for raw_name, raw_value in scope["headers"]:
        if b"\x00" in raw_name or b"\x00" in raw_value:
            name = raw_name.decode("latin-1")
            return _error(("header", name), f"the header {name!r}", raw_value.decode("latin-1"))
    return None


def _error(loc: tuple[str, ...], where: str, value: str) -> dict[str, Any]:
    return {
        "type": UNSTORABLE,
        "loc": loc,
        "msg": f"{where} holds a NUL character (U+0000), which cannot be stored",
        "input": value,
    }
