"""The MCP tools through the official ``mcp`` client: over stdio (``taskcrawler mcp`` against a
running server) and over streamable HTTP (``/mcp`` on the API, behind its keys)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import pytest

from tests.support.processes import ProcessManager, clean_env
from tests.support.served import Served, serve, served_on_sqlite
from tests.support.target import TargetServer

# The MCP SDK (and the server's tools, built on it) is imported by the functions that use it:
# it costs about 0.7 s of CPU to import, and every test process imports this module to collect it.
if TYPE_CHECKING:
    from mcp import Client


def stdio(served: Served, key: str | None = None) -> Client:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = clean_env({"TASKCRAWLER_API_KEY": key} if key else {})
    command = [sys.executable, "-m", "taskcrawler", "mcp", "--api", served.base_url]
    return Client(StdioServerParameters(command=command[0], args=command[1:], env=env))


def http(served: Served, key: str | None) -> Client:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    session = httpx2.AsyncClient(headers=headers, timeout=60)
    return Client(streamable_http_client(f"{served.base_url}/mcp", http_client=session))


async def exercise_every_tool(client: Client, target: TargetServer, via: str, page: int) -> None:
    """Every tool, on pages of this transport's own (``via`` in their query, ``page`` the
    number of the one chunked and searched): the two transports' tests share a server, and
    each must create, grow and find its own jobs."""
    from taskcrawler.mcp_server.tools import (
        TOOLS,
        CrawlArgs,
        CrawlStatusArgs,
        GetJobArgs,
        MapArgs,
        ScrapeArgs,
        SearchArgs,
    )

    listed = await client.list_tools()
    schemas = {tool.name: tool.input_schema for tool in listed.tools}
    assert schemas == {
        "scrape": ScrapeArgs.model_json_schema(),
        "map": MapArgs.model_json_schema(),
        "get_job": GetJobArgs.model_json_schema(),
        "crawl": CrawlArgs.model_json_schema(),
        "crawl_status": CrawlStatusArgs.model_json_schema(),
        "search": SearchArgs.model_json_schema(),
    }
    assert set(TOOLS) == set(schemas)

    scraped = await client.call_tool(
        "scrape", {"url": target.url(f"/title/Agent?via={via}"), "wait_seconds": 30}
    )
    assert not scraped.is_error, scraped.content
    found: dict[str, Any] = scraped.structured_content
    assert found["job"]["status"] == "COMPLETED" and found["job"]["scraped_title"] == "Agent"
    assert "Agent" in found["markdown"]
    assert "Agent" in scraped.content[0].text

    job = await client.call_tool("get_job", {"job_id": found["job"]["id"], "content": "markdown"})
    assert not job.is_error and job.structured_content["markdown"] == found["markdown"]
    # Asked again for a format it lacks, the page's job gains it; the crawl tool's pages have
    # their Markdown by default too.
    again = await client.call_tool(
        "scrape",
        {"url": target.url(f"/title/Agent?via={via}"), "formats": ["text"], "wait_seconds": 30},
    )
    grown = again.structured_content["job"]
    assert grown["id"] == found["job"]["id"] and "text" in grown["formats"]
    assert grown["status"] == "COMPLETED" and "Agent" in again.structured_content["markdown"]
    text = await client.call_tool("get_job", {"job_id": grown["id"], "content": "text"})
    assert "Agent" in text.structured_content["text"]
    # Every argument the tool's schema accepts reaches the job.
    rendered = await client.call_tool(
        "scrape",
        {
            "url": target.url(f"/title/Shell?via={via}"),
            "render": "auto",
            "render_options": {"wait_seconds": 1},
            "options": {"only_main_content": False},
            "wait_seconds": 30,
        },
    )
    assert not rendered.is_error, rendered.content
    asked = rendered.structured_content["job"]
    assert asked["render"] == "auto" and asked["render_options"]["wait_seconds"] == 1
    assert CrawlArgs(url=target.url("/")).formats == ["metadata", "markdown"]
    assert '["metadata", "markdown"]' in schemas["crawl"]["properties"]["formats"]["description"]

    mapped = await client.call_tool("map", {"url": target.url("/page/1"), "sitemap": "skip"})
    assert not mapped.is_error and target.url("/page/2") in mapped.structured_content["links"]

    # Refusals are tool errors that say what is wrong, never a crash of the server.
    bad = await client.call_tool("scrape", {"url": "ftp://example.com/"})
    assert bad.is_error and "url" in bad.content[0].text
    unknown = await client.call_tool("get_job", {"job_id": str(uuid.uuid4())})
    assert unknown.is_error and unknown.content[0].text.startswith("404 Not Found")
    extra = await client.call_tool("map", {"url": target.url("/"), "frobnicate": 1})
    assert extra.is_error and "frobnicate" in extra.content[0].text
    nothing = await client.call_tool("frobnicate", {})
    assert nothing.is_error and "scrape" in nothing.content[0].text
    no_url = await client.call_tool("crawl", {})
    assert no_url.is_error and "url" in no_url.content[0].text

    started = await client.call_tool(
        "crawl", {"url": target.url("/page/0"), "max_depth": 2, "sitemap": "skip"}
    )
    assert not started.is_error, started.content
    crawl_id = started.structured_content["crawl"]["id"]
    assert started.structured_content["crawl"]["status"] == "RUNNING"
    with anyio.fail_after(60):
        while True:
            status = await client.call_tool("crawl_status", {"crawl_id": crawl_id, "pages": 2})
            assert not status.is_error, status.content
            if status.structured_content["crawl"]["status"] != "RUNNING":
                break
            await anyio.sleep(0.2)
    assert status.structured_content["crawl"]["status"] == "COMPLETED"
    assert len(status.structured_content["pages"]) == 2
    rest = await client.call_tool(
        "crawl_status",
        {"crawl_id": crawl_id, "cursor": status.structured_content["next_cursor"]},
    )
    urls = {p["url"] for p in status.structured_content["pages"] + rest.structured_content["pages"]}
    assert urls == {target.url(f"/page/{n}") for n in range(3)}
    hidden = await client.call_tool("crawl_status", {"crawl_id": str(uuid.uuid4())})
    assert hidden.is_error and "404" in hidden.content[0].text

    chunked = await client.call_tool(
        "scrape",
        {"url": target.url(f"/page/{page}"), "formats": ["markdown", "chunks"], "wait_seconds": 60},
    )
    assert chunked.structured_content["job"]["status"] == "COMPLETED", chunked.content
    searched = await client.call_tool("search", {"q": f"page {page}", "k": 1, "mode": "keyword"})
    assert not searched.is_error, searched.content
    [hit] = searched.structured_content["results"]
    assert hit["url"] == target.url(f"/page/{page}") and f"page {page}" in hit["text"]
    # The crawl's pages asked for no chunks: nothing of them to find.
    within = await client.call_tool("search", {"q": "page", "crawl_id": crawl_id})
    assert not within.is_error and within.structured_content["results"] == []
    bad_k = await client.call_tool("search", {"q": "Agent", "k": 0})
    assert bad_k.is_error and "k" in bad_k.content[0].text


@pytest.fixture(scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path
) -> AsyncIterator[Served]:
    """One server, no keys, for both transports' tests (each on pages of its own)."""
    async with served_on_sqlite(
        tmp_path_factory, _sqlite_template, TASKCRAWLER_MAX_RETRIES="0"
    ) as served:
        yield served


