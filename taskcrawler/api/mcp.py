"""``/mcp``: the MCP tools over streamable HTTP, behind the API's keys.

Stateless (every request stands alone, so any API process can answer it) with JSON answers.
A request without a valid key is refused with the API's own 401 before MCP sees it; the tools
then call the API in-process with the caller's key, so they see its jobs alone, under its
limits, exactly as its HTTP calls would.

Every request holds a connection, and so a file descriptor, while it is answered; so they are
bounded before MCP sees them:

* ``GET`` (the stream of a server's own messages) is a ``405``: a stateless server never sends
  one, and the stream would only hold its descriptor (the specification allows the ``405``,
  and clients then go without the stream);
* at most ``mcp_max_streams_per_key`` requests of one key in flight (a ``429`` past it) and
  ``mcp_max_streams`` in all (a ``503``), both with ``Retry-After``;
* a request that has sent nothing for ``mcp_idle_timeout_seconds`` is ended: a ``408`` when
  its body had not arrived by then, a ``504`` when its answer had not.

The MCP SDK is imported by the first request, not with the API: it costs about a second of
CPU (hundreds of pydantic models), which every API process, ``taskcrawler serve`` and restart
would pay at start-up whether or not anyone asks for MCP.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import httpx
from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from taskcrawler.api.deps import _bearer_token, client_address
from taskcrawler.client import AsyncTaskCrawler
from taskcrawler.domain.errors import LimitExceeded, ServiceUnavailable, Unauthenticated
from taskcrawler.domain.keys import Caller
from taskcrawler.service import Services
from taskcrawler.settings import Settings

if TYPE_CHECKING:
    from mcp.server import ServerRequestContext
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

PATH = "/mcp"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


_NO_STREAM = JSONResponse(
    {"detail": "this MCP endpoint is stateless: it has no stream of its own messages; POST"},
    status_code=405,
    headers={"Allow": "POST"},
)


def _security(settings: Settings) -> TransportSecuritySettings | None:
    """Without keys, a loopback API refuses other Host and Origin headers: a web page that
    resolves its own name to 127.0.0.1 (DNS rebinding) must not drive the tools."""
    if settings.auth_required or settings.host not in LOOPBACK:
        return None
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


class StreamSlots:
    """Requests in flight: at most ``per_key`` of one owner's and ``total`` in all."""

    def __init__(self, *, total: int, per_key: int) -> None:
        self.total = total
        self.per_key = per_key
        self.held: Counter[str] = Counter()

    @property
    def in_flight(self) -> int:
        return self.held.total()

    def refusal(self, owner: str) -> JSONResponse | None:
        """None when ``owner`` may open one more (then it holds it until :meth:`release`)."""
        if self.held[owner] >= self.per_key:
            return _busy(429, f"over {self.per_key} MCP requests of this API key in flight")
        if self.in_flight >= self.total:
            return _busy(503, f"over {self.total} MCP requests in flight: try again shortly")
        self.held[owner] += 1
        return None

    def release(self, owner: str) -> None:
        self.held[owner] -= 1
        if self.held[owner] <= 0:
            del self.held[owner]


def _busy(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers={"Retry-After": "1"})


