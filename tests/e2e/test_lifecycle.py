"""Jobs through their whole life against a local target server, on both modes."""

import asyncio
from typing import Any
from uuid import UUID

import pytest

from taskcrawler.storage import WorkStore
from taskcrawler.worker import worker as worker_module
from tests.e2e.harness import Service, ServiceFactory


async def test_page_is_fetched_and_its_title_stored(service: Service, target) -> None:
    job = await service.scrape(target.url("/page/1"))
    assert job["status"] == "COMPLETED"
    assert job["scraped_title"] == "Page 1"
    assert job["http_status"] == 200
    assert job["final_url"] == target.url("/page/1")
    assert job["content_type"] == "text/html"
    assert job["error_log"] is None and job["retry_count"] == 0
    assert job["started_at"] <= job["finished_at"]
    assert job["result"]["metadata"]["title"] == "Page 1"
    assert target.hits_for("/page/1") == 1


async def test_redirect_records_the_final_url(service: Service, target) -> None:
    job = await service.scrape(target.url("/redirect/2"))
    assert job["status"] == "COMPLETED"
    assert job["final_url"] != target.url("/redirect/2")


async def test_404_fails_at_once_without_retries(service: Service, target) -> None:
    job = await service.scrape(target.url("/status/404"))
    assert job["status"] == "FAILED"
    assert job["retry_count"] == 0
    assert job["error_code"] == "http_404"
    assert job["error_log"].startswith("http_404: HTTP 404")
    assert job["http_status"] == 404
    assert target.hits_for("/status/404") == 1


async def test_500_is_retried_then_failed(service: Service, target) -> None:
    job = await service.scrape(target.url("/status/500"))
    assert job["status"] == "FAILED"
    assert job["retry_count"] == service.settings.max_retries == 3
    assert job["error_code"] == "http_5xx"
    assert target.hits_for("/status/500") == 1 + 3


async def test_flaky_page_completes_after_retries(service: Service, target) -> None:
    job = await service.scrape(target.url("/flaky/a?fail=2&code=503"))
    assert job["status"] == "COMPLETED"
    assert job["retry_count"] == 2
    assert job["error_log"] is None


async def test_timeout_is_retried_then_failed(service_factory: ServiceFactory, target) -> None:
    async with service_factory(fetch_timeout_seconds=0.2, max_retries=1) as service:
        job = await service.scrape(target.url("/slow?delay=2"))
    assert job["status"] == "FAILED"
    assert job["error_code"] == "timeout"
    assert job["retry_count"] == 1


async def test_connection_closed_by_server_is_retried(
    service_factory: ServiceFactory, target
) -> None:
    async with service_factory(max_retries=2) as service:
        job = await service.scrape(target.url("/close"))
    assert job["status"] == "FAILED"
    assert job["retry_count"] == 2
    assert job["error_code"] == "connection_closed"


async def test_refused_connection_is_a_connect_error(service_factory: ServiceFactory) -> None:
    async with service_factory(max_retries=0) as service:
        job = await service.scrape("http://127.0.0.1:1/")
    assert job["status"] == "FAILED"
    assert job["error_code"] == "connect"


async def test_fifty_concurrent_posts_make_one_job_and_one_fetch(service: Service, target) -> None:
    url = target.url("/page/50")
    responses = await asyncio.gather(
        *(service.client.post("/api/v1/jobs", json={"url": url}) for _ in range(50))
    )
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] * 49 + [201]
    assert len({r.json()["id"] for r in responses}) == 1
    await service.wait_for(responses[0].json()["id"])
    await asyncio.sleep(0.2)  # a duplicate fetch, if any, would land now
    assert target.hits_for("/page/50") == 1


async def test_many_pages_all_complete(service: Service, target) -> None:
    """Every page is fetched once per attempt of its job: no job is fetched twice at once. A
    job may be retried on a loaded machine (the harness gives a fetch 2 s), and its retry
    fetches again."""
    jobs = [await service.submit(target.url(f"/page/{n}")) for n in range(200)]
    done = [await service.wait_for(job["id"]) for job in jobs]
    assert {job["status"] for job in done} == {"COMPLETED"}
    attempts = {int(job["url"].rsplit("/", 1)[1]): job["retry_count"] + 1 for job in done}
    fetched = {n: target.hits_for(f"/page/{n}") for n in range(200)}
    assert {n: hits for n, hits in fetched.items() if hits != attempts[n]} == {}, [
        (job["url"], job["retry_count"], job["error_code"], job["error_log"])
        for job in done
        if fetched[int(job["url"].rsplit("/", 1)[1])] != 1
    ]


@pytest.mark.parametrize(
    ("backlog_bytes", "fetched_at_most"),
    [
        (worker_module.WRITE_BACKLOG_BYTES, 2 * (1 + worker_module.WRITE_BACKLOG_FACTOR)),
        (0, 2),  # any page waiting is over the byte bound: only the two fetch slots
    ],
)
async def test_jobs_waiting_for_their_write_free_their_fetch_slot_up_to_a_bound(
    service_factory: ServiceFactory,
    target,
    monkeypatch: pytest.MonkeyPatch,
    backlog_bytes: int,
    fetched_at_most: int,
) -> None:
    """With the database's writes stalled, fetching goes on past the concurrency (the writes
    are group commits, and fetches should overlap them) but stops at the backlog's bounds."""
    writes_open = asyncio.Event()
    record_transitions = WorkStore.record_transitions

    async def stalled(self: WorkStore, *args: Any, **kwargs: Any) -> list[UUID]:
        await writes_open.wait()
        return await record_transitions(self, *args, **kwargs)

    monkeypatch.setattr(WorkStore, "record_transitions", stalled)
    monkeypatch.setattr(worker_module, "WRITE_BACKLOG_BYTES", backlog_bytes)
    pages = [f"/page/{n}" for n in range(fetched_at_most + 4)]
    # Each page must be fetched once, so no fetch may overrun its deadline: the harness's 2 s
    # is wall time, and a process starved of CPU on a loaded host was measured not running
    # its loop for 2.5 s. The target counts the request as it arrives, the fetch times out
    # before the loop reads the answer, and the retry (rightly) fetches the page again. The
    # deadline here is past the test's own waits: a fetch that hangs still fails the test.
    async with service_factory(worker_concurrency=2, fetch_timeout_seconds=60) as service:
        jobs = [await service.submit(target.url(page)) for page in pages]

        def fetched() -> int:
            return sum(target.hits_for(page) for page in pages)

        async with asyncio.timeout(15):
            while True:
                if fetched() >= fetched_at_most:
                    break
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)  # a fetch past the bound, if any, would land now
        assert fetched() == fetched_at_most
        writes_open.set()
        done = [await service.wait_for(job["id"]) for job in jobs]
    assert {job["status"] for job in done} == {"COMPLETED"}
    fetched_twice = [
        (job["url"], job["retry_count"], job["error_code"])
        for job in done
        if target.hits_for(job["url"]) != 1
    ]
    assert fetched_twice == []
