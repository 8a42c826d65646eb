"""``taskcrawler serve`` and ``api`` as real processes, stopped the way a supervisor stops them."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import aiohttp

from tests.support.processes import ProcessManager, free_port
from tests.support.target import TargetServer

#: Well over the size parsed inline or in a thread: the page goes to the parse child process.
BIG_PAGE_BYTES = 2 * 1024 * 1024


async def _scrape(base: str, url: str, *, within: float = 30.0) -> dict[str, object]:
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{base}/api/v1/jobs", json={"url": url}) as response:
            assert response.status == 201, await response.text()
            job_id = (await response.json())["id"]
        deadline = time.monotonic() + within
        while True:
            async with session.get(f"{base}/api/v1/jobs/{job_id}") as response:
                job: dict[str, object] = await response.json()
            if job["status"] in ("COMPLETED", "FAILED"):
                return job
            assert time.monotonic() < deadline, job
            await asyncio.sleep(0.1)


async def _group_gone(pgid: int, *, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < deadline, f"processes of group {pgid} still running"
        await asyncio.sleep(0.05)


async def test_serve_stops_on_sigterm_without_leaking_semaphores(
    processes: ProcessManager, tmp_path: Path, target: TargetServer
) -> None:
    port = free_port()
    server = processes.start(
        ["serve", "--port", str(port)],
        {
            "TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/s.db",
            "TASKCRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
            "TASKCRAWLER_RESPECT_ROBOTS": "false",
        },
    )
    base = f"http://127.0.0.1:{port}"
    await server.wait_for_http(f"{base}/healthz")
    job = await _scrape(base, target.url(f"/big?bytes={BIG_PAGE_BYTES}"))
    assert job["status"] == "COMPLETED", job

    server.send_signal(signal.SIGTERM)
    code = await server.wait(within=30)
    # The resource tracker (a child in the server's process group) reports leaks when the server
    # is gone: read the output once the whole group has exited.
    await _group_gone(server.pid)
    output = server.output()
    # The parse child's queues hold named semaphores: leaked, the resource tracker says so.
    assert "resource_tracker" not in output, output[-3000:]
    assert "leaked" not in output, output[-3000:]
    assert "Application shutdown complete" in output
    assert code == 0, output[-3000:]


async def test_api_exits_0_after_a_graceful_sigterm(
    processes: ProcessManager, tmp_path: Path
) -> None:
    port = free_port()
    env = {"TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/a.db"}
    assert await processes.start(["migrate"], env).wait(within=60) == 0
    api = processes.start(["api", "--port", str(port)], env)
    await api.wait_for_http(f"http://127.0.0.1:{port}/healthz")
    api.send_signal(signal.SIGTERM)
    assert await api.wait(within=30) == 0
    assert "Application shutdown complete" in api.output()