class McpEndpoint:
    """The ASGI app of ``/mcp``; :meth:`running` must wrap the API's lifespan."""

    def __init__(self, app: FastAPI, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.timeout = settings.fetch_timeout_seconds + 30
        self.manager: StreamableHTTPSessionManager | None = None
        self.slots = StreamSlots(
            total=settings.mcp_max_streams, per_key=settings.mcp_max_streams_per_key
        )
        self.idle_timeout = settings.mcp_idle_timeout_seconds
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
            manager = self.manager = self._manager()
            started = asyncio.Event()

            async def hold() -> None:
                async with manager.run():
                    started.set()
                    await self._stop.wait()

            self._holder = asyncio.create_task(hold(), name="mcp-sessions")
            waiting = asyncio.create_task(started.wait())
            await asyncio.wait({self._holder, waiting}, return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            if self._holder.done():
                self._holder.result()  # it failed to start: raise why

    def _manager(self) -> StreamableHTTPSessionManager:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from taskcrawler.mcp_server import build_server

        return StreamableHTTPSessionManager(
            app=build_server(self._client_for),
            stateless=True,
            json_response=True,
            security_settings=_security(self.settings),
            max_request_body_size=self.settings.max_request_bytes,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller = await self._caller(scope, receive, send)
        if caller is None:
            return
        if scope["method"] == "GET":
            await _NO_STREAM(scope, receive, send)
            return
        refused = self.slots.refusal(caller.owner)
        if refused is not None:
            await refused(scope, receive, send)
            return
        try:
            await self._started()
            await self._answer_within_idle_timeout(scope, receive, send)
        finally:
            self.slots.release(caller.owner)

    async def _caller(self, scope: Scope, receive: Receive, send: Send) -> Caller | None:
        """The request's caller; None once it was answered with why it has none."""
        services: Services = self.app.state.services
        request = Request(scope)
        token = _bearer_token(request.headers.get("authorization"))
        try:
            return await services.keys.caller(token, client_address(request))
        except LimitExceeded as exc:
            retry_after = str(max(1, math.ceil(exc.retry_after)))
            refused = JSONResponse(
                {"detail": str(exc)}, status_code=429, headers={"Retry-After": retry_after}
            )
            await refused(scope, receive, send)
        except Unauthenticated as exc:
            refused = JSONResponse(
                {"detail": str(exc)}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
            await refused(scope, receive, send)
        except ServiceUnavailable as exc:
            await JSONResponse({"detail": str(exc)}, status_code=503)(scope, receive, send)
        return None

    async def _answer_within_idle_timeout(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The SDK's answer, ended once it has sent nothing for ``idle_timeout`` seconds.

        Once the body is read, the client's disconnect is listened for here: the SDK (stateless,
        JSON answers) never reads it, so a tool waiting on a job would go on polling for
        nobody. The tools' client (:meth:`_client_for`) stops calling the API once it came."""
        loop = asyncio.get_running_loop()
        started = False
        body_read = False
        gone = scope[CLIENT_GONE] = asyncio.Event()
        after_body: asyncio.Task[Message] | None = None

        async def reading() -> Message:
            nonlocal body_read, after_body
            if after_body is not None:
                # The SDK asks again (it never has, in JSON mode): the listener's message.
                return await asyncio.shield(after_body)
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                body_read = True
                after_body = asyncio.create_task(_disconnect(receive, gone))
            return message

        try:
            async with asyncio.timeout(self.idle_timeout) as idle:

                async def sending(message: Message) -> None:
                    nonlocal started
                    started = True
                    await send(message)
                    idle.reschedule(loop.time() + self.idle_timeout)

                assert self.manager is not None  # made by _started
                await self.manager.handle_request(scope, reading, sending)
        except TimeoutError:
            if not started:
                status, what = (504, "answer") if body_read else (408, "request body")
                detail = f"no {what} within {self.idle_timeout:g} s"
                await JSONResponse({"detail": detail}, status_code=status)(scope, receive, send)
        finally:
            if after_body is not None:
                after_body.cancel()

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
            # An error of the app is answered as any client sees it (a 500 with no details),
            # not raised into the tool, where its text (SQL, say) would reach the agent.
            transport=_UntilGone(
                httpx.ASGITransport(app=self.app, raise_app_exceptions=False),
                _gone_of(ctx),
            ),
        ) as tc:
            yield tc


#: The scope's event set once the client of an MCP request has gone (its connection closed).
CLIENT_GONE = "taskcrawler.mcp_client_gone"


class McpClientGone(Exception):
    """The MCP client left: a tool's further calls to the API would answer nobody."""


async def _disconnect(receive: Receive, gone: asyncio.Event) -> Message:
    """The request's next message once its body is read: its disconnect (``gone`` set)."""
    message = await receive()
    if message["type"] == "http.disconnect":
        gone.set()
    return message


def _gone_of(ctx: ServerRequestContext[Any, Any]) -> asyncio.Event:
    """The event :meth:`McpEndpoint._answer_within_idle_timeout` put in the request's scope
    (the SDK hands the tool the request it was given); a fresh one, never set, elsewhere."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    gone = scope.get(CLIENT_GONE) if isinstance(scope, dict) else None
    return gone if isinstance(gone, asyncio.Event) else asyncio.Event()


class _UntilGone(httpx.AsyncBaseTransport):
    """``inner``, refusing every request once ``gone`` is set: the tool ends at its next call
    (a poll of its job, say) rather than at its own deadline."""

    def __init__(self, inner: httpx.AsyncBaseTransport, gone: asyncio.Event) -> None:
        self.inner = inner
        self.gone = gone

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.gone.is_set():
            raise McpClientGone
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
