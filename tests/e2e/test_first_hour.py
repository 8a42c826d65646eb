"""What a new user meets, through the real service in both modes: content by default, formats
that grow on every surface that submits (jobs, batches, Firecrawl's routes, crawls, monitors),
from the stored page without fetching it again, and a failure that is not kept once its fix is
applied.

One served app per mode for the module: its tests read and add to pages of their own."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.harness import Service, ServiceFactory, fast_settings, running
from tests.support.services import DatabasePool, backing_store
from tests.support.target import TargetServer


@pytest.fixture(scope="module", params=["embedded", "production"])
def backing(request: pytest.FixtureRequest) -> tuple[str, DatabasePool | None, str]:
    """The mode, and for production the session's PostgreSQL pool and Redis (asked for here,
    outside the event loop, as only a synchronous fixture may)."""
    if request.param == "embedded":
        return "embedded", None, ""
    return "production", request.getfixturevalue("pg_pool"), request.getfixturevalue("redis_url")


@pytest.fixture(scope="module")
async def service(
    backing: tuple[str, DatabasePool | None, str], tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Service]:
    mode, pool, redis_url = backing
    directory = tmp_path_factory.mktemp("first-hour")
    async with (
        backing_store(mode, directory, pool, redis_url) as store,
        running(mode, fast_settings(**store)) as served,
    ):
        yield served


async def post(service: Service, path: str, body: dict[str, Any], expect: int = 200) -> Any:
    response = await service.client.post(path, json=body)
    assert response.status_code == expect, response.text
    return response.json()


async def content(service: Service, job_id: str, fmt: str) -> tuple[int, str]:
    response = await service.client.get(f"/api/v1/jobs/{job_id}/content", params={"format": fmt})
    return response.status_code, response.text


# --- content by default; formats that grow ------------------------------------------------------


async def test_a_page_scraped_for_markdown_gains_text_and_links_without_a_fetch(
    service: Service, target: TargetServer
) -> None:
    url = target.url("/page/101")
    first = await post(service, "/api/v1/jobs", {"url": url}, expect=201)
    assert first["formats"] == ["metadata", "markdown"]
    done = await service.wait_for(first["id"])
    code, markdown = await content(service, first["id"], "markdown")
    assert (done["status"], code) == ("COMPLETED", 200) and "page 101" in markdown

    # The 409 says what to do, and doing it works.
    code, refused = await content(service, first["id"], "text")
    assert code == 409 and "submit its URL again (POST /api/v1/jobs) with formats" in refused
    again = await post(service, "/api/v1/jobs", {"url": url, "formats": ["text", "links"]})
    assert again["id"] == first["id"]
    assert again["formats"] == ["metadata", "markdown", "text", "links"]
    assert again["status"] in ("PENDING", "PROCESSING", "COMPLETED")
    grown = await service.wait_for(first["id"])
    assert grown["status"] == "COMPLETED" and grown["run_count"] == 1
    code, text = await content(service, first["id"], "text")
    assert code == 200 and "page 101" in text
    links = await service.client.get(f"/api/v1/jobs/{first['id']}/links")
    assert {link["url"] for link in links.json()["links"]} >= {target.url("/page/102")}
    # Made from the stored page: fetched once, and as old as that fetch.
    assert target.hits_for(url) == 1
    assert grown["fetched_at"] == done["fetched_at"] != grown["finished_at"]
    assert grown["result"]["metadata"]["title"] == "Page 101"

    # Asking for what it has changes nothing; max_age 0 fetches again, with every format.
    same = await post(service, "/api/v1/jobs", {"url": url, "formats": ["markdown"]})
    assert (same["status"], same["run_count"]) == ("COMPLETED", 1)
    stale = await post(service, "/api/v1/jobs", {"url": url, "formats": ["html"], "max_age": 0})
    assert stale["formats"] == ["metadata", "markdown", "text", "links", "html"]
    fetched = await service.wait_for(first["id"])
    assert (fetched["status"], fetched["run_count"]) == ("COMPLETED", 2)
    assert target.hits_for(url) == 2 and fetched["fetched_at"] > done["fetched_at"]
    for fmt in ("markdown", "text", "html"):
        assert (await content(service, first["id"], fmt))[0] == 200


# Embedded only: the shared PostgreSQL has no pgvector (tests/e2e/test_chunks.py covers chunks on
# one that has).
@pytest.mark.parametrize("backing", ["embedded"], indirect=True)
async def test_chunks_are_added_to_a_page_scraped_for_markdown(
    service: Service, target: TargetServer
) -> None:
    url = target.url("/page/111")
    job = await service.scrape(url)
    refused = await service.client.get(f"/api/v1/jobs/{job['id']}/chunks")
    assert refused.status_code == 409 and "formats including it" in refused.json()["detail"]
    await post(service, "/api/v1/jobs", {"url": url, "formats": ["chunks"]})
    assert (await service.wait_for(job["id"]))["status"] == "COMPLETED"
    chunks = (await service.client.get(f"/api/v1/jobs/{job['id']}/chunks")).json()["chunks"]
    assert chunks and "page 111" in chunks[0]["text"] and target.hits_for(url) == 1


async def test_a_batch_adds_formats_to_the_jobs_it_finds(
    service: Service, target: TargetServer
) -> None:
    known = await service.scrape(target.url("/page/121"))
    batch = await post(
        service,
        "/api/v1/jobs/batch",
        {"urls": [target.url("/page/121"), target.url("/page/122")], "formats": ["text"]},
    )
    assert (batch["created"], batch["existing"]) == (1, 1)
    assert [job["formats"] for job in batch["jobs"]] == [
        ["metadata", "markdown", "text"],
        ["text"],
    ]
    for job in batch["jobs"]:
        assert (await service.wait_for(job["id"]))["status"] == "COMPLETED"
        assert (await content(service, job["id"], "text"))[0] == 200
    assert batch["jobs"][0]["id"] == known["id"] and target.hits_for("/page/121") == 1


async def test_racing_submissions_each_get_the_format_they_asked(
    service: Service, target: TargetServer
) -> None:
    url = target.url("/page/131")
    job = await service.scrape(url)
    asked = ("text", "html", "links")
    await asyncio.gather(
        *(post(service, "/api/v1/jobs", {"url": url, "formats": [fmt]}) for fmt in asked)
    )
    done = await service.wait_for(job["id"])
    assert set(done["formats"]) == {"metadata", "markdown", *asked}
    assert done["status"] == "COMPLETED" and target.hits_for(url) == 1
    for fmt in ("text", "html"):
        assert (await content(service, job["id"], fmt))[0] == 200


async def test_firecrawl_scrapes_a_page_scraped_natively_with_other_formats(
    service: Service, target: TargetServer
) -> None:
    url = target.url("/page/141")
    native = await post(service, "/api/v1/jobs", {"url": url, "formats": ["markdown"]}, 201)
    await service.wait_for(native["id"])
    # Firecrawl asks for metadata and HTML too: the job gains them, and the answer waits.
    scraped = await post(service, "/v1/scrape", {"url": url, "formats": ["markdown", "html"]})
    document = scraped["data"]
    assert document["metadata"]["scrapeId"] == native["id"]
    assert "Page 141" in document["html"] and "page 141" in document["markdown"]
    v2 = await post(service, "/v2/scrape", {"url": url, "formats": ["links"]})
    assert target.url("/page/142") in v2["data"]["links"]
    assert target.hits_for(url) == 1

    started = await post(
        service, "/v1/batch/scrape", {"urls": [url], "formats": ["markdown", "rawHtml"]}
    )
    deadline = time.monotonic() + 15
    while True:
        status = (await service.client.get(f"/v1/batch/scrape/{started['id']}")).json()
        if status["status"] == "completed" or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert status["status"] == "completed" and "Page 141" in status["data"][0]["html"]


async def test_a_crawl_reads_a_plain_jobs_page_for_the_formats_it_lacked(
    service: Service, target: TargetServer
) -> None:
    url = target.url("/page/151")
    plain = await post(service, "/api/v1/jobs", {"url": url, "formats": ["metadata"]}, 201)
    plain = await service.wait_for(plain["id"])
    crawl = await post(
        service,
        "/api/v1/crawls",
        {"url": url, "limit": 1, "max_age": 3600, "formats": ["text"], "sitemap": "skip"},
        201,
    )
    deadline = time.monotonic() + 15
    while (found := (await service.client.get(f"/api/v1/crawls/{crawl['id']}")).json())[
        "status"
    ] == "RUNNING":
        assert time.monotonic() < deadline, found
        await asyncio.sleep(0.05)
    [page] = (await service.client.get(f"/api/v1/crawls/{crawl['id']}/jobs")).json()["jobs"]
    code, text = await content(service, page["id"], "text")
    assert code == 200 and "page 151" in text and target.hits_for(url) == 1
    # As fresh as the copy it was made from, for the next max_age.
    assert page["fetched_at"] == plain["fetched_at"] < page["finished_at"]
    # The page is its crawl's: its hint says how to have it with another format.
    code, refused = await content(service, page["id"], "html")
    assert code == 409 and "start a crawl with formats including it" in refused


async def test_a_monitor_given_a_format_adds_it_to_its_pages(
    service: Service, target: TargetServer
) -> None:
    url = target.url("/page/161")
    monitor = await post(
        service, "/api/v1/monitors", {"url": url, "interval_seconds": 3600}, expect=201
    )
    assert monitor["formats"] == ["metadata", "markdown"]
    job_id = monitor["pages"][0]["job_id"]
    assert (await service.wait_for(job_id))["status"] == "COMPLETED"
    code, refused = await content(service, job_id, "text")
    assert code == 409 and f"PATCH /api/v1/monitors/{monitor['id']}" in refused

    response = await service.client.patch(
        f"/api/v1/monitors/{monitor['id']}", json={"formats": ["text"]}
    )
    assert response.status_code == 200, response.text
    assert response.json()["formats"] == ["metadata", "markdown", "text"]
    assert (await service.wait_for(job_id))["formats"] == ["metadata", "markdown", "text"]
    code, text = await content(service, job_id, "text")
    assert code == 200 and "page 161" in text and target.hits_for(url) == 1


# --- errors that say what to do --------------------------------------------------------------


async def test_a_blocked_address_names_its_setting_and_runs_again_once_allowed(
    service_factory: ServiceFactory, target: TargetServer
) -> None:
    url = target.url("/page/171")
    async with service_factory(allow_private_networks=False) as guarded:
        failed = await guarded.scrape(url)
        assert (failed["status"], failed["error_code"]) == ("FAILED", "blocked_address")
        assert "loopback" in failed["error_log"]
        assert "set TASKCRAWLER_ALLOW_PRIVATE_NETWORKS=true" in failed["error_log"]
        # Submitted again before the fix, it runs again and fails again, saying the same.
        again = await guarded.client.post("/api/v1/jobs", json={"url": url})
        assert (again.status_code, again.json()["run_count"]) == (200, 1)
        assert (await guarded.wait_for(failed["id"]))["error_code"] == "blocked_address"
    assert target.hits_for(url) == 0
    async with service_factory(allow_private_networks=True) as allowed:
        rerun = await allowed.client.post("/api/v1/jobs", json={"url": url})
        assert rerun.status_code == 200 and rerun.json()["id"] == failed["id"]
        done = await allowed.wait_for(failed["id"])
        runs = (await allowed.client.get(f"/api/v1/jobs/{failed['id']}/runs")).json()
    assert (done["status"], done["error_log"], done["run_count"]) == ("COMPLETED", None, 2)
    assert [run["error_code"] for run in runs] == ["blocked_address", "blocked_address"]
    assert target.hits_for(url) == 1
