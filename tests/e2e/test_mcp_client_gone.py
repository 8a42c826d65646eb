"""An MCP client that leaves while ``scrape`` waits for its page: the tool stops reading its
job, rather than polling for nobody until its ``wait_seconds``. The MCP SDK (stateless, JSON
answers) never reads the client's disconnect, so ``/mcp`` listens for it.

TaskCrawler served over TCP (uvicorn, so the client's leaving is a closed connection) with no
worker: the job stays queued, and the tool would wait its whole ``wait_seconds``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import httpx
import orjson
import pytest
import uvicorn
from fastapi import FastAPI

from taskcrawler.api import create_app
from taskcrawler.api.mcp import McpEndpoint
from taskcrawler.domain.jobs import Job
from taskcrawler.domain.keys import Caller
from tests.e2e.harness import fast_settings
from tests.support.servers import free_port

WAIT_SECONDS = 120


@dataclass
class Served:
    app: FastAPI
    base_url: str
    #: When each read of a job happened (time.monotonic()).
    reads: list[float] = field(default_factory=list)

    @property
    def mcp(self) -> McpEndpoint:
        (endpoint,) = [
            r.endpoint for r in self.app.router.routes if getattr(r, "path", "") == "/mcp"
        ]  # type: ignore[attr-defined]
        assert isinstance(endpoint, McpEndpoint)
        return endpoint


@pytest.fixture
async def served(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Served]:
    app = create_app(fast_settings(database_url=sqlite_url))
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not serving.done(), "the API stopped while starting"
            await asyncio.sleep(0.05)
        served = Served(app, f"http://127.0.0.1:{port}")
        jobs = app.state.services.jobs
        get = jobs.get

        async def counted(caller: Caller, job_id: UUID) -> Job:
            served.reads.append(time.monotonic())
            job: Job = await get(caller, job_id)
            return job

        monkeypatch.setattr(jobs, "get", counted)
        yield served
    finally:
        server.should_exit = True
        await serving


def _scrape_call() -> bytes:
    arguments: dict[str, Any] = {"url": "http://gone.invalid/", "wait_seconds": WAIT_SECONDS}
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "scrape", "arguments": arguments},
        }
    )


async def test_a_scrape_stops_polling_once_its_client_has_gone(served: Served) -> None:
    async def call() -> httpx.Response:
        async with httpx.AsyncClient(base_url=served.base_url, timeout=WAIT_SECONDS * 2) as http:
            return await http.post(
                "/mcp",
                content=_scrape_call(),
                headers={
                    "Accept": "application/json, text/event-stream",
                    "Content-Type": "application/json",
                },
            )

    calling = asyncio.create_task(call())
    while len(served.reads) < 3:  # the tool is waiting, polling its job
        assert not calling.done(), calling.result().text
        await asyncio.sleep(0.05)
    calling.cancel()  # the client leaves: its connection is closed
    with pytest.raises(asyncio.CancelledError):
        await calling
    left = time.monotonic()

    # The request ends (its slot freed) once the tool does; without the fix, at WAIT_SECONDS.
    for _ in range(WAIT_SECONDS * 5):  # up to a quarter of WAIT_SECONDS
        if not served.mcp.slots.in_flight:
            break
        await asyncio.sleep(0.05)
    after = [t for t in served.reads if t > left]
    assert len(after) <= 1, f"{len(after)} reads of the job after the client left"
    assert served.mcp.slots.in_flight == 0, "the tool still runs for a client that has gone"
