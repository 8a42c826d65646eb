"""A crawl with ``render`` follows links that only a browser sees: a local site whose pages
build their links in JavaScript, crawled with real chromium (and, for contrast, without)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import web

from tests.browser.conftest import chromium_path
from tests.e2e.harness import Service, fast_settings, running
from tests.support.services import free_port

PATIENCE_SECONDS = 120.0  # a bound for a hang, not a speed claim

#: Each page's links, written into the page by /app.js: none is in the HTML served.
LINKS = {"/": ["/a", "/b"], "/a": ["/c"], "/b": [], "/c": ["/"]}

SHELL = """<!doctype html><html><head><title>Shop {path}</title></head>
<body><div id="root"></div><script src="/app.js"></script></body></html>"""

APP = """
const links = %s;
const root = document.getElementById("root");
const heading = document.createElement("h1");
heading.textContent = "The page at " + location.pathname;
root.append(heading);
for (const href of links[location.pathname] || []) {
  const link = document.createElement("a");
  link.href = href;
  link.textContent = "Go to " + href;
  root.append(link);
}
"""


@pytest.fixture
async def js_site() -> AsyncIterator[str]:
    async def page(request: web.Request) -> web.Response:
        return web.Response(text=SHELL.format(path=request.path), content_type="text/html")

    async def script(request: web.Request) -> web.Response:
        return web.Response(text=APP % json.dumps(LINKS), content_type="application/javascript")

    app = web.Application()
    app.add_routes([web.get(path, page) for path in LINKS] + [web.get("/app.js", script)])
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def crawl(service: Service, body: dict[str, Any]) -> set[str]:
    """The paths of the finished crawl's COMPLETED pages."""
    started = await service.client.post("/api/v1/crawls", json=body)
    assert started.status_code == 201, started.text
    crawl_id = started.json()["id"]
    assert started.json()["render"] == body.get("render", "never")
    async with asyncio.timeout(PATIENCE_SECONDS):
        while True:
            shown = (await service.client.get(f"/api/v1/crawls/{crawl_id}")).json()
            if shown["status"] != "RUNNING" and shown["pending"] == 0:
                break
            await asyncio.sleep(0.1)
    jobs = (await service.client.get(f"/api/v1/crawls/{crawl_id}/jobs")).json()["jobs"]
    assert {job["render"] for job in jobs} == {body.get("render", "never")}
    return {urlsplit(job["url"]).path for job in jobs if job["status"] == "COMPLETED"}


async def test_a_rendered_crawl_follows_links_built_in_javascript(
    js_site: str, sqlite_url: str
) -> None:
    settings = fast_settings(
        database_url=sqlite_url,
        browser=chromium_path(),
        browser_concurrency=2,
        render_timeout_seconds=20.0,
    )
    async with running("embedded", settings) as service:
        common = {"url": js_site + "/", "sitemap": "skip", "formats": ["links"]}
        fetched_only = await crawl(service, common)
        rendered = await crawl(service, {**common, "render": "always"})
    assert fetched_only == {"/"}  # the served HTML has no link
    assert rendered == set(LINKS)
