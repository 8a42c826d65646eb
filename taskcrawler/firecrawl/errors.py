"""Firecrawl's error bodies on its paths (``/v1/…``, ``/v2/…``): ``{"success": false, "error":
…}``, and 400 where the rest of the API answers 422, so Firecrawl's SDKs read every refusal,
whoever raised it (the key check, a rate limit, validation, a route)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from taskcrawler.api.errors import INTERNAL_ERROR, detail_answer, send_json
from taskcrawler.firecrawl.options import Unsupported
from taskcrawler.firecrawl.service import ClientGone, ScrapeFailed, ScrapeTimedOut

PREFIXES = ("/v1/", "/v2/")
#: An error body is small (a message, validation errors); a larger one is passed on as it is.
MAX_ERROR_BYTES = 256 * 1024
#: The Firecrawl service's refusals, and the status each is answered with.
STATUSES: Mapping[type[Exception], int] = {
    Unsupported: 400,
    ScrapeTimedOut: 408,
    ScrapeFailed: 500,
    # Nobody reads it: nginx's status for a client that closed its request, for the logs.
    ClientGone: 499,
}


def install_error_handlers(app: FastAPI) -> None:
    """Answer the Firecrawl service's refusals (beside the core's, ``api/errors.py``)."""
    for error, status in STATUSES.items():
        app.add_exception_handler(error, detail_answer(status))


def firecrawl_error(body: Any) -> dict[str, Any]:
    """Our ``{"detail": …}`` as Firecrawl's ``{"success": false, "error", "details"}``."""
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list):
        messages = []
        for item in detail:
            where = ".".join(
                str(p) for p in item.get("loc", ()) if p not in ("body", "query", "path")
            )
            messages.append(f"{where}: {item.get('msg')}" if where else str(item.get("msg")))
        return {"success": False, "error": "; ".join(messages), "details": detail}
    return {"success": False, "error": str(detail) if detail is not None else "error"}


class FirecrawlErrors:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIXES):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        #: An error body too large to rewrite: passed on as it comes, once its start was sent.
        passing = False
        started = False
        chunks: list[bytes] = []

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        async def rewriting(message: Message) -> None:
            nonlocal start, passing
            if message["type"] == "http.response.start" and message["status"] >= 400:
                start = message
                return
            if start is None or passing:
                await sending(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body") and sum(map(len, chunks)) <= MAX_ERROR_BYTES:
                return
            passing = bool(message.get("more_body"))
            await self._answer(sending, start, b"".join(chunks), passing)

        try:
            await self.app(scope, receive, rewriting)
        except Exception:
            # Starlette's last resort, outside this middleware, answers a plain-text 500 that
            # Firecrawl's SDKs cannot read; answer theirs, without the exception's text, and
            # let the exception go on to be logged (that middleware sends nothing more once
            # a response has started).
            if not started:
                await send_json(send, 500, {"success": False, "error": INTERNAL_ERROR})
            raise

    @staticmethod
    async def _answer(send: Send, start: Message, body: bytes, more: bool) -> None:
        status = start["status"]
        try:
            document = orjson.loads(body) if not more else None
        except orjson.JSONDecodeError:
            document = None
        if not isinstance(document, dict) or "detail" not in document:
            await send(start)
            await send({"type": "http.response.body", "body": body, "more_body": more})
            return
        rewritten = orjson.dumps(firecrawl_error(document))
        headers = [
            (name, value)
            for name, value in start.get("headers", [])
            if name.lower() not in (b"content-length", b"content-type")
        ]
        headers += [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(rewritten)).encode()),
        ]
        await send(
            {
                "type": "http.response.start",
                "status": 400 if status == 422 else status,
                "headers": headers,
            }
        )
        await send({"type": "http.response.body", "body": rewritten})
