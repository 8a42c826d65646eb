"""The app's routes on one router, matched in one pass.

``FastAPI.include_router`` keeps each included router as a node of a tree in the app's routes
(FastAPI 0.137 on). A request walks that tree: each node before the one that matches asks its
router's routes one by one, each through a context object set into the scope and taken out
again; the node that matches is matched a second time when it handles the request; a path that
matches nothing is walked again with a slash added or removed. Each node also builds a copy of
its routes for each app, on the first request that reaches it.

:func:`include_flat` puts the router's own routes on the app's router instead, in order: the
app is one list of routes, as ``include_router`` made it before 0.137, with the same OpenAPI
document (bench/results/2026-12-07-route-matching.md).
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.datastructures import DefaultPlaceholder
from fastapi.routing import APIRoute


def include_flat(target: APIRouter, router: APIRouter) -> None:
    """Serve ``router``'s path operations from ``target``'s own list of routes.

    The routes are the router's objects, complete as declared (the router's prefix, tags,
    dependencies and responses are in each), shared by every app that includes them and built
    once. So they answer to the router's ``dependency_overrides_provider``, not the app's: this
    is for an app that uses no ``app.dependency_overrides``, as TaskCrawler's does not. Only path
    operations are taken: a router with event handlers, a lifespan or routes of other kinds is
    for ``include_router``.
    """
    if _adds_to_its_routes(target):
        raise TypeError("the routes would not get what the target router adds to its own")
    if router.on_startup or router.on_shutdown or _has_a_lifespan(router):
        raise TypeError(
            "a router with event handlers or a lifespan is included with include_router"
        )
    for route in router.routes:
        if not isinstance(route, APIRoute):
            raise TypeError(f"only path operations are served flat, not {route!r}")
    target.routes.extend(router.routes)


def _adds_to_its_routes(router: APIRouter) -> bool:
    """``router`` has settings that ``include_router`` would give the routes it includes."""
    return bool(
        router.prefix
        or router.tags
        or router.dependencies
        or router.responses
        or router.callbacks
        or router.deprecated
        or not router.include_in_schema
        or not isinstance(router.default_response_class, DefaultPlaceholder)
        or not isinstance(router.generate_unique_id_function, DefaultPlaceholder)
    )


#: The lifespan a router is given when it declares none (FastAPI has no public name for it):
#: it runs only the router's event handlers, which are checked for apart.
_NO_LIFESPAN = type(APIRouter().lifespan_context)


def _has_a_lifespan(router: APIRouter) -> bool:
    """``router`` declares a lifespan: the app's router would never enter it."""
    return not isinstance(router.lifespan_context, _NO_LIFESPAN)
