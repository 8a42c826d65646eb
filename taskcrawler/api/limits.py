"""A pure ASGI middleware that refuses request bodies over a size, streamed or not."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from taskcrawler.api.errors import send_json

#: A Content-Length with more significant digits is over any limit: it is not parsed, since
#: int() refuses over 4,300 digits (and the HTTP parser accepts any number of leading zeros).
_MAX_LENGTH_DIGITS = 18
_OVER_ANY_LIMIT: int = 10**_MAX_LENGTH_DIGITS


class BodySizeLimit:
    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared is not None:
            if declared > self.max_bytes:
                await self._refuse(send)
            else:
                # The HTTP server frames the body by Content-Length: it cannot run longer.
                await self.app(scope, receive, send)
            return
        received = 0
        responded = False

        async def counting_receive() -> Message:
            nonlocal received, responded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # Answer now and tell the app the client went away, so it stops reading.
                    if not responded:
                        responded = True
                        await self._refuse(send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal responded
            if message["type"] == "http.response.start":
                if responded:
                    return
                responded = True
            elif message["type"] == "http.response.body" and received > self.max_bytes:
                return  # the app's answer to a body we already refused
            await send(message)

        await self.app(scope, counting_receive, guarded_send)

    async def _refuse(self, send: Send) -> None:
        detail = (
            f"request body over {self.max_bytes} bytes: send less at once, or raise "
            "TASKCRAWLER_MAX_REQUEST_BYTES"
        )
        await send_json(send, 413, {"detail": detail})


def _declared_length(scope: Scope) -> int | None:
    """The request's Content-Length, unless it is missing, malformed or beside chunked framing."""
    length = None
    for name, value in scope["headers"]:
        if name == b"transfer-encoding":
            return None
        if name == b"content-length":
            if not value.isdigit() or length is not None:
                return None
            length = _length(value)
    return length


def _length(digits: bytes) -> int:
    """The number ASCII ``digits`` spell, or one over any limit when it is longer."""
    significant = digits.lstrip(b"0")
    if len(significant) > _MAX_LENGTH_DIGITS:
        return _OVER_ANY_LIMIT
    return int(significant or b"0")
