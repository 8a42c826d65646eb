"""The app's routes are on its own router, so a request is matched in one pass.

A router that FastAPI includes stays a node that every request walks, route by route and twice
for the router that matches (taskcrawler/api/routing.py): the app must not go back to that
shape. And a router served flat must be the router FastAPI would have included: the same
OpenAPI document, the same answers.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI, Header, HTTPException, Query
from fastapi.responses import HTMLResponse, PlainTextResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.routing import BaseRoute, Route

from taskcrawler.api.app import ROUTERS, create_app
from taskcrawler.api.lean import lean_json_route
from taskcrawler.api.routing import include_flat
from taskcrawler.settings import Settings


def test_every_route_of_the_app_is_on_its_own_router() -> None:
    app = create_app(Settings())
    nested = [route for route in app.routes if not isinstance(route, Route)]
    assert nested == []
    declared = {_signature(route) for router in ROUTERS for route in router.routes}
    served = {_signature(route) for route in app.routes if isinstance(route, APIRoute)}
    assert declared <= served


def _signature(route: Any) -> tuple[str, frozenset[str], Callable[..., Any]]:
    return route.path, frozenset(route.methods), route.endpoint


async def test_a_request_asks_each_route_at_most_once(monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app(Settings())
    asked: list[int] = []
    inside: set[int] = set()
    kinds: set[type[BaseRoute]] = {APIRoute, Route, *(type(route) for route in app.routes)}
    for kind in kinds:
        monkeypatch.setattr(kind, "matches", _counted(kind.matches, asked, inside))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        answer = await client.get("/healthz")  # the routes of all but two routers before it
    assert answer.status_code == 200
    assert max(Counter(asked).values()) == 1
    assert len(asked) <= len(app.routes)


def _counted(matches: Callable[..., Any], asked: list[int], inside: set[int]) -> Callable[..., Any]:
    """``matches`` recording the routes asked: once a question, though it goes on to the
    ``matches`` of a base class (``inside``: the routes being asked)."""

    def counting(route: Any, scope: Any) -> Any:
        if id(route) in inside:
            return matches(route, scope)
        inside.add(id(route))
        asked.append(id(route))
        try:
            return matches(route, scope)
        finally:
            inside.discard(id(route))

    return counting


class Item(BaseModel):
    name: str
    size: int = 0


class Problem(BaseModel):
    detail: str


def _caller(x_caller: Annotated[str, Header()] = "anyone") -> str:
    return x_caller


def _refuse_blocked(x_blocked: Annotated[str | None, Header()] = None) -> None:
    if x_blocked is not None:
        raise HTTPException(status_code=403, detail="blocked")


def _kitchen_sink() -> list[APIRouter]:
    """Routers using what the app's routers use, and more of what a router can say."""
    items = APIRouter(
        prefix="/items",
        tags=["items"],
        dependencies=[Depends(_refuse_blocked)],
        responses={404: {"model": Problem, "description": "No such item."}},
    )

    @items.post("", status_code=201, summary="Add an item")
    async def add(item: Item, caller: Annotated[str, Depends(_caller)]) -> Item:
        """Adds the item.

        \f
        Not documented.
        """
        return Item(name=f"{caller}:{item.name}", size=item.size)

    @items.get("/{item_id}", response_model=Item, deprecated=True, operation_id="read_item")
    async def read(item_id: int, full: Annotated[bool, Query()] = False) -> dict[str, Any]:
        if item_id == 0:
            raise HTTPException(status_code=404, detail="no such item")
        return {"name": str(item_id), "size": 2 if full else 1, "hidden": True}

    @items.get("/stream/lines", tags=["streams"])
    async def lines() -> AsyncIterator[Item]:
        for n in range(2):
            yield Item(name=str(n))

    async def lean(request: Any, body: Item) -> Any:
        return None  # FastAPI answers: the same answer either way

    items.add_api_route(
        "/lean",
        add,
        methods=["PUT"],
        route_class_override=lean_json_route(Item, lean),
        openapi_extra={"x-lean": True},
    )
    pages = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)

    @pages.get("/page")
    async def page() -> str:
        return "<p>page</p>"

    plain = APIRouter(tags=["plain"])

    @plain.get("/text", response_class=PlainTextResponse, responses={503: {"description": "down"}})
    async def text() -> str:
        return "text"

    return [items, pages, plain]


def _apps() -> tuple[FastAPI, FastAPI]:
    """The same routers, included by FastAPI and served flat."""
    included, flat = FastAPI(title="t", version="1"), FastAPI(title="t", version="1")
    for router in _kitchen_sink():
        included.include_router(router)
        include_flat(flat.router, router)
    return included, flat


def test_a_router_served_flat_has_the_openapi_document_of_one_included() -> None:
    included, flat = _apps()
    assert flat.openapi() == included.openapi()
    assert list(flat.openapi()["paths"]) == list(included.openapi()["paths"])


REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/items", {"json": {"name": "a", "size": 3}, "headers": {"x-caller": "me"}}),
    ("POST", "/items", {"json": {"name": "a", "size": "big"}}),
    ("POST", "/items", {"json": {"name": "a"}, "headers": {"x-blocked": "1"}}),
    ("PUT", "/items/lean", {"json": {"name": "b"}}),
    ("GET", "/items/7", {"params": {"full": "true"}}),
    ("GET", "/items/0", {}),
    ("GET", "/items/x", {}),
    ("DELETE", "/items/7", {}),
    ("GET", "/items/stream/lines", {}),
    ("GET", "/page", {}),
    ("GET", "/text", {}),
    ("GET", "/text/", {}),
    ("GET", "/nope", {}),
]


@pytest.mark.parametrize(("method", "path", "options"), REQUESTS)
async def test_a_router_served_flat_answers_as_one_included(
    method: str, path: str, options: dict[str, Any]
) -> None:
    answers = []
    for app in _apps():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            answer = await client.request(method, path, **options)
        answers.append((answer.status_code, answer.headers.get("content-type"), answer.content))
    included, flat = answers
    assert flat == included


@pytest.mark.parametrize(
    "target",
    [
        FastAPI(dependencies=[Depends(_refuse_blocked)]),
        FastAPI(default_response_class=HTMLResponse),
        FastAPI(responses={418: {"description": "a teapot"}}),
    ],
    ids=["dependencies", "response class", "responses"],
)
def test_a_router_is_not_served_flat_on_one_that_adds_to_its_routes(target: FastAPI) -> None:
    with pytest.raises(TypeError):
        include_flat(target.router, _kitchen_sink()[0])


def test_a_router_with_a_lifespan_is_not_served_flat() -> None:
    """The app's router never enters an included router's lifespan: it would be dropped."""

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        yield

    router = APIRouter(lifespan=lifespan)

    @router.get("/x")
    async def x() -> int:
        return 1

    with pytest.raises(TypeError, match="lifespan"):
        include_flat(FastAPI().router, router)
