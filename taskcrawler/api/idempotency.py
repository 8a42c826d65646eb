"""``Idempotency-Key`` over HTTP: the header, the request's fingerprint, the stored answer."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Header
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

    request_hash = hashlib.sha256(body.model_dump_json().encode()).hexdigest()
    code, stored = await services.idempotency.answer_once(caller, key, request_hash, produce_json)
    return JSONResponse(stored, status_code=code)
