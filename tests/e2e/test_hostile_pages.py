"""Hostile pages through the real worker, mixed with clean jobs of two tenants, on SQLite (the
embedded mode) and on PostgreSQL with Redis: no job is harmed by another, and each hostile page
ends on its own first fetch, COMPLETED or FAILED with its own error code.

No time is asserted: the waits are generous, only to fail a hang. The pages are in
tests/support/hostile_pages.py; the local target serves them at /hostile/<name>.
"""

from __future__ import annotations

import asyncio
from typing import Any

from taskcrawler.extract.links import MAX_LINKS_PER_PAGE
from tests.e2e.harness import Service, ServiceFactory
from tests.support.hostile_pages import BUILDERS, LINKS, hostile_page
from tests.support.target import TargetServer

CLEAN_PER_TENANT = 30
CLEAN_FORMATS = ["metadata", "markdown", "links"]
#: Generous: a hang fails the test, a busy machine does not.
WITHIN = 600.0
SETTINGS: dict[str, Any] = {
    "fetch_timeout_seconds": 30.0,
    "parse_timeout_seconds": 300.0,  # here every page must be parsed: the deadline has its test
    "worker_concurrency": 20,
}


async def submit(
    service: Service, url: str, formats: list[str], headers: dict[str, str]
) -> dict[str, Any]:
    response = await service.client.post(
        "/api/v1/jobs", json={"url": url, "formats": formats}, headers=headers
    )
    assert response.status_code == 201, response.text
    job: dict[str, Any] = response.json()
    return job


async def final(service: Service, job: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + WITHIN
    while True:
        response = await service.client.get(f"/api/v1/jobs/{job['id']}", headers=headers)
        assert response.status_code == 200, response.text
        current: dict[str, Any] = response.json()
        if current["status"] in ("COMPLETED", "FAILED", "CANCELLED"):
            return current
        assert asyncio.get_running_loop().time() < deadline, f"not final: {current}"
        await asyncio.sleep(0.1)


async def clean_jobs(
    service: Service, target: TargetServer, tenant: dict[str, str], first: int
) -> list[dict[str, Any]]:
    return [
        await submit(service, target.url(f"/page/{n}"), CLEAN_FORMATS, tenant)
        for n in range(first, first + CLEAN_PER_TENANT)
    ]


def assert_unharmed(job: dict[str, Any], target: TargetServer) -> None:
    """COMPLETED on its first and only fetch."""
    assert (job["status"], job["retry_count"], job["error_log"]) == ("COMPLETED", 0, None), job
    assert target.hits_for(job["url"]) == 1, job["url"]


async def test_hostile_pages_harm_no_other_job(
    service_factory: ServiceFactory, target: TargetServer
) -> None:
    async with service_factory(**SETTINGS) as service:
        alice, bob = await service.new_key("alice"), await service.new_key("bob")
        # Clean jobs of both tenants are in flight before, among and after the hostile pages.
        clean = await clean_jobs(service, target, alice, 0)
        hostile = {
            name: await submit(
                service, target.url(f"/hostile/{name}"), list(hostile_page(name).formats), bob
            )
            for name in BUILDERS
        }
        clean += await clean_jobs(service, target, bob, 1000)

        for job in clean:
            owner = alice if job["url"].endswith(tuple(f"/{n}" for n in range(30))) else bob
            assert_unharmed(await final(service, job, owner), target)
        done = {name: await final(service, job, bob) for name, job in hostile.items()}

        for name, job in done.items():
            expected = hostile_page(name).expect
            assert job["retry_count"] == 0, job
            assert target.hits_for(job["url"]) == 1, name
            if expected == "COMPLETED":
                assert (job["status"], job["error_log"]) == ("COMPLETED", None), job
            else:
                assert (job["status"], job["error_code"]) == ("FAILED", expected), job

        await _what_was_stored(service, done, bob)


async def _what_was_stored(
    service: Service, done: dict[str, dict[str, Any]], tenant: dict[str, str]
) -> None:
    """The cleaned and bounded forms of the hostile pages, as the API serves them."""
    metadata = {name: (job["result"] or {}).get("metadata", {}) for name, job in done.items()}
    assert done["nul"]["scraped_title"] == "Ti\ufffdtle \ufffd end"
    assert metadata["nul"]["json_ld"] == [
        {"@type": "Thing", "name": "a\ufffdb", "k\ufffdey": ["\ufffd", {"x": "\ufffd"}]}
    ]
    assert done["surrogates"]["scraped_title"] == "Sur\ufffdrogate \ufffd\ufffd"
    assert len(done["giant"]["scraped_title"]) <= 2048
    assert metadata["deep"]["title"] == "Deep"
    assert metadata["links"]["links"] == {
        "internal": LINKS,
        "external": 0,
        "nofollow": 0,
        "truncated": True,
    }
    links_id = done["links"]["id"]
    stored, cursor = 0, 0
    while True:
        page = await service.client.get(
            f"/api/v1/jobs/{links_id}/links",
            params={"cursor": cursor, "limit": 1000},
            headers=tenant,
        )
        assert page.status_code == 200, page.text
        stored += len(page.json()["links"])
        if page.json()["next_cursor"] is None:
            break
        cursor = page.json()["next_cursor"]
    assert stored == MAX_LINKS_PER_PAGE
    html = await service.client.get(
        f"/api/v1/jobs/{done['nul']['id']}/content", params={"format": "html"}, headers=tenant
    )
    assert html.status_code == 200
    assert "\x00" not in html.text and "Ti\ufffdtle" in html.text


async def test_a_parse_past_its_deadline_fails_alone_and_at_once(
    service_factory: ServiceFactory, target: TargetServer
) -> None:
    """The worker kills the parser process of a page that overruns, and replaces it: the
    page's job FAILED as parse_timeout on its first fetch, big and small pages around it
    completed. 200,000 links with Markdown take several seconds to parse here, against a
    deadline of one second; a clean 600 KB page, in the same processes, about 20 ms."""
    async with service_factory(**SETTINGS | {"parse_timeout_seconds": 1.0}) as service:
        tenant = await service.new_key("tenant")
        slow = await submit(service, target.url("/hostile/links"), ["metadata", "markdown"], tenant)
        big = [
            await submit(service, target.url(f"/big?bytes={600_000 + n}"), ["metadata"], tenant)
            for n in range(4)
        ]
        clean = await clean_jobs(service, target, tenant, 0)

        failed = await final(service, slow, tenant)
        assert (failed["status"], failed["error_code"], failed["retry_count"]) == (
            "FAILED",
            "parse_timeout",
            0,
        ), failed
        assert failed["error_log"].startswith("parse_timeout: parsing took over 1s")
        assert target.hits_for(failed["url"]) == 1
        for job in big + clean:
            done = await final(service, job, tenant)
            assert (done["status"], done["retry_count"]) == ("COMPLETED", 0), done
        assert target.hits["/big"] == len(big)
