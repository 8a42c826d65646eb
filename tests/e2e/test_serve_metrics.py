"""``taskcrawler serve`` as a real process, in both modes: one scrape of the API's ``/metrics``
shows the whole service, the worker process's series included."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.test_serve_signals import _scrape, _worker_process
from tests.support.processes import ProcessManager, free_port
from tests.support.target import TargetServer


@pytest.fixture(params=["embedded", "production"])
def serve_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    env = {"TASKCRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TASKCRAWLER_RESPECT_ROBOTS": "false"}
    if request.param == "embedded":
        return env | {"TASKCRAWLER_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/s.db"}
    return env | {
        "TASKCRAWLER_DATABASE_URL": request.getfixturevalue("pg_url"),
        "TASKCRAWLER_REDIS_URL": request.getfixturevalue("redis_url"),
        "TASKCRAWLER_REDIS_PREFIX": request.getfixturevalue("redis_prefix"),
    }


async def _samples(base: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    async with aiohttp.ClientSession() as session, session.get(f"{base}/metrics") as response:
        assert response.status == 200
        text = await response.text()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_the_api_metrics_of_serve_include_its_worker_process(
    processes: ProcessManager, serve_env: dict[str, str], target: TargetServer
) -> None:
    port = free_port()
    server = processes.start(["serve", "--port", str(port)], serve_env)
    base = f"http://127.0.0.1:{port}"
    await server.wait_for_http(f"{base}/healthz")
    worker = await _worker_process(server.pid)

    job = await _scrape(base, target.url("/page/1"))
    assert job["status"] == "COMPLETED", job

    samples = await _samples(base)
    none: frozenset[tuple[str, str]] = frozenset()
    assert samples[("taskcrawler_jobs_created_total", none)] == 1.0  # the API's
    assert samples[("taskcrawler_jobs_completed_total", none)] == 1.0  # the worker process's
    assert samples[("taskcrawler_jobs_claimed_total", none)] >= 1.0
    assert samples[("taskcrawler_fetch_duration_seconds_count", none)] >= 1.0
    # Both processes' CPU, told apart by a label.
    assert ("process_cpu_seconds_total", none) in samples
    assert ("process_cpu_seconds_total", frozenset({("process", "worker")})) in samples
    # The queue's depth once, the API's.
    assert sum(name == "taskcrawler_queue_depth" for name, _ in samples) == 1

    # While the worker process is down, the API still answers with its own series.
    os.kill(worker, signal.SIGKILL)
    samples = await _samples(base)
    assert samples[("taskcrawler_jobs_created_total", none)] == 1.0
    # The next worker process is read in its turn: a fresh registry.
    await _worker_process(server.pid, other_than=worker)
    deadline = time.monotonic() + 30
    while ("taskcrawler_jobs_completed_total", none) not in (samples := await _samples(base)):
        assert time.monotonic() < deadline, "the new worker process's metrics never appeared"
        await asyncio.sleep(0.1)
    assert samples[("taskcrawler_jobs_completed_total", none)] == 0.0

    server.send_signal(signal.SIGTERM)
    assert await server.wait(within=30) == 0, server.output()[-3000:]
