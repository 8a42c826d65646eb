"""Every route of the API has a method in the Python client, or a reason here why not.

The test calls every public method of :class:`TaskCrawler` over httpx's MockTransport, records
the requests they send, and matches them with the routes of the app's OpenAPI schema (the API's
routes; the dashboard's pages and ``/mcp`` are not in it): a new route without a client method
fails it until one is added or the route is listed in ``NOT_IN_THE_CLIENT`` with its reason.
"""

from __future__ import annotations

import inspect
import io
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from taskcrawler.api import create_app
from taskcrawler.client import TaskCrawler
from taskcrawler.settings import Settings

#: Routes the client deliberately has no method for, each with why.
NOT_IN_THE_CLIENT: dict[str, str] = {
    r"/v1/.*": "Firecrawl-compatible: Firecrawl's own SDKs are its clients "
    "(tests/e2e/test_firecrawl_clients.py runs them)",
    r"/v2/.*": "Firecrawl-compatible: Firecrawl's own SDKs are its clients",
    r"/healthz": "a liveness probe, read by orchestrators, not by programs using the API",
    r"/readyz": "a readiness probe, read by load balancers and orchestrators",
    r"/metrics": "Prometheus text, read by Prometheus",
}

#: An argument for each required parameter name of the client's methods.
ARGUMENTS: dict[str, Callable[[], Any]] = {
    "job_id": lambda: str(uuid.uuid4()),
    "crawl_id": lambda: str(uuid.uuid4()),
    "monitor_id": lambda: str(uuid.uuid4()),
    "change_id": lambda: str(uuid.uuid4()),
    "key_id": lambda: "tk_0123456789",
    "url": lambda: "https://example.com/",
    "urls": lambda: ["https://example.com/"],
    "target": lambda: "https://example.com/",
    "q": lambda: "words",
    "query": lambda: "words",
    "name": lambda: "a key",
    "run": lambda: 1,
    "from_run": lambda: 1,
    "to_run": lambda: 2,
    "interval_seconds": lambda: 60.0,
    "out": io.BytesIO,
}


def _routes() -> set[tuple[str, str]]:
    schema = create_app(Settings()).openapi()
    return {(method.upper(), path) for path, ops in schema["paths"].items() for method in ops}


def _matches(template: str, path: str) -> bool:
    pattern = re.sub(r"\{[^}]+\}", "[^/]+", template)
    return re.fullmatch(pattern, path) is not None


def _sent_by_every_method() -> set[tuple[str, str]]:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={})

    with TaskCrawler("http://api", transport=httpx.MockTransport(answer)) as tc:
        for name, method in inspect.getmembers(tc, inspect.ismethod):
            if name.startswith("_") or name in ("close", "call_json", "request"):
                continue
            arguments = []
            for parameter in inspect.signature(method).parameters.values():
                if parameter.default is not inspect.Parameter.empty or parameter.kind in (
                    inspect.Parameter.VAR_KEYWORD,
                    inspect.Parameter.KEYWORD_ONLY,
                ):
                    continue
                assert parameter.name in ARGUMENTS, f"teach this test an argument {parameter.name}"
                arguments.append(ARGUMENTS[parameter.name]())
            before = len(sent)
            try:
                result = method(*arguments, **({"timeout": 0.01} if name == "wait" else {}))
                if isinstance(result, Iterator):
                    next(result, None)
            except Exception:
                pass
            assert len(sent) > before, f"{name} sent no request"
    return {(request.method, request.url.path) for request in sent}


def test_every_route_of_the_api_has_a_client_method() -> None:
    sent = _sent_by_every_method()
    missing = []
    for method, template in sorted(_routes()):
        if any(re.fullmatch(excepted, template) for excepted in NOT_IN_THE_CLIENT):
            continue
        if not any(m == method and _matches(template, path) for m, path in sent):
            missing.append(f"{method} {template}")
    assert missing == [], f"routes without a method in taskcrawler.client: {missing}"


def test_every_exception_is_a_route() -> None:
    """A route removed or renamed leaves no stale exception behind."""
    routes = _routes()
    for excepted in NOT_IN_THE_CLIENT:
        assert any(re.fullmatch(excepted, path) for _, path in routes), excepted


def test_the_check_catches_a_route_without_a_method() -> None:
    sent = _sent_by_every_method()
    assert not any(m == "PUT" and _matches("/api/v1/jobs/{job_id}", p) for m, p in sent)
    assert any(m == "GET" and _matches("/api/v1/monitors/{monitor_id}", p) for m, p in sent)
