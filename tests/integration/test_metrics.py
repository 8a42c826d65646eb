"""Metrics move as jobs run: the API's /metrics (with the worker's under ``serve``), a worker's own
metrics port, and a real ``taskcrawler worker`` process with JSON logs carrying job ids."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiohttp
import orjson
from prometheus_client.parser import text_string_to_metric_families

from taskcrawler.running import run_worker
from taskcrawler.storage import upgrade_database
from tests.e2e.harness import Service, fast_settings, running
from tests.support.processes import ProcessManager
from tests.support.services import free_port
from tests.support.target import TargetServer


def parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def scrape(service: Service) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await service.client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    return parse(response.text)


async def http_metrics(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        assert response.status == 200
        return parse(await response.text())


async def run_mix(service: Service, target: TargetServer) -> list[dict[str, Any]]:
    """One page, a 404, and a page that fails once with 503 then completes."""
    jobs = [
        await service.submit(target.url("/page/1")),
        await service.submit(target.url("/status/404")),
        await service.submit(target.url("/flaky/m?fail=1&code=503")),
    ]
    again = await service.submit(target.url("/page/1"))  # a duplicate creates nothing
    assert again["id"] == jobs[0]["id"]
    return [await service.wait_for(job["id"]) for job in jobs]


async def test_serve_metrics_include_the_worker(sqlite_url: str, target: TargetServer) -> None:
    async with running("embedded", fast_settings(database_url=sqlite_url)) as service:
        before = await scrape(service)
        assert value(before, "taskcrawler_jobs_created_total") == 0
        assert value(before, "taskcrawler_jobs_completed_total") == 0

        finished = await run_mix(service, target)
        assert [j["status"] for j in finished] == ["COMPLETED", "FAILED", "COMPLETED"]
        samples = await scrape(service)

    assert value(samples, "taskcrawler_jobs_created_total") == 3
    assert value(samples, "taskcrawler_jobs_completed_total") == 2
    assert value(samples, "taskcrawler_jobs_failed_total", error_code="http_404") == 1
    assert value(samples, "taskcrawler_jobs_retried_total", error_code="http_5xx") == 1
    assert value(samples, "taskcrawler_fetch_duration_seconds_count") == 4  # 3 jobs, 1 retry
    assert value(samples, "taskcrawler_job_latency_seconds_count") == 3  # final states only
    assert value(samples, "taskcrawler_job_latency_seconds_sum") > 0
    assert value(samples, "taskcrawler_jobs_in_flight") == 0
    assert value(samples, "taskcrawler_queue_depth") == 0
    # the process's own CPU and memory, once (the worker shares the API's registry here)
    assert value(samples, "process_cpu_seconds_total") > 0
    assert value(samples, "process_resident_memory_bytes") > 10 * 2**20


async def test_in_flight_and_queue_depth_while_jobs_wait(
    sqlite_url: str, target: TargetServer
) -> None:
    settings = fast_settings(database_url=sqlite_url, worker_concurrency=2)
    async with running("embedded", settings) as service:
        for n in range(6):
            await service.submit(target.url(f"/slow?delay=0.6&n={n}"))
        samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for _ in range(100):  # until both slots are busy and the rest wait
            samples = await scrape(service)
            if value(samples, "taskcrawler_jobs_in_flight") == 2:
                break
            await asyncio.sleep(0.02)
        assert value(samples, "taskcrawler_jobs_in_flight") == 2
        assert value(samples, "taskcrawler_jobs_completed_total") < 6


async def test_production_api_and_worker_count_in_their_own_process(
    pg_url: str, redis_url: str, redis_prefix: str, target: TargetServer
) -> None:
    """API and worker each have a registry; the worker serves its own on its metrics port."""
    port = free_port()
    settings = fast_settings(
        database_url=pg_url,
        redis_url=redis_url,
        redis_prefix=redis_prefix,
        worker_metrics_port=port,
    )
    async with running("api", settings) as service:
        stop = asyncio.Event()
        worker = asyncio.create_task(run_worker(settings, stop=stop, serve_metrics_port=True))
        try:
            await run_mix(service, target)
            from_worker = await http_metrics(port)
            from_api = await scrape(service)
        finally:
            stop.set()
            await worker

    assert value(from_api, "taskcrawler_jobs_created_total") == 3
    assert value(from_api, "taskcrawler_queue_depth") == 0
    assert ("taskcrawler_jobs_completed_total", ()) not in from_api  # not the API's to count
    assert value(from_worker, "taskcrawler_jobs_completed_total") == 2
    assert value(from_worker, "taskcrawler_jobs_failed_total", error_code="http_404") == 1
    assert value(from_worker, "taskcrawler_jobs_retried_total", error_code="http_5xx") == 1
    assert value(from_worker, "taskcrawler_job_latency_seconds_count") == 3
    assert ("taskcrawler_queue_depth", ()) in from_worker
    assert ("taskcrawler_jobs_created_total", ()) not in from_worker


async def test_worker_process_metrics_port_and_json_logs_with_job_ids(
    pg_url: str,
    redis_url: str,
    redis_prefix: str,
    target: TargetServer,
    processes: ProcessManager,
) -> None:
    """``taskcrawler worker`` as a real process: /metrics on its port, a JSON log line with the
    job's id for the job that failed, and no line at INFO for the one that completed."""
    port = free_port()
    env = {
        "TASKCRAWLER_DATABASE_URL": pg_url,
        "TASKCRAWLER_REDIS_URL": redis_url,
        "TASKCRAWLER_REDIS_PREFIX": redis_prefix,
        "TASKCRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
        "TASKCRAWLER_RESPECT_ROBOTS": "false",
        "TASKCRAWLER_LOG_FORMAT": "json",
        "TASKCRAWLER_WORKER_PROCESSES": "1",  # this process's own metrics, all of them
    }
    await upgrade_database(pg_url)
    worker = processes.start(["worker", "--metrics-port", str(port)], env, name="worker")
    await worker.wait_for_http(f"http://127.0.0.1:{port}/metrics")
    settings = fast_settings(database_url=pg_url, redis_url=redis_url, redis_prefix=redis_prefix)
    async with running("api", settings) as service:
        ok = await service.submit(target.url("/page/2"))
        bad = await service.submit(target.url("/status/410"))
        await service.wait_for(ok["id"])
        await service.wait_for(bad["id"])

    samples = await http_metrics(port)
    assert value(samples, "taskcrawler_jobs_completed_total") == 1
    assert value(samples, "taskcrawler_jobs_failed_total", error_code="http_410") == 1
    assert value(samples, "process_cpu_seconds_total") > 0

    lines = []
    for line in worker.output().splitlines():
        with contextlib.suppress(orjson.JSONDecodeError):
            lines.append(orjson.loads(line))
    about_bad = [entry for entry in lines if entry.get("job_id") == bad["id"]]
    assert about_bad and about_bad[0]["level"] == "info"
    assert about_bad[0]["error_code"] == "http_410"
    assert not [entry for entry in lines if entry.get("job_id") == ok["id"]]
    assert any("worker metrics on" in entry["msg"] for entry in lines)
