"""``Idempotency-Key``: a repeated request gets the first answer; the same key with another
body is a conflict, so a client bug cannot silently reuse a key."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Header, HTTPException, status
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from taskcrawler.api.deps import Services
from taskcrawler.service.jobs import Caller
from taskcrawler.storage.idempotency import StoredResponse

JSON = "application/json"

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=255,
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
    request_hash = hashlib.sha256(body.model_dump_json().encode()).hexdigest()
    stored = await services.idempotency.get(caller.owner, key)
    if stored is None:
        code, model = await produce()
        stored = await services.idempotency.remember(
            caller.owner, key, StoredResponse(request_hash, code, model.model_dump(mode="json"))
        )
    if stored.request_hash != request_hash:
        raise HTTPException(
            status.HTTP_409_CONFLICT, "this Idempotency-Key was used with a different request"
        )
    return JSONResponse(stored.body, status_code=stored.status_code)
