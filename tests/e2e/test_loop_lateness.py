"""Nothing a request makes the API compute holds its event loop: the API's heavy operations
(a map of a big sitemap, through the API, Firecrawl's v2 and the MCP tool; an export; a hybrid
search; a page of big changes), each run under an event loop lateness probe
(tests/support/lateness.py) with a budget per request.

The budget is on the CPU time the loop's thread spends between two turns of a 5 ms timer, so a
busy machine cannot make it fail (the steady state measured here is about 5 ms), and it is far
under the stalls it exists to catch: a map of these 30,000 sitemap URLs held the loop for
0.6 s before its keys were made in the parser processes. The API runs without a worker (its
own loop is the one probed), on both databases.
"""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import httpx
import pytest
from aiohttp import web

from taskcrawler.settings import Settings
from tests.e2e.harness import Service, running
from tests.support import seeding
from tests.support.lateness import BUDGET_SECONDS, probing

SITEMAP_URLS = 30_000
EXPORTED_JOBS = 1_500
SEARCHED_JOBS = 300
BIG_CHANGES = 120
DIFF_BYTES = 200 * 1024


@pytest.fixture
async def sitemap_site() -> AsyncIterator[str]:
    """A site whose gzipped /sitemap.xml lists SITEMAP_URLS pages; its start URL."""
    app = web.Application()
    body: dict[str, bytes] = {}

    async def sitemap(request: web.Request) -> web.Response:
        return web.Response(body=body["gz"], content_type="application/octet-stream")

    async def home(request: web.Request) -> web.Response:
        links = "".join(f'<a href="/linked/{n}">{n}</a>' for n in range(2_000))
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    app.router.add_get("/sitemap.xml", sitemap)
    app.router.add_get("/", home)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    origin = f"http://127.0.0.1:{port}"
    locs = "".join(f"<url><loc>{origin}/page/{n}</loc></url>" for n in range(SITEMAP_URLS))
    body["gz"] = gzip.compress(f"<urlset>{locs}</urlset>".encode())
    try:
        yield f"{origin}/"
    finally:
        await runner.cleanup()


async def probed(service: Service, method: str, path: str, **options: Any) -> httpx.Response:
    """The request under the probe; fails past the budget, naming the request. The body is
    read after the probe: joining it is the test client's work, not the API's."""
    request = service.client.build_request(method, path, timeout=120, **options)
    async with probing() as probe:
        response = await service.client.send(request, stream=True)
    await response.aread()
    assert response.status_code == 200, response.text[:500]
    assert probe.worst_blocked < BUDGET_SECONDS, f"{method} {path}: {probe.summary()}"
    return response


async def test_heavy_requests_leave_the_loop_free(
    vector_database_url: str, sitemap_site: str
) -> None:
    settings = Settings(
        _env_file=None,
        database_url=vector_database_url,
        allow_private_networks=True,
        respect_robots=False,
        map_timeout_seconds=120,
        parse_timeout_seconds=60,
        monitor_min_interval_seconds=1,
    )
    async with running("api", settings) as service:
        storage = service.storage
        # FastAPI builds each router's routes at their first request (up to 90 ms for the
        # Firecrawl router's): once a process, not what a request computes. The OpenAPI
        # document builds them all.
        assert (await service.client.get("/openapi.json")).status_code == 200

        mapped = await probed(
            service, "POST", "/api/v1/map", json={"url": sitemap_site, "limit": 100_000}
        )
        assert len(mapped.json()["links"]) == 1 + 2_000 + SITEMAP_URLS
        # Firecrawl's map and the MCP tool take the same path.
        firecrawl = await probed(
            service, "POST", "/v2/map", json={"url": sitemap_site, "limit": 100_000}
        )
        assert len(firecrawl.json()["links"]) == 1 + 2_000 + SITEMAP_URLS
        tool = await probed(
            service,
            "POST",
            "/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "map", "arguments": {"url": sitemap_site, "limit": 100_000}},
            },
            headers={"Accept": "application/json, text/event-stream", "Host": "127.0.0.1:8000"},
        )
        links = tool.json()["result"]["structuredContent"]["links"]
        assert len(links) == 1 + 2_000 + SITEMAP_URLS

        finished = await seeding.finished_jobs(storage, EXPORTED_JOBS, "word " * 2_500)
        exported = await probed(service, "GET", "/api/v1/export?format=jsonl")
        assert exported.text.count("\n") == EXPORTED_JOBS

        await seeding.chunks_of(
            storage,
            finished[:SEARCHED_JOBS],
            [f"part {n} of a page about lateness and event loops " * 20 for n in range(10)],
            model=service.services.search.embedder.model,
            dim=256,
        )
        found = await probed(service, "GET", "/api/v1/search?q=event+loops&k=50&mode=hybrid")
        assert len(found.json()["results"]) == 50

        created = await service.client.post(
            "/api/v1/monitors", json={"url": "http://watched.test/", "interval_seconds": 3600}
        )
        assert created.status_code == 201, created.text
        monitor_id = created.json()["id"]
        await seeding.changes(
            storage,
            UUID(monitor_id),
            diffs=[f"+{n}" * (DIFF_BYTES // 2) for n in range(BIG_CHANGES)],
            start=datetime(2030, 1, 1, tzinfo=UTC),
            owner="",
        )
        page = await probed(service, "GET", f"/api/v1/monitors/{monitor_id}/changes?limit=500")
        assert 1 <= len(page.json()["changes"]) < BIG_CHANGES and page.json()["next_cursor"]
