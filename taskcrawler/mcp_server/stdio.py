"""``taskcrawler mcp``: the tools over standard input and output, for an agent that starts the
server itself (Claude Desktop, Cursor, an Agents SDK), talking to a running TaskCrawler API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server

from taskcrawler.client import AsyncTaskCrawler
from taskcrawler.mcp_server.tools import build_server


async def serve_stdio(
    base_url: str, api_key: str | None, *, request_timeout: float = 120.0
) -> None:
    """Serve until the client closes standard input."""
    async with AsyncTaskCrawler(base_url, api_key, timeout=request_timeout) as tc:

        @asynccontextmanager
        async def client_for(
            ctx: ServerRequestContext[Any, Any],
        ) -> AsyncIterator[AsyncTaskCrawler]:
            yield tc

        server = build_server(client_for)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
