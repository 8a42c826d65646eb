"""``taskcrawler serve`` and ``api`` as real processes, stopped the way a supervisor stops them;
``serve``'s worker process killed the way a crash kills it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import aiohttp

from tests.support.processes import ManagedProcess, ProcessManager, free_port
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


def _children(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in children]


def _worker_of(serve_pid: int) -> int | None:
    """The pid of ``serve``'s worker process, None while there is none."""
    for child in _children(serve_pid):
        try:
            if b"taskcrawler.cli.embedded_worker" in Path(f"/proc/{child}/cmdline").read_bytes():
                return child
        except OSError:
            continue
    return None


async def _worker_process(serve_pid: int, *, other_than: int = 0, within: float = 60.0) -> int:
    deadline = time.monotonic() + within
    while (pid := _worker_of(serve_pid)) is None or pid == other_than:
        assert time.monotonic() < deadline, "serve started no worker process"
        await asyncio.sleep(0.05)
    return pid


async def _submit(session: aiohttp.ClientSession, base: str, url: str) -> str:
    async with session.post(f"{base}/api/v1/jobs", json={"url": url}) as response:
        assert response.status == 201, await response.text()
        job_id: str = (await response.json())["id"]
        return job_id


async def _job(session: aiohttp.ClientSession, base: str, job_id: str) -> dict[str, object]:
    async with session.get(f"{base}/api/v1/jobs/{job_id}") as response:
        job: dict[str, object] = await response.json()
        return job


async def _all_final(
    session: aiohttp.ClientSession, base: str, ids: list[str], *, within: float = 60.0
) -> list[dict[str, object]]:
    deadline = time.monotonic() + within
    while True:
        jobs = [await _job(session, base, job_id) for job_id in ids]
        if all(job["status"] in ("COMPLETED", "FAILED") for job in jobs):
            return jobs
        assert time.monotonic() < deadline, jobs
        await asyncio.sleep(0.1)


def _serve_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/s.db",
        "TASKCRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
        "TASKCRAWLER_RESPECT_ROBOTS": "false",
        **extra,
    }


async def _serve(
    processes: ProcessManager, tmp_path: Path, **extra_env: str
) -> tuple[ManagedProcess, str, int]:
    """``serve`` on a free port over a SQLite file in ``tmp_path``, once it answers and has
    started its worker process: the process, its base URL and the worker process's pid."""
    port = free_port()
    server = processes.start(["serve", "--port", str(port)], _serve_env(tmp_path, **extra_env))
    base = f"http://127.0.0.1:{port}"
    await server.wait_for_http(f"{base}/healthz")
    return server, base, await _worker_process(server.pid)


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
    server, base, worker = await _serve(processes, tmp_path)
    job = await _scrape(base, target.url(f"/big?bytes={BIG_PAGE_BYTES}"))
    assert job["status"] == "COMPLETED", job
    assert _worker_of(server.pid) == worker  # the API process did not do the job itself

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


async def test_serve_restarts_its_killed_worker_process_and_loses_no_job(
    processes: ProcessManager, tmp_path: Path, target: TargetServer
) -> None:
    server, base, first = await _serve(
        processes,
        tmp_path,
        # A killed worker's leases expire quickly, and its sweeper looks often.
        TASKCRAWLER_LEASE_SECONDS="2",
        TASKCRAWLER_SWEEP_INTERVAL_SECONDS="0.2",
        TASKCRAWLER_HOST_CONCURRENCY="10",
    )
    async with aiohttp.ClientSession() as session:
        ids = [await _submit(session, base, target.url(f"/slow?delay=2&n={n}")) for n in range(4)]
        deadline = time.monotonic() + 30
        while "PROCESSING" not in [(await _job(session, base, i))["status"] for i in ids]:
            assert time.monotonic() < deadline, "no job started"
            await asyncio.sleep(0.05)

        os.kill(first, signal.SIGKILL)
        # Submitted while no worker process may be running: its id has nowhere to go.
        ids.append(await _submit(session, base, target.url("/page/7")))
        second = await _worker_process(server.pid, other_than=first)
        ids.append(await _submit(session, base, target.url("/page/8")))

        jobs = await _all_final(session, base, ids)
    assert [job["status"] for job in jobs] == ["COMPLETED"] * len(ids), jobs
    assert _worker_of(server.pid) == second
    assert "exited with signal SIGKILL" in server.output()

    server.send_signal(signal.SIGTERM)
    assert await server.wait(within=30) == 0, server.output()[-3000:]
    await _group_gone(server.pid)


async def test_serve_stops_its_worker_process_gracefully_on_sigterm(
    processes: ProcessManager, tmp_path: Path, target: TargetServer
) -> None:
    """The worker process gets the grace period for the job it is doing, which completes."""
    server, base, _ = await _serve(processes, tmp_path, TASKCRAWLER_SHUTDOWN_GRACE_SECONDS="10")
    async with aiohttp.ClientSession() as session:
        job_id = await _submit(session, base, target.url("/slow?delay=1.5"))
        deadline = time.monotonic() + 30
        while (await _job(session, base, job_id))["status"] != "PROCESSING":
            assert time.monotonic() < deadline, "the job never started"
            await asyncio.sleep(0.02)
    server.send_signal(signal.SIGTERM)
    assert await server.wait(within=40) == 0, server.output()[-3000:]
    await _group_gone(server.pid)
    output = server.output()
    assert "worker stopped: WorkerStats(claimed=1, completed=1" in output, output[-3000:]
    assert "exited with" not in output  # stopped, not restarted


async def test_the_worker_process_stops_when_serve_is_killed(
    processes: ProcessManager, tmp_path: Path
) -> None:
    server, _, worker = await _serve(processes, tmp_path)
    server.send_signal(signal.SIGKILL)
    await server.wait(within=10)
    deadline = time.monotonic() + 30
    while _state(worker) not in ("Z", "gone"):
        assert time.monotonic() < deadline, "the worker process outlived serve"
        await asyncio.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


async def test_a_group_stop_while_a_request_waits_starts_no_worker_process(
    processes: ProcessManager, tmp_path: Path, target: TargetServer
) -> None:
    """A process manager stopping the group signals ``serve`` and its worker process together;
    a Firecrawl scrape waiting for its page holds uvicorn's own stop (which lets requests end
    first) well past the worker process's: no other is started meanwhile, none is called a
    failure."""
    server, base, _ = await _serve(processes, tmp_path, TASKCRAWLER_SHUTDOWN_GRACE_SECONDS="1")
    body = {"url": target.url("/slow?delay=20"), "timeout": 5000}
    async with aiohttp.ClientSession() as session:
        scrape = asyncio.create_task(session.post(f"{base}/v1/scrape", json=body))
        await asyncio.sleep(1.0)  # the request waits for its job
        os.killpg(server.pid, signal.SIGTERM)
        assert await server.wait(within=40) == 0, server.output()[-3000:]
        with contextlib.suppress(aiohttp.ClientError):
            (await scrape).release()
    await _group_gone(server.pid)
    output = server.output()
    assert "exited with" not in output, output[-3000:]
    assert output.count("worker process") == 1, output[-3000:]  # started, and no other
