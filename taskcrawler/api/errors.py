"""Every refusal of a core service, mapped to its HTTP status here and nowhere else (the
Firecrawl adapter maps its own, :mod:`taskcrawler.firecrawl.errors`); and how errors are
answered: JSON always, whatever the request held."""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.types import Send

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
from taskcrawler.domain.jobs import InvalidJobFilter
from taskcrawler.domain.structured import ModelNotConfigured
from taskcrawler.domain.web_search import InvalidWebQuery, WebSearchFailed, WebSearchNotConfigured
from taskcrawler.service.mapping import MapRefused

#: What an unexpected failure answers: its text may hold anything (a query, a path, a secret).
INTERNAL_ERROR = "internal server error"


def detail_answer(
    status_code: int, headers: dict[str, str] | None = None
) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def answer(_: Request, exc: Exception) -> Response:
        return JSONResponse(
            status_code=status_code, content={"detail": renderable(exc)}, headers=headers
        )

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
        content={"detail": renderable(exc)},
        headers={"Retry-After": str(max(1, math.ceil(exc.retry_after)))},
    )


async def _invalid_cursor(request: Request, exc: Exception) -> Response:
    # The shape of every other 422 (and of the schema): a list of errors with their location.
    parameter = exc.parameter if isinstance(exc, InvalidCursor) else "cursor"
    error = {
        "type": "value_error",
        "loc": ("query", parameter),
        "msg": str(exc),
        "input": request.query_params.get(parameter),
    }
    return await _invalid_request(request, RequestValidationError([error]))


async def _invalid_crawl_spec(_: Request, exc: Exception) -> Response:
    """The shape of FastAPI's own 422, with ``loc`` pointing at the field (``include_paths[2]``
    becomes ``["body", "include_paths", 2]``), so clients read both the same way."""
    assert isinstance(exc, InvalidCrawlSpec | InvalidJobFilter)
    loc: list[str | int] = ["body"]
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", exc.field):
        loc.append(int(index) if index else name)
    return JSONResponse(
        status_code=422,
        content=renderable({"detail": [{"loc": loc, "msg": exc.message, "type": "value_error"}]}),
    )


async def _invalid_web_query(_: Request, exc: Exception) -> Response:
    """FastAPI's 422 shape, as every other 422 of the native API: the message names the field
    (the domain's check is shared with Firecrawl's routes, which answer their own 400)."""
    return JSONResponse(
        status_code=422,
        content=renderable({"detail": [{"loc": ["body"], "msg": str(exc), "type": "value_error"}]}),
    )


def renderable(value: Any) -> Any:
    """``value`` as strict JSON can hold it. A 422 echoes the input it refuses, and that input
    may be anything JSON can smuggle into Python: NaN and infinities become their JSON-ish
    spelling ("NaN", "Infinity"), integers beyond 64 bits their digits as a string, lone
    surrogates U+FFFD, exceptions their message, other objects their ``str``."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        # Beyond 64 bits many parsers overflow (to infinity, or an error): echo the digits.
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, str):
        return _without_surrogates(value)
    if isinstance(value, dict):
        return {_without_surrogates(str(k)): renderable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [renderable(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return _without_surrogates(str(value))


def _without_surrogates(text: str) -> str:
    if text.isascii():
        return text
    # A lone surrogate cannot be encoded; a pair written as two escapes becomes its character.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


async def send_json(send: Send, status: int, document: Any) -> None:
    """Answer from a pure ASGI middleware, before any route: ``document`` as strict JSON."""
    body = orjson.dumps(renderable(document))
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _internal_error(_: Request, __: Exception) -> Response:
    """A bug's answer: JSON as every other error, never its text (Starlette logs it, and its
    own answer would be plain text)."""
    return JSONResponse(status_code=500, content={"detail": INTERNAL_ERROR})


async def _invalid_request(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse(status_code=422, content={"detail": renderable(exc.errors())})


def install_error_handlers(app: FastAPI) -> None:
    handlers: dict[type[Exception], Callable[[Request, Exception], Awaitable[Response]]] = {
        RequestValidationError: _invalid_request,
        ServiceUnavailable: _service_unavailable,
        LimitExceeded: _limit_exceeded,
        InvalidCursor: _invalid_cursor,
        InvalidCrawlSpec: _invalid_crawl_spec,
        InvalidJobFilter: _invalid_crawl_spec,
        MapRefused: detail_answer(422),
        NotFound: detail_answer(404),
        Conflict: detail_answer(409),
        Unauthenticated: detail_answer(401, {"WWW-Authenticate": "Bearer"}),
        Forbidden: detail_answer(403),
        ModelNotConfigured: detail_answer(400),
        WebSearchNotConfigured: detail_answer(400),
        InvalidWebQuery: _invalid_web_query,
        WebSearchFailed: detail_answer(502),
        # Starlette gives this one to its outermost middleware, whose answer is otherwise text.
        Exception: _internal_error,
    }
    for error, handler in handlers.items():
        app.add_exception_handler(error, handler)
