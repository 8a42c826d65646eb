"""Every refusal of a service, mapped to its HTTP status here and nowhere else."""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from taskcrawler.domain import ServiceUnavailable
from taskcrawler.domain.crawls import InvalidCrawlSpec
from taskcrawler.domain.errors import (
    Conflict,
    Forbidden,
    InvalidCursor,
    LimitExceeded,
    NotFound,
    Unauthenticated,
)
from taskcrawler.service.mapping import MapRefused


def _detail(
    status_code: int, headers: dict[str, str] | None = None
) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def answer(_: Request, exc: Exception) -> Response:
        return JSONResponse(status_code=status_code, content={"detail": str(exc)}, headers=headers)

    return answer


async def _service_unavailable(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServiceUnavailable)
    return JSONResponse(
        status_code=503,
        content={
            "detail": f"the {exc.dependency} is unavailable, try again",
            "dependency": exc.dependency,
        },
        headers={"Retry-After": "1"},
    )


async def _limit_exceeded(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, LimitExceeded)
    return JSONResponse(
        status_code=429,
        content={"detail": str(exc)},
        headers={"Retry-After": str(max(1, math.ceil(exc.retry_after)))},
    )


async def _invalid_cursor(request: Request, exc: Exception) -> Response:
    # The shape of every other 422 (and of the schema): a list of errors with their location.
    error = {
        "type": "value_error",
        "loc": ("query", "cursor"),
        "msg": str(exc),
        "input": request.query_params.get("cursor"),
    }
    return await request_validation_exception_handler(request, RequestValidationError([error]))


async def _invalid_crawl_spec(_: Request, exc: Exception) -> Response:
    """The shape of FastAPI's own 422, with ``loc`` pointing at the field (``include_paths[2]``
    becomes ``["body", "include_paths", 2]``), so clients read both the same way."""
    assert isinstance(exc, InvalidCrawlSpec)
    loc: list[str | int] = ["body"]
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", exc.field):
        loc.append(int(index) if index else name)
    return JSONResponse(
        status_code=422,
        content={"detail": [{"loc": loc, "msg": exc.message, "type": "value_error"}]},
    )


def install_error_handlers(app: FastAPI) -> None:
    handlers: dict[type[Exception], Callable[[Request, Exception], Awaitable[Response]]] = {
        ServiceUnavailable: _service_unavailable,
        LimitExceeded: _limit_exceeded,
        InvalidCursor: _invalid_cursor,
        InvalidCrawlSpec: _invalid_crawl_spec,
        MapRefused: _detail(422),
        NotFound: _detail(404),
        Conflict: _detail(409),
        Unauthenticated: _detail(401, {"WWW-Authenticate": "Bearer"}),
        Forbidden: _detail(403),
    }
    for error, handler in handlers.items():
        app.add_exception_handler(error, handler)
