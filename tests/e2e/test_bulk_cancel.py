"""Bulk cancel through the real service, in both modes: ``POST /api/v1/jobs/cancel`` stops every
unfinished job a filter matches, each atomically; a job being fetched is cancelled too, and what
its worker fetched is dropped, never written."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from tests.e2e.harness import FINAL, Service, ServiceFactory
from tests.support.target import TargetServer

CANCEL = "/api/v1/jobs/cancel"


async def _cancel(service: Service, body: dict[str, Any], *, expect: int = 200) -> dict[str, Any]:
    response = await service.client.post(CANCEL, json=body)
    assert response.status_code == expect, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def _job(service: Service, job_id: str) -> dict[str, Any]:
    job: dict[str, Any] = (await service.client.get(f"/api/v1/jobs/{job_id}")).json()
    return job


async def _until_processing(service: Service, ids: list[str], within: float = 15.0) -> str:
    deadline = time.monotonic() + within
    while True:
        for job_id in ids:
            if (await _job(service, job_id))["status"] == "PROCESSING":
                return job_id
        assert time.monotonic() < deadline, "no job was claimed"
        await asyncio.sleep(0.02)


async def test_a_filter_cancels_pending_and_in_flight_jobs_and_drops_the_fetch(
    service_factory: ServiceFactory, target: TargetServer
) -> None:
    # One fetch at a time on the host: the rest wait, PENDING, while the first is fetched.
    async with service_factory(host_concurrency=1, fetch_timeout_seconds=10.0) as service:
        done = await service.scrape(target.url("/page/1"))
        assert done["status"] == "COMPLETED"
        slow = [(await service.submit(target.url(f"/slow?delay=1&n={n}")))["id"] for n in range(8)]
        in_flight = await _until_processing(service, slow)

        answer = await _cancel(service, {"host": "127.0.0.1"})

        assert sorted(answer["ids"]) == sorted(slow)  # the finished job is left alone
        assert answer["cancelled"] == len(slow) and answer["more"] is False
        # The fetch under way ends (the page answers after a second); its outcome is dropped.
        deadline = time.monotonic() + 10
        while target.hits_for("/slow") < 1:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.5)
        job = await _job(service, in_flight)
        assert job["status"] == "CANCELLED", job
        assert job["scraped_title"] is None and job["http_status"] is None, job
        for job_id in slow:
            assert (await _job(service, job_id))["status"] == "CANCELLED"
        assert (await _job(service, done["id"]))["status"] == "COMPLETED"
        # Nothing is left to cancel; a second call says so.
        assert await _cancel(service, {"host": "127.0.0.1"}) == {
            "cancelled": 0,
            "ids": [],
            "more": False,
        }


async def test_every_cancelled_job_stays_cancelled_while_workers_race_for_them(
    service: Service, target: TargetServer
) -> None:
    """Cancelled by ids while the worker claims and completes them: each job ends either
    CANCELLED (and in the answer, with nothing of a fetch) or COMPLETED (and not in it)."""
    urls = [target.url(f"/page/{n}?race") for n in range(300)]
    batch = (await service.client.post("/api/v1/jobs/batch", json={"urls": urls})).json()
    ids = [item["id"] for item in batch["jobs"]]
    await asyncio.sleep(0.05)  # the worker is under way
    answer = await _cancel(service, {"ids": ids})
    cancelled = set(answer["ids"])
    assert answer["cancelled"] == len(cancelled) > 0

    deadline = time.monotonic() + 30
    while True:
        jobs = [await _job(service, job_id) for job_id in ids]
        if all(job["status"] in FINAL for job in jobs):
            break
        assert time.monotonic() < deadline, [j for j in jobs if j["status"] not in FINAL][:3]
        await asyncio.sleep(0.1)
    for job in jobs:
        if job["id"] in cancelled:
            assert job["status"] == "CANCELLED", job
            assert job["scraped_title"] is None and job["http_status"] is None, job
        else:
            assert job["status"] == "COMPLETED", job


async def test_cancel_by_batch_crawl_status_and_time(
    service_factory: ServiceFactory, target: TargetServer
) -> None:
    async with service_factory(host_concurrency=1, fetch_timeout_seconds=10.0) as service:
        blocker = (await service.submit(target.url("/slow?delay=5&blocker")))["id"]
        await _until_processing(service, [blocker])
        # A Firecrawl batch scrape's jobs wait behind it.
        urls = [target.url(f"/slow?delay=0.1&batch={n}") for n in range(3)]
        response = await service.client.post("/v1/batch/scrape", json={"urls": urls})
        assert response.status_code == 200, response.text
        batch_id = response.json()["id"]
        before_others = datetime.now(UTC)
        others = [
            (await service.submit(target.url(f"/slow?delay=0.1&o={n}")))["id"] for n in range(3)
        ]

        by_batch = await _cancel(service, {"batch_id": batch_id})
        assert by_batch["cancelled"] == 3
        assert not set(by_batch["ids"]) & set(others)
        # Only the PROCESSING ones: the blocker (and any other claimed while it waits for the
        # host's one slot).
        by_status = await _cancel(service, {"status": ["PROCESSING"]})
        assert blocker in by_status["ids"] and set(by_status["ids"]) <= {blocker, *others}
        # By time: the jobs created after a moment, oldest first.
        by_time = await _cancel(service, {"created_after": before_others.isoformat()})
        assert by_time["ids"] == [i for i in others if i not in by_status["ids"]]
        # A crawl's pages.
        crawl = await service.client.post(
            "/api/v1/crawls", json={"url": target.url("/page/1"), "limit": 5}
        )
        assert crawl.status_code == 201, crawl.text
        crawl_id = crawl.json()["id"]
        by_crawl = await _cancel(service, {"crawl_id": crawl_id})
        pages = (await service.client.get(f"/api/v1/crawls/{crawl_id}/jobs")).json()["jobs"]
        for page in pages:
            assert page["status"] in ("CANCELLED", "COMPLETED"), page
        assert {p["id"] for p in pages if p["status"] == "CANCELLED"} >= set(by_crawl["ids"])


async def test_cancel_refuses_filters_that_mean_nothing_or_everything(service: Service) -> None:
    empty = await _cancel(service, {}, expect=422)
    assert empty["detail"][0]["loc"] == ["body", "filter"]
    assert "at least one" in empty["detail"][0]["msg"]
    await _cancel(service, {"status": ["COMPLETED"]}, expect=422)
    await _cancel(service, {"ids": ["not-a-uuid"]}, expect=422)
    await _cancel(service, {"bogus": 1}, expect=422)
    unknown = await _cancel(service, {"batch_id": str(uuid.uuid4())}, expect=404)
    assert "batch" in unknown["detail"]
    # Another tenant's jobs are not found by id: nothing is cancelled.
    other = await service.new_key("other")
    job = await service.client.post(
        "/api/v1/jobs", json={"url": "http://192.0.2.1/x"}, headers=other
    )
    answer = await _cancel(service, {"ids": [job.json()["id"]]})
    assert answer["cancelled"] == 0


async def test_delete_cancels_a_job_being_fetched(
    service_factory: ServiceFactory, target: TargetServer
) -> None:
    async with service_factory() as service:
        job_id = (await service.submit(target.url("/slow?delay=1&one")))["id"]
        await _until_processing(service, [job_id])
        response = await service.client.delete(f"/api/v1/jobs/{job_id}")
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "CANCELLED"
        await asyncio.sleep(1.5)
        job = await _job(service, job_id)
        assert job["status"] == "CANCELLED" and job["http_status"] is None, job
        again = await service.client.delete(f"/api/v1/jobs/{job_id}")
        assert again.status_code == 409
        assert "retry" in again.json()["detail"]


async def test_jobs_are_found_by_the_start_of_their_id(service_factory: ServiceFactory) -> None:
    """``GET /api/v1/jobs?id_prefix=``: what resolves a short id, on both databases (an id
    range: SQLite keeps UUIDs as hex text, PostgreSQL as bytes; both sort as the hex does)."""
    async with service_factory(max_pending_jobs=None) as service:
        ids: list[str] = []
        by_start: dict[str, list[str]] = {}
        shared = None
        for round_ in range(4):  # 1,000 random ids share a first four digits 9,995 times in 10,000
            urls = [f"http://192.0.2.1/{round_}/{n}" for n in range(1000)]  # never answered
            batch = (await service.client.post("/api/v1/jobs/batch", json={"urls": urls})).json()
            made = [item["id"] for item in batch["jobs"]]
            await _cancel(service, {"ids": made})  # the worker leaves them alone from now on
            ids += made
            for job_id in made:
                by_start.setdefault(job_id[:4], []).append(job_id)
            shared = next((start for start, same in by_start.items() if len(same) > 1), None)
            if shared is not None:
                break
        assert shared is not None

        async def found(prefix: str) -> list[str]:
            response = await service.client.get(
                "/api/v1/jobs", params={"id_prefix": prefix, "limit": 500}
            )
            assert response.status_code == 200, response.text
            return sorted(job["id"] for job in response.json()["jobs"])

        assert await found(shared) == sorted(by_start[shared])
        one = ids[0]
        assert await found(one[:13]) == [one]  # with its dash
        assert await found(one[:8].upper()) == sorted(i for i in ids if i[:8] == one[:8])
        assert await found(one) == [one]
        for bad in ("abc", "zzzz", "0" * 33):
            response = await service.client.get("/api/v1/jobs", params={"id_prefix": bad})
            assert response.status_code == 422, bad
            assert response.json()["detail"][0]["loc"] == ["query", "id_prefix"]
