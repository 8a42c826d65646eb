"""``/mcp`` cannot be made to hold descriptors: streams opened and left idle are refused or
ended, and the API process's count of sockets comes back to where it was.

A real ``taskcrawler serve`` (uvicorn, its sockets) with small bounds: three requests in flight
per key, five in all, two idle seconds."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import orjson
import pytest

from tests.support.processes import ProcessManager
from tests.support.served import Served, serve
from tests.support.target import TargetServer

PER_KEY = 3
TOTAL = 5
IDLE_SECONDS = 2
IDLE_GETS = 60
#: Sockets the process may open for itself meanwhile (a connection its pool opens): fewer than
#: the streams held, so keeping those would show.
SLACK = 2


def sockets(pid: int) -> int:
    """The process's sockets: what a stream holds. Its other descriptors (a database file per
    pool connection, more of them when a loaded machine makes requests overlap) are its own."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except FileNotFoundError:  # closed since the listing
            continue
    return count


async def back_to(pid: int, baseline: int, *, within: float = 30.0) -> int:
    """The process's socket count once it is back to ``baseline`` (plus the slack), or
    the last seen when ``within`` seconds pass first."""
    deadline = time.monotonic() + within
    while (count := sockets(pid)) > baseline + SLACK:
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    return count


class RawRequest:
    """One connection with one request written to it, whose answer is read when asked for."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, served: Served, head: str) -> RawRequest:
        host, port = served.base_url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(head.encode())
        await writer.drain()
        return cls(reader, writer)

    async def status(self) -> int:
        line = await asyncio.wait_for(self.reader.readline(), 60)
        return int(line.split()[1])

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


def request_head(method: str, key: str, *, body_bytes: int = 0) -> str:
    return (
        f"{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"Content-Length: {body_bytes}\r\n\r\n"
    )


def stalled_post(key: str) -> str:
    """A POST that announces a body and sends none of it."""
    return request_head("POST", key, body_bytes=100)


@pytest.fixture
async def served(processes: ProcessManager, tmp_path: Path, sqlite_url: str) -> Served:
    return await serve(
        processes,
        tmp_path,
        sqlite_url,
        TASKCRAWLER_AUTH_REQUIRED="true",
        TASKCRAWLER_MCP_MAX_STREAMS_PER_KEY=str(PER_KEY),
        TASKCRAWLER_MCP_MAX_STREAMS=str(TOTAL),
        TASKCRAWLER_MCP_IDLE_TIMEOUT_SECONDS=str(IDLE_SECONDS),
    )


@pytest.fixture
async def client(served: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=served.base_url, timeout=60) as session:
        yield session


async def tools_list(client: httpx.AsyncClient, key: str) -> httpx.Response:
    return await client.post(
        "/mcp",
        content=orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        headers={
            "Authorization": f"Bearer {key}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        },
    )


async def test_idle_streams_are_refused_or_ended_and_their_descriptors_freed(
    served: Served, client: httpx.AsyncClient
) -> None:
    pid = served.process.popen.pid
    first, second = await served.new_key("first"), await served.new_key("second")
    for key in (first, second):  # the keys' lookups, the MCP session manager: started
        assert (await tools_list(client, key)).status_code == 200
    baseline = sockets(pid)

    # A GET would open a stream that a stateless server never writes to: refused at once.
    gets = [await RawRequest.open(served, request_head("GET", first)) for _ in range(IDLE_GETS)]
    assert [await get.status() for get in gets] == [405] * IDLE_GETS
    for get in gets:
        await get.close()
    assert await back_to(pid, baseline) <= baseline + SLACK

    # POSTs whose body never comes: three of one key held, the fourth refused; two more of
    # another key fill the total, the sixth refused.
    held = [await RawRequest.open(served, stalled_post(first)) for _ in range(PER_KEY)]
    over_key = await RawRequest.open(served, stalled_post(first))
    assert await over_key.status() == 429
    held += [await RawRequest.open(served, stalled_post(second)) for _ in range(TOTAL - PER_KEY)]
    over_total = await RawRequest.open(served, stalled_post(second))
    assert await over_total.status() == 503
    for refused in (over_key, over_total):
        await refused.close()
    # The held ones are ended once idle: their bodies never came.
    assert [await request.status() for request in held] == [408] * TOTAL
    for request in held:
        await request.close()
    assert await back_to(pid, baseline) <= baseline + SLACK

    # Their slots are free again.
    assert (await tools_list(client, first)).status_code == 200


async def test_a_call_that_answers_nothing_in_time_is_ended(
    served: Served, client: httpx.AsyncClient, target: TargetServer
) -> None:
    key = await served.new_key("agent")
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "scrape",
            "arguments": {"url": target.url("/slow?delay=30"), "wait_seconds": 60},
        },
    }
    answered = await client.post(
        "/mcp",
        content=orjson.dumps(call),
        headers={
            "Authorization": f"Bearer {key}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        },
    )
    assert answered.status_code == 504
    assert answered.json() == {"detail": f"no answer within {IDLE_SECONDS} s"}
    assert (await tools_list(client, key)).status_code == 200
