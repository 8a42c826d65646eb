from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from taskcrawler.domain import ServiceUnavailable


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


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ServiceUnavailable, _service_unavailable)
