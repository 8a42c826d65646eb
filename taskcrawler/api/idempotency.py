"""``Idempotency-Key`` over HTTP: the header, the request's fingerprint, the stored answer."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Header, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from taskcrawler.domain.keys import Caller
from taskcrawler.service import Services

JSON = "application/json"
MAX_IDEMPOTENCY_KEY = 255

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=MAX_IDEMPOTENCY_KEY,
        description="Repeat a request safely: the same key returns the first answer.",
    ),
]


async def answer_once(
    services: Services,
    caller: Caller,
    key: str | None,
    request: Request,
    body: BaseModel,
    produce: Callable[[], Awaitable[tuple[int, BaseModel]]],
) -> Response:
    if key is None:
        code, model = await produce()
        # Serialized by pydantic's own (Rust) JSON encoder: the hot path of every submission.
        return Response(model.model_dump_json(), status_code=code, media_type=JSON)

    async def produce_json() -> tuple[int, Any]:
        code, model = await produce()
        return code, model.model_dump(mode="json")

    request_hash = request_fingerprint(request, body)
    code, stored = await services.idempotency.answer_once(caller, key, request_hash, produce_json)
    return JSONResponse(stored, status_code=code)


def request_fingerprint(request: Request, body: BaseModel) -> str:
    """What a repeat must match: the method and route as well as the body, so one key sent
    to two routes whose bodies read the same is a conflict, not the other route's answer."""
    route = request.scope.get("route")
    path = getattr(route, "path", None) or request.url.path
    fingerprint = hashlib.sha256(f"{request.method} {path}\n".encode())
    fingerprint.update(body.model_dump_json().encode())
    return fingerprint.hexdigest()