async def test_stdio_lists_and_calls_every_tool(served: Served, target: TargetServer) -> None:
    async with stdio(served) as client:
        await exercise_every_tool(client, target, "stdio", 7)


async def test_streamable_http_lists_and_calls_every_tool(
    served: Served, target: TargetServer
) -> None:
    async with http(served, None) as client:
        await exercise_every_tool(client, target, "http", 17)


async def test_streamable_http_needs_a_key_when_the_api_does(
    processes: ProcessManager, tmp_path: Path, sqlite_url: str, target: TargetServer
) -> None:
    served = await serve(processes, tmp_path, sqlite_url, TASKCRAWLER_AUTH_REQUIRED="true")
    async with httpx2.AsyncClient() as plain:
        refused = await plain.post(
            f"{served.base_url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
        )
    assert refused.status_code == 401 and "API key" in refused.json()["detail"]

    key = await served.new_key("agent")
    async with http(served, key) as client:
        scraped = await client.call_tool("scrape", {"url": target.url("/title/Keyed")})
        assert scraped.structured_content["job"]["scraped_title"] == "Keyed"
    # The job is the key's own: another key does not see it.
    other = await served.new_key("other")
    async with http(served, other) as client:
        job_id = scraped.structured_content["job"]["id"]
        hidden = await client.call_tool("get_job", {"job_id": job_id})
        assert hidden.is_error and "404" in hidden.content[0].text
