from __future__ import annotations

import math
import re

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from taskcrawler.domain import ServiceUnavailable
from taskcrawler.domain.crawls import InvalidCrawlSpec
from taskcrawler.service.jobs import JobConflict, LimitExceeded


async def _service_unavailable(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceUnavailable)
    return JSONResponse(
        status_code=503,
        content={
            "detail": f"the {exc.dependency} is unavailable, try again",
            "dependency": exc.dependency,
        },
        headers={"Retry-After": "1"},
    )


async def _limit_exceeded(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LimitExceeded)
    return JSONResponse(
        status_code=429,
        content={"detail": str(exc)},
        headers={"Retry-After": str(max(1, math.ceil(exc.retry_after)))},
    )


async def _conflict(_: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(status_code=409, content={"detail": str(exc)})


async def _invalid_crawl_spec(_: Request, exc: Exception) -> JSONResponse:
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
    app.add_exception_handler(ServiceUnavailable, _service_unavailable)
    app.add_exception_handler(LimitExceeded, _limit_exceeded)
    app.add_exception_handler(JobConflict, _conflict)
    app.add_exception_handler(InvalidCrawlSpec, _invalid_crawl_spec)
