"""A lean route answers as FastAPI's own handler does: the same body, the same refusal.

One app, two routes with one endpoint and the submission's own body model: one declared the
usual way, one through :func:`~taskcrawler.api.lean.lean_json_route`. Every request goes to both
and the answers are compared; the lean handler counts the requests it served.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import httpx
import pytest
from fastapi import APIRouter, FastAPI, Header, Request
from fastapi.responses import JSONResponse, Response
from opentelemetry import trace
from starlette.exceptions import HTTPException

from taskcrawler.api.errors import install_error_handlers
from taskcrawler.api.lean import LeanHandler, lean_json_route
from taskcrawler.api.routing import include_flat
from taskcrawler.contract.jobs import JobCreate
from taskcrawler.domain.errors import LimitExceeded, StorageUnavailable

JSON = {"content-type": "application/json"}
LONG_KEY = "k" * 256
#: What the endpoint raises for these URLs: the app's error handlers answer.
REFUSALS: dict[str, Exception] = {
    "https://example.com/http-409": HTTPException(409, "taken"),
    "https://example.com/limit": LimitExceeded("too many", 7.0),
    "https://example.com/storage": StorageUnavailable("down: secret detail"),
    "https://example.com/bug": RuntimeError("secret detail"),
}


def _app(
    telemetry: dict[str, Any] | None = None, *, flat: bool = True
) -> tuple[FastAPI, list[str]]:
    served: list[str] = []

    async def answer(body: JobCreate, key: str | None) -> Response:
        if (refusal := REFUSALS.get(body.url)) is not None:
            raise refusal
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
    _add_lean(router, endpoint, lean)
    app = FastAPI(telemetry=telemetry)  # type: ignore[arg-type]
    install_error_handlers(app)
    if flat:
        include_flat(app.router, router)
    else:
        app.include_router(router)
    return app, served


def _add_lean(
    router: APIRouter, endpoint: Callable[..., Awaitable[Response]], lean: LeanHandler[JobCreate]
) -> None:
    """POST /lean: ``endpoint`` as declared, its valid submissions served by ``lean``."""
    router.add_api_route(
        "/lean",
        endpoint,
        methods=["POST"],
        status_code=201,
        route_class_override=lean_json_route(JobCreate, lean),
    )


async def _both(
    content: bytes,
    headers: dict[str, str],
    telemetry: dict[str, Any] | None = None,
    *,
    pieces: int = 1,
    flat: bool = True,
) -> tuple[Any, Any, list[str]]:
    """Each route's status, headers (as sent, in order) and body; ``pieces`` > 1 streams the body
    in that many chunks, without a Content-Length."""
    app, served = _app(telemetry, flat=flat)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    answers = []
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        for path in ("/plain", "/lean"):
            body: Any = content if pieces == 1 else _chunks(content, pieces)
            response = await client.post(path, content=body, headers=headers)
            answers.append((response.status_code, response.headers.raw, response.content))
    return answers[0], answers[1], served


async def _chunks(content: bytes, pieces: int) -> Any:
    size = -(-len(content) // pieces)
    for at in range(0, len(content), size):
        yield content[at : at + size]


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


@pytest.mark.parametrize(("content", "headers"), [SERVED[1], ANSWERED_BY_FASTAPI[2]])
async def test_a_body_sent_in_pieces_is_read_whole(content: bytes, headers: dict[str, str]) -> None:
    plain, lean, served = await _both(content, headers, pieces=3)
    assert lean == plain
    assert len(served) == (1 if plain[0] == 201 else 0)


@pytest.mark.parametrize("url", sorted(REFUSALS))
async def test_an_error_of_the_lean_handler_gets_the_apps_answer(url: str) -> None:
    # The lean way runs outside FastAPI's per-route exception handling: the app's own
    # handlers answer instead, with the same status, headers and words.
    plain, lean, served = await _both(f'{{"url": "{url}"}}'.encode(), JSON)
    assert lean == plain
    assert plain[0] >= 400
    assert "secret" not in str(plain)
    assert served == [url]


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


async def test_under_fastapis_include_router_fastapi_answers() -> None:
    # FastAPI then builds the route's app from its handler: correct, only not lean.
    plain, lean, served = await _both(SERVED[0][0], SERVED[0][1], flat=False)
    assert lean == plain
    assert plain[0] == 201
    assert served == []


async def test_the_lean_handler_can_read_the_body_it_was_given() -> None:
    # The shortcut reads the body from ``receive`` itself; a lean handler that reads it again
    # from its request gets the same bytes, not the next message (here: the client gone).
    seen: list[bytes] = []

    async def endpoint(body: JobCreate) -> Response:
        return JSONResponse({}, status_code=201)

    async def lean(request: Request, body: JobCreate) -> Response | None:
        seen.append(await request.body())
        return JSONResponse({}, status_code=201)

    router = APIRouter()
    _add_lean(router, endpoint, lean)
    app = FastAPI()
    include_flat(app.router, router)
    content = SERVED[0][0]
    messages = [
        {"type": "http.request", "body": content, "more_body": False},
        {"type": "http.disconnect"},
    ]
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if len(messages) > 1 else messages[0]

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/lean",
        "raw_path": b"/lean",
        "query_string": b"",
        "headers": [(b"host", b"test"), (b"content-type", b"application/json")],
        "server": ("test", 80),
        "client": ("127.0.0.1", 1),
        "root_path": "",
    }
    await app(scope, receive, send)
    assert seen == [content]
    assert statuses == [201]
