"""``/mcp``: the MCP tools over streamable HTTP, behind the API's keys.

Stateless (every request stands alone, so any API process can answer it) with JSON answers.
A request without a valid key is refused with the API's own 401 before MCP sees it; the tools
then call the API in-process with the caller's key, so they see its jobs alone, under its
limits, exactly as its HTTP calls would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI
from mcp.server import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from taskcrawler.api.deps import _bearer_token
from taskcrawler.client import AsyncTaskCrawler
from taskcrawler.domain.errors import ServiceUnavailable, Unauthenticated
from taskcrawler.mcp_server import build_server
from taskcrawler.service import Services
from taskcrawler.settings import Settings

PATH = "/mcp"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _security(settings: Settings) -> TransportSecuritySettings | None:
    """Without keys, a loopback API refuses other Host and Origin headers: a web page that
    resolves its own name to 127.0.0.1 (DNS rebinding) must not drive the tools."""
    if settings.auth_required or settings.host not in LOOPBACK:
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


class McpEndpoint:
    """The ASGI app of ``/mcp``; :meth:`running` must wrap the API's lifespan."""

    def __init__(self, app: FastAPI, settings: Settings) -> None:
        self.app = app
        self.timeout = settings.fetch_timeout_seconds + 30
        self.manager = StreamableHTTPSessionManager(
            app=build_server(self._client_for),
            stateless=True,
            json_response=True,
            security_settings=_security(settings),
            max_request_body_size=settings.max_request_bytes,
        )
        self._holder: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()
        self._stop = asyncio.Event()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Stops the session manager, if a request started it, when the API stops."""
        try:
            yield
        finally:
            if self._holder is not None:
                self._stop.set()
                await self._holder

    async def _started(self) -> None:
        """The session manager, started by the first request: an API nobody asks for MCP
        runs none of it. It runs in a task of its own, as its task group must be left by
        the task that entered it."""
        async with self._starting:
            if self._holder is not None:
                return
            started = asyncio.Event()

            async def hold() -> None:
                async with self.manager.run():
                    started.set()
                    await self._stop.wait()

            self._holder = asyncio.create_task(hold(), name="mcp-sessions")
            waiting = asyncio.create_task(started.wait())
            await asyncio.wait({self._holder, waiting}, return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            if self._holder.done():
                self._holder.result()  # it failed to start: raise why

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        services: Services = self.app.state.services
        token = _bearer_token(Request(scope).headers.get("authorization"))
        try:
            await services.keys.caller(token)
        except Unauthenticated as exc:
            refused = JSONResponse(
                {"detail": str(exc)}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
            await refused(scope, receive, send)
            return
        except ServiceUnavailable as exc:
            await JSONResponse({"detail": str(exc)}, status_code=503)(scope, receive, send)
            return
        await self._started()
        await self.manager.handle_request(scope, receive, send)

    @asynccontextmanager
    async def _client_for(
        self, ctx: ServerRequestContext[Any, Any]
    ) -> AsyncIterator[AsyncTaskCrawler]:
        headers = getattr(ctx.request, "headers", None)
        token = _bearer_token(headers.get("authorization") if headers is not None else None)
        async with AsyncTaskCrawler(
            "http://taskcrawler.internal",
            token or None,
            timeout=self.timeout,
            transport=httpx.ASGITransport(app=self.app),
        ) as tc:
            yield tc
