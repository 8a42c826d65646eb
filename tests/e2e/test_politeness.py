"""Politeness and conditional re-fetch, end to end."""

import asyncio

import aiohttp

from tests.e2e.harness import Service
from tests.support.processes import ProcessManager, free_port


async def test_rescrape_sends_validators_and_keeps_the_result_on_304(
    service: Service, target
) -> None:
    url = target.url("/etag/a")
    first = await service.scrape(url)
    assert first["scraped_title"] == "Etag a"
    assert first["unchanged"] is False
    rerun = await service.client.post("/api/v1/jobs", json={"url": url, "max_age": 0})
    assert rerun.json()["run_count"] == 1
    again = await service.wait_for(first["id"])
    assert target.not_modified == 1
    assert again["status"] == "COMPLETED"
    assert again["http_status"] == 304
    assert again["unchanged"] is True
    assert again["scraped_title"] == "Etag a"  # the stored result is still the page's
    assert again["result"] == first["result"]


async def test_two_worker_processes_respect_the_host_limit(
    processes: ProcessManager, pg_url: str, redis_url: str, redis_prefix: str, target
) -> None:
    env = {
        "TASKCRAWLER_DATABASE_URL": pg_url,
        "TASKCRAWLER_REDIS_URL": redis_url,
        "TASKCRAWLER_REDIS_PREFIX": redis_prefix,
        "TASKCRAWLER_ALLOW_PRIVATE_NETWORKS": "true",
        "TASKCRAWLER_RESPECT_ROBOTS": "false",
        "TASKCRAWLER_HOST_CONCURRENCY": "3",
        "TASKCRAWLER_HOST_WAIT_SECONDS": "0.5",
        "TASKCRAWLER_RETRY_BASE_SECONDS": "0.05",
        "TASKCRAWLER_RETRY_MAX_SECONDS": "0.2",
        "TASKCRAWLER_WORKER_METRICS_PORT": "0",
        "TASKCRAWLER_WORKER_PROCESSES": "1",
    }
    port = free_port()
    api = processes.start(["api", "--port", str(port)], env)
    workers = [processes.start(["worker"], env) for _ in range(2)]
    base = f"http://127.0.0.1:{port}"
    await api.wait_for_http(f"{base}/healthz")
    urls = [target.url(f"/slow?delay=0.05&n={n}") for n in range(200)]
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{base}/api/v1/jobs/batch", json={"urls": urls}) as response:
            assert response.status == 200
        for _ in range(1200):
            async with http.get(
                f"{base}/api/v1/jobs", params={"status": "COMPLETED", "limit": 500}
            ) as r:
                done = len((await r.json())["jobs"])
            if done == 200:
                break
            await asyncio.sleep(0.1)
    assert done == 200, [w.output()[-2000:] for w in workers]
    assert target.hits_for("/slow") == 200
    assert target.max_in_flight <= 3
    assert target.max_in_flight == 3  # and the limit was actually used, not undershot
