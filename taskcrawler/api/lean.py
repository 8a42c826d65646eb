"""A cheaper way through FastAPI for a hot route's plainly well-formed requests.

FastAPI serves a request by solving the route's parameters as a graph: the body read, its
content type parsed with :mod:`email`, the JSON decoded to Python objects and validated again
by pydantic, every header, query and path parameter looked up and validated, each dependency
solved in its own pass. On the single submission that was about half of the API's CPU per
request (bench/results/2026-12-07-post-cost.md). A route made with :func:`lean_json_route`
validates the raw body with the model's own JSON validator (one call into pydantic-core) and
hands it to a lean handler that reads what else it needs from the request itself. It is the
route's ASGI app, so a plain request also skips what FastAPI wraps around every handler: the
exception handling (the app's :class:`~starlette.middleware.exceptions.ExceptionMiddleware`
already applies the same handlers) and the two exit stacks for dependencies with ``yield``
(the lean handler has no dependencies); that was about a tenth of the API process's CPU on a
single submission (bench/results/2026-12-07-post-ratio.md).

Only the plain case takes that way. FastAPI's own handler answers every other request: a body
missing, not JSON, or invalid; whatever the lean handler declines; and every request while
FastAPI's native telemetry records one (its spans and data come from that handler). So each
refusal is FastAPI's, word for word, and the OpenAPI document is the route's as declared.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi.routing import APIRoute
from fastapi.telemetry import get_telemetry_data
from pydantic import BaseModel, ValidationError
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

M = TypeVar("M", bound=BaseModel)

#: The lean handler: the request and its validated body, to the response; or None, decided
#: before it has done anything (authenticated, counted a rate, written), for FastAPI to answer.
LeanHandler = Callable[[Request, M], Awaitable[Response | None]]


def lean_json_route(body_model: type[M], lean: LeanHandler[M]) -> type[APIRoute]:
    """An :class:`APIRoute` class whose requests with a valid JSON ``body_model`` go to
    ``lean``, and all others to FastAPI's handler of the route as declared.

    The shortcut is the route's own ASGI app: it serves where the route itself is on the app's
    router (:func:`~taskcrawler.api.routing.include_flat`, as the app's routes are). Under
    FastAPI's ``include_router`` FastAPI builds the route's app again from its handler, and
    FastAPI's handler answers every request.
    """

    class LeanJsonRoute(APIRoute):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.app = _with_shortcut(self.app, body_model, lean)

    return LeanJsonRoute


def _with_shortcut(standard: ASGIApp, body_model: type[M], lean: LeanHandler[M]) -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if not _is_json(Headers(scope=scope)) or get_telemetry_data() is not None:
            await standard(scope, receive, send)
            return
        raw = await _read(receive)
        body = _valid_body(body_model, raw)
        if body is not None:
            # Its body is the bytes read here, should the lean handler read it too.
            request = Request(scope, _replaying(raw, receive), send)
            response = await lean(request, body)
            if response is not None:
                await response(scope, receive, send)
                return
        await standard(scope, _replaying(raw, receive), send)

    return app


async def _read(receive: Receive) -> bytes:
    """The body, or the refusal FastAPI's handler makes of a body it could not read: a client
    gone, or a body over the limit cut short by
    :class:`~taskcrawler.api.limits.BodySizeLimit`, which then says the client went away."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise HTTPException(status_code=400, detail="There was an error parsing the body")
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """``receive`` for a handler that reads the body again: the body first, in one message."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def _is_json(headers: Headers) -> bool:
    """The body is declared as JSON the plain way (FastAPI also reads ``+json`` types and
    parameters other than a charset: it answers those itself)."""
    declared = headers.get("content-type")
    if declared is None:
        return False
    media_type, _, parameter = declared.partition(";")
    if media_type.strip().lower() != "application/json":
        return False
    return not parameter or parameter.strip().lower() in ("charset=utf-8", 'charset="utf-8"')


def _valid_body(body_model: type[M], raw: bytes) -> M | None:
    """``raw`` validated as ``body_model`` straight from the JSON; None where FastAPI's
    handler has to say what is wrong (it decodes with :mod:`json` and validates the objects:
    for JSON both accept, the same model)."""
    if not raw:
        return None
    try:
        return body_model.model_validate_json(raw)
    except ValidationError:
        return None
