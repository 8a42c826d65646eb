"""The app's routes on one router, matched once per request.

``FastAPI.include_router`` keeps each included router as a node of a tree in the app's routes
(FastAPI 0.137 on). A request walks that tree: each node before the one that matches asks its
router's routes one by one, each through a context object set into the scope and taken out
again; the node that matches is matched a second time when it handles the request; a path that
matches nothing is walked again with a slash added or removed. With the app's fifteen routers,
matching alone cost 311-343 us of CPU for ``/healthz``, a 404 or ``/mcp``
(bench/results/2026-12-07-route-matching.md).

:func:`include_flat` gives the app the shape ``include_router`` gave it before 0.137: each route
of the router is declared again on the app's own router, through FastAPI's public
``add_api_route``, with what the router already put in it (the router's prefix, tags,
dependencies and responses are part of each route), so the app is one list of routes, in the same
order, with the same OpenAPI document, and ``app.dependency_overrides`` applies to them as to
an included router's.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.datastructures import Default
from fastapi.routing import APIRoute


def include_flat(target: APIRouter, router: APIRouter) -> None:
    """Declare every route of ``router`` on ``target`` itself, in order, instead of including
    the router as a node that each request walks. Only path operations are copied: a router
    with event handlers or a lifespan of its own is for ``include_router``."""
    if router.on_startup or router.on_shutdown:
        raise TypeError("a router with event handlers is included with include_router")
    for route in router.routes:
        if not isinstance(route, APIRoute):
            raise TypeError(f"only path operations are declared flat, not {route!r}")
        target.add_api_route(
            route.path,
            route.endpoint,
            route_class_override=type(route),
            **_declaration(route),
        )


def _declaration(route: APIRoute) -> dict[str, Any]:
    """The arguments that declare ``route`` again as it is."""
    return {
        "response_model": _response_model(route),
        "status_code": route.status_code,
        "tags": route.tags,
        "dependencies": route.dependencies,
        "summary": route.summary,
        "description": route.description,
        "response_description": route.response_description,
        "responses": route.responses,
        "deprecated": route.deprecated,
        "methods": route.methods,
        "operation_id": route.operation_id,
        "response_model_include": route.response_model_include,
        "response_model_exclude": route.response_model_exclude,
        "response_model_by_alias": route.response_model_by_alias,
        "response_model_exclude_unset": route.response_model_exclude_unset,
        "response_model_exclude_defaults": route.response_model_exclude_defaults,
        "response_model_exclude_none": route.response_model_exclude_none,
        "include_in_schema": route.include_in_schema,
        "response_class": route.response_class,
        "name": route.name,
        "callbacks": route.callbacks,
        "openapi_extra": route.openapi_extra,
        "generate_unique_id_function": route.generate_unique_id_function,
        "strict_content_type": route.strict_content_type,
    }


def _response_model(route: APIRoute) -> Any:
    """The route's response model; for a streaming endpoint, left for FastAPI to read from its
    annotation again (the only way to give the stream its item type back)."""
    if route.stream_item_type is not None:
        return Default(None)
    return route.response_model
