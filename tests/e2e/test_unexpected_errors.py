"""A bug in a route (an exception nothing maps) answers JSON in the API's own shape, never the
exception's text: Firecrawl's ``{"success": false, "error"}`` on ``/v1`` and ``/v2``, whose
SDKs (Python and JavaScript) then raise an error that says what went wrong; ``{"detail"}`` on
the native API. The routes are made to fail by a service method that raises, on a TaskCrawler
served over TCP as the SDKs meet it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.harness import fast_settings
from tests.support.firecrawl_clients import (
    CLIENTS,
    ServedApp,
    node_binary,
    require_installed,
    run_json,
    served_app,
)
from tests.support.firecrawl_sdk import v2_client
from tests.support.services import backing_store

SECRET = "password=hunter2 at /srv/secret"


async def _broken(*_: Any, **__: Any) -> Any:
    raise RuntimeError(SECRET)


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[ServedApp]:
    async with (
        backing_store("embedded", tmp_path) as store,
        served_app("embedded", fast_settings(**store)) as app,
    ):
        yield app


def _break(served: ServedApp, monkeypatch: pytest.MonkeyPatch) -> None:
    # The app's routes are flattened and read no ``dependency_overrides`` (api/routing.py):
    # the services the routes call are made to fail instead.
    monkeypatch.setattr(served.app.state.firecrawl, "scrape", _broken)
    monkeypatch.setattr(served.app.state.services.jobs, "list_jobs", _broken)


async def test_a_bug_on_a_firecrawl_route_answers_firecrawls_json(
    served: ServedApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    _break(served, monkeypatch)
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        for version in ("v1", "v2"):
            answer = await http.post(f"/{version}/scrape", json={"url": "https://example.com/"})
            assert answer.status_code == 500, answer.text
            assert answer.headers["content-type"] == "application/json"
            assert answer.json() == {"success": False, "error": "internal server error"}
            assert "hunter2" not in answer.text


async def test_a_bug_on_the_native_api_answers_json(
    served: ServedApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    _break(served, monkeypatch)
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        answer = await http.get("/api/v1/jobs")
    assert answer.status_code == 500, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == {"detail": "internal server error"}
    assert "hunter2" not in answer.text


async def test_the_sdks_read_a_bugs_answer(
    served: ServedApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_installed()
    _break(served, monkeypatch)
    fc = v2_client("fc-YOUR-API-KEY", served.base_url)
    # The SDK read the body: its message is ours (a plain-text body gives a JSON parse error).
    with pytest.raises(Exception, match="internal server error"):
        await asyncio.to_thread(fc.scrape, "https://example.com/")
    script = str(CLIENTS / "firecrawl_js_error.mjs")
    config = json.dumps({"api_url": served.base_url})
    out = await run_json([str(node_binary()), script, config], {}, within=120)
    assert "internal server error" in out["raised"], out
    assert "hunter2" not in out["raised"]
