"""A lean route answers as FastAPI's own handler does: the same body, the same refusal.

One app, two routes with one endpoint and the submission's own body model: one declared the
usual way, one through :func:`~taskcrawler.api.lean.lean_json_route`. Every request goes to both
and the answers are compared; the lean handler counts the requests it served.
"""

from __future__ import annotations

from typing import Annotated, Any

import httpx
import pytest
from fastapi import APIRouter, FastAPI, Header, Request
from fastapi.responses import JSONResponse, Response
from opentelemetry import trace

from taskcrawler.api.errors import install_error_handlers
from taskcrawler.api.lean import lean_json_route
from taskcrawler.api.routing import include_flat
from taskcrawler.contract.jobs import JobCreate

JSON = {"content-type": "application/json"}
LONG_KEY = "k" * 256


def _app(telemetry: dict[str, Any] | None = None) -> tuple[FastAPI, list[str]]:
    served: list[str] = []

    async def answer(body: JobCreate, key: str | None) -> Response:
        return JSONResponse({"body": body.model_dump(mode="json"), "key": key}, status_code=201)

    async def endpoint(
        body: JobCreate,
        key: Annotated[str | None, Header(alias="Idempotency-Key", max_length=255)] = None,
    ) -> Response:
        return await answer(body, key)

    async def lean(request: Request, body: JobCreate) -> Response | None:
        key = request.headers.get("idempotency-key")
        if key is not None and len(key) > 255:
            return None
        served.append(body.url)
        return await answer(body, key)

    router = APIRouter()  # served from the app's router, as the app's routes are
    router.add_api_route("/plain", endpoint, methods=["POST"], status_code=201)
    router.add_api_route(
        "/lean",
        endpoint,
        methods=["POST"],
        status_code=201,
        route_class_override=lean_json_route(JobCreate, lean),
    )
    app = FastAPI(telemetry=telemetry)  # type: ignore[arg-type]
    install_error_handlers(app)
    include_flat(app.router, router)
    return app, served


async def _both(
    content: bytes, headers: dict[str, str], telemetry: dict[str, Any] | None = None
) -> tuple[Any, Any, list[str]]:
    app, served = _app(telemetry)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        plain = await client.post("/plain", content=content, headers=headers)
        lean = await client.post("/lean", content=content, headers=headers)
    return (plain.status_code, plain.json()), (lean.status_code, lean.json()), served


SERVED = [
    (b'{"url": "https://example.com/a"}', JSON),
    (b'{"url": "https://example.com/a", "formats": ["markdown", "html"], "max_age": 60}', JSON),
    (b'{"url": "https://example.com/a"}', {"content-type": "application/json; charset=utf-8"}),
    (b'{"url": "https://example.com/a"}', {"content-type": "Application/JSON"}),
    (b'{"url": "https://a.example/", "url": "https://b.example/"}', JSON),
    (b'{"url": "https://example.com/caf\\u00e9"}', JSON),
    (b'{"url": "https://example.com/a"}', JSON | {"idempotency-key": "k" * 255}),
    (b'{"url": "https://example.com/a"}', JSON | {"idempotency-key": ""}),
]

ANSWERED_BY_FASTAPI = [
    (b"", JSON),
    (b"{", JSON),
    (b"null", JSON),
    (b"[]", JSON),
    (b'{"url": "https://example.com/a"}', {}),
    (b'{"url": "https://example.com/a"}', {"content-type": "text/plain"}),
    (b'{"url": "https://example.com/a"}', {"content-type": "application/merge-patch+json"}),
    (b'{"url": "https://example.com/a"}', {"content-type": "application/json; charset=latin-1"}),
    (b'{"url": "https://example.com/a"}', JSON | {"idempotency-key": LONG_KEY}),
    (b'\xef\xbb\xbf{"url": "https://example.com/a"}', JSON),
    ('{"url": "https://example.com/a"}'.encode("utf-16"), JSON),
    (b'{"url": "ftp://example.com/a"}', JSON),
    (b'{"url": "https://example.com/a", "extra": 1}', JSON),
    (b'{"url": "https://example.com/\\u0000"}', JSON),
    (b'{"url": "https://example.com/\\ud800"}', JSON),
    (b'{"url": "https://example.com/a", "max_age": NaN}', JSON),
    (b'{"url": "https://example.com/a", "max_age": 1e400}', JSON),
    (b'{"url": "https://example.com/a", "formats": ["nope"]}', JSON),
    (b'{"url": 5}', JSON),
]


@pytest.mark.parametrize(("content", "headers"), SERVED)
async def test_a_plain_request_is_served_lean_with_fastapis_answer(
    content: bytes, headers: dict[str, str]
) -> None:
    plain, lean, served = await _both(content, headers)
    assert lean == plain
    assert plain[0] == 201
    assert len(served) == 1


@pytest.mark.parametrize(("content", "headers"), ANSWERED_BY_FASTAPI)
async def test_any_other_request_gets_fastapis_own_answer(
    content: bytes, headers: dict[str, str]
) -> None:
    plain, lean, served = await _both(content, headers)
    assert lean == plain
    assert served == []


class TracerProvider(trace.TracerProvider):
    """A provider an application configured (FastAPI takes the API's no-op one for none)."""

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return trace.NoOpTracer()


async def test_a_request_fastapis_telemetry_records_goes_its_usual_way() -> None:
    # Its spans and data come from FastAPI's handler.
    telemetry = {"tracer_provider": TracerProvider()}
    plain, lean, served = await _both(SERVED[0][0], SERVED[0][1], telemetry)
    assert lean == plain
    assert plain[0] == 201
    assert served == []
