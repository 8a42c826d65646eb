"""Many users: keys, isolation on every endpoint, limits, idempotent requests."""

import uuid
from typing import Any

import httpx
import pytest

from taskcrawler.storage.rows import utcnow
from taskcrawler.storage.tables import jobs as jobs_table
from tests.e2e.harness import Service, ServiceFactory, fast_settings, running


async def test_auth_required_refuses_missing_and_bad_keys(service_factory: ServiceFactory) -> None:
    async with service_factory(auth_required=True) as service:
        missing = await service.client.get("/api/v1/jobs")
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == "Bearer"
        for header in ("Bearer nope", "Basic abc", "Bearer tc_x_y", "tc_only"):
            bad = await service.client.get("/api/v1/jobs", headers={"Authorization": header})
            assert bad.status_code == 401, header
        good = await service.client.get("/api/v1/jobs", headers=await service.new_key())
        assert good.status_code == 200
        # health endpoints stay open for load balancers
        assert (await service.client.get("/healthz")).status_code == 200


async def test_a_wrong_secret_for_a_real_key_id_is_refused(service: Service) -> None:
    headers = await service.new_key()
    token = headers["Authorization"].removeprefix("Bearer ")
    forged = token[: token.rindex("_") + 1] + "forged"
    response = await service.client.get(
        "/api/v1/jobs", headers={"Authorization": f"Bearer {forged}"}
    )
    assert response.status_code == 401


async def test_tenants_are_isolated_on_every_endpoint(service: Service) -> None:
    alice, bob = await service.new_key("alice"), await service.new_key("bob")
    url = "http://isolated.invalid/page"
    mine = await service.client.post("/api/v1/jobs", json={"url": url}, headers=alice)
    theirs = await service.client.post("/api/v1/jobs", json={"url": url}, headers=bob)
    # Deduplication is per key: Bob learns nothing about Alice's URL.
    assert (mine.status_code, theirs.status_code) == (201, 201)
    job_id = mine.json()["id"]
    assert theirs.json()["id"] != job_id
    for method, path in [
        ("GET", f"/api/v1/jobs/{job_id}"),
        ("DELETE", f"/api/v1/jobs/{job_id}"),
        ("POST", f"/api/v1/jobs/{job_id}/retry"),
        ("GET", f"/api/v1/jobs/{job_id}/runs"),
    ]:
        response = await service.client.request(method, path, headers=bob)
        assert response.status_code == 404, (method, path)
    listed = (await service.client.get("/api/v1/jobs", headers=bob)).json()["jobs"]
    assert [job["id"] for job in listed] == [theirs.json()["id"]]
    anonymous = (await service.client.get("/api/v1/jobs")).json()["jobs"]
    assert anonymous == []
    retried = await service.client.post("/api/v1/jobs/retry", json={}, headers=bob)
    assert job_id not in retried.json()["ids"]
    # Alice's job is untouched by all of Bob's attempts.
    still = await service.client.get(f"/api/v1/jobs/{job_id}", headers=alice)
    assert still.json()["status"] != "CANCELLED"


async def test_admin_manages_keys_and_others_cannot(service: Service) -> None:
    admin = await service.new_key("root", is_admin=True)
    user = await service.new_key("user")
    assert (await service.client.get("/api/v1/keys", headers=user)).status_code == 403
    created = await service.client.post(
        "/api/v1/keys", json={"name": "ci", "requests_per_minute": 100}, headers=admin
    )
    assert created.status_code == 201
    body = created.json()
    assert body["key"].startswith("tc_") and body["name"] == "ci"
    new_headers = {"Authorization": f"Bearer {body['key']}"}
    assert (await service.client.get("/api/v1/jobs", headers=new_headers)).status_code == 200
    listed = (await service.client.get("/api/v1/keys", headers=admin)).json()
    assert "key" not in listed[0]  # the secret is never shown again
    assert {k["name"] for k in listed} >= {"root", "user", "ci"}
    revoked = await service.client.delete(f"/api/v1/keys/{body['id']}", headers=admin)
    assert revoked.status_code == 204
    assert (await service.client.get("/api/v1/jobs", headers=new_headers)).status_code == 401
    again = await service.client.delete(f"/api/v1/keys/{body['id']}", headers=admin)
    assert again.status_code == 404


async def test_rate_limit_answers_429_with_retry_after(service: Service) -> None:
    headers = await service.new_key("limited", requests_per_minute=3)
    codes = [
        (await service.client.get("/api/v1/jobs", headers=headers)).status_code for _ in range(5)
    ]
    assert codes == [200, 200, 200, 429, 429]
    limited = await service.client.get("/api/v1/jobs", headers=headers)
    assert limited.status_code == 429
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    # Another key is not affected.
    assert (
        await service.client.get("/api/v1/jobs", headers=await service.new_key())
    ).status_code == 200


async def test_a_submission_is_authenticated_and_rate_limited(
    service_factory: ServiceFactory,
) -> None:
    """The single POST has a dependency of its own (services and caller in one): it still
    refuses a missing or unknown key and counts the key's requests."""
    url = f"http://127.0.0.1:9/{uuid.uuid4().hex}"
    async with service_factory(auth_required=True) as service:
        missing = await service.client.post("/api/v1/jobs", json={"url": url})
        assert missing.status_code == 401
        unknown = await service.client.post(
            "/api/v1/jobs", json={"url": url}, headers={"Authorization": "Bearer tc_x_y"}
        )
        assert unknown.status_code == 401
        headers = await service.new_key("limited", requests_per_minute=2)
        codes = [
            (
                await service.client.post("/api/v1/jobs", json={"url": url}, headers=headers)
            ).status_code
            for _ in range(2)
        ]
        assert codes == [201, 200]
        limited = await service.client.post("/api/v1/jobs", json={"url": url}, headers=headers)
        assert limited.status_code == 429
        assert 1 <= int(limited.headers["retry-after"]) <= 60


async def test_the_pending_limit_refuses_new_jobs_and_answers_the_existing_ones(
    database_url: str,
) -> None:
    # No worker at all: every job stays PENDING.
    settings = fast_settings(database_url=database_url, max_pending_jobs=2)
    async with running("api", settings) as service:
        headers = await service.new_key()
        first, second, third = (f"http://pending{n}.invalid/" for n in range(3))

        async def submit(url: str) -> httpx.Response:
            return await service.client.post("/api/v1/jobs", json={"url": url}, headers=headers)

        created = [await submit(url) for url in (first, second)]
        assert [r.status_code for r in created] == [201, 201]
        refused = await submit(third)
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1
        # A retry of a URL whose job is pending adds nothing: it answers that job.
        again = await submit(second.upper().replace("HTTP://", "http://"))
        assert again.status_code == 200
        assert again.json()["id"] == created[1].json()["id"]

        async def batch(urls: list[str]) -> httpx.Response:
            return await service.client.post(
                "/api/v1/jobs/batch", json={"urls": urls}, headers=headers
            )

        answered = await batch([first, second, first])
        assert answered.status_code == 200
        assert (answered.json()["created"], answered.json()["existing"]) == (0, 3)
        assert (await batch([first, third])).status_code == 429
        listed = await service.client.get("/api/v1/jobs", headers=headers)
        assert len(listed.json()["jobs"]) == 2


async def test_list_filters_and_paginates_stably(service: Service) -> None:
    headers = await service.new_key()
    ids = []
    for n in range(7):
        response = await service.client.post(
            "/api/v1/jobs", json={"url": f"http://list{n}.invalid/"}, headers=headers
        )
        ids.append(response.json()["id"])
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        page = (await service.client.get("/api/v1/jobs", params=params, headers=headers)).json()
        seen += [job["id"] for job in page["jobs"]]
        if len(seen) == 3:
            # Jobs added while paginating must not shift the pages.
            await service.client.post(
                "/api/v1/jobs", json={"url": "http://late.invalid/"}, headers=headers
            )
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))
    by_host = await service.client.get(
        "/api/v1/jobs", params={"host": "list3.invalid"}, headers=headers
    )
    assert [job["id"] for job in by_host.json()["jobs"]] == [ids[3]]
    bad = await service.client.get("/api/v1/jobs", params={"cursor": "garbage"}, headers=headers)
    assert bad.status_code == 422


async def test_batch_creates_and_deduplicates(service: Service, target) -> None:
    urls = [target.url(f"/page/{n}") for n in range(1000)]
    urls[999] = urls[0]  # a duplicate inside the batch
    response = await service.client.post("/api/v1/jobs/batch", json={"urls": urls})
    assert response.status_code == 200
    body = response.json()
    assert (body["created"], body["existing"]) == (999, 1)
    assert body["jobs"][999]["id"] == body["jobs"][0]["id"]
    again = (await service.client.post("/api/v1/jobs/batch", json={"urls": urls[:5]})).json()
    assert again["created"] == 0
    assert [j["id"] for j in again["jobs"]] == [j["id"] for j in body["jobs"][:5]]


async def test_batch_with_a_bad_url_changes_nothing(service: Service) -> None:
    response = await service.client.post(
        "/api/v1/jobs/batch", json={"urls": ["http://ok.invalid/", "ftp://bad/"]}
    )
    assert response.status_code == 422
    assert "urls[1]" in response.text
    listed = (await service.client.get("/api/v1/jobs")).json()["jobs"]
    assert listed == []


@pytest.mark.parametrize("size", [0, 1001])
async def test_batch_size_is_bounded(service: Service, size: int) -> None:
    urls = [f"http://b{n}.invalid/" for n in range(size)]
    response = await service.client.post("/api/v1/jobs/batch", json={"urls": urls})
    assert response.status_code == 422


async def test_idempotency_key_replays_the_first_answer(service: Service) -> None:
    headers = {"Idempotency-Key": f"k-{uuid.uuid4()}"}
    body = {"urls": ["http://idem1.invalid/", "http://idem2.invalid/"]}
    first = await service.client.post("/api/v1/jobs/batch", json=body, headers=headers)
    second = await service.client.post("/api/v1/jobs/batch", json=body, headers=headers)
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()  # statuses frozen as first answered, created flags too
    other = await service.client.post(
        "/api/v1/jobs/batch", json={"urls": ["http://other.invalid/"]}, headers=headers
    )
    assert other.status_code == 409


async def test_cancel_only_pending_and_retry_only_finished(service: Service, target) -> None:
    done = await service.scrape(target.url("/page/1"))
    cancel_done = await service.client.delete(f"/api/v1/jobs/{done['id']}")
    assert cancel_done.status_code == 409
    retried = await service.client.post(f"/api/v1/jobs/{done['id']}/retry")
    assert retried.status_code == 200
    assert retried.json()["id"] == done["id"]
    assert retried.json()["run_count"] == 1
    again = await service.wait_for(done["id"])
    assert again["status"] == "COMPLETED"
    assert target.hits_for("/page/1") == 2
    runs = (await service.client.get(f"/api/v1/jobs/{done['id']}/runs")).json()
    assert [(r["run"], r["status"], r["scraped_title"]) for r in runs] == [
        (0, "COMPLETED", "Page 1")
    ]


async def test_cancel_a_pending_job(service_factory: ServiceFactory) -> None:
    async with service_factory(retry_base_seconds=30, retry_max_seconds=30) as service:
        job = await service.scrape_until_pending_retry("http://127.0.0.1:1/")
        cancelled = await service.client.delete(f"/api/v1/jobs/{job['id']}")
        assert cancelled.status_code == 200
        assert cancelled.json()["status"] == "CANCELLED"
        retry_running = await service.client.post(f"/api/v1/jobs/{uuid.uuid4()}/retry")
        assert retry_running.status_code == 404


async def test_bulk_retry_reruns_failed_jobs(service: Service, target) -> None:
    failed = await service.scrape(target.url("/status/404"))
    assert failed["status"] == "FAILED"
    response = await service.client.post("/api/v1/jobs/retry", json={"error_code": "http_404"})
    assert response.json() == {"restarted": 1, "ids": [failed["id"]]}
    await service.wait_for(failed["id"])
    assert target.hits_for("/status/404") == 2


async def test_max_age_returns_fresh_results_and_rescrapes_stale_ones(
    service: Service, target
) -> None:
    url = target.url("/page/7")
    first = await service.scrape(url)
    fresh = await service.client.post("/api/v1/jobs", json={"url": url, "max_age": 3600})
    assert fresh.status_code == 200
    assert fresh.json()["run_count"] == 0
    stale = await service.client.post("/api/v1/jobs", json={"url": url, "max_age": 0})
    assert stale.status_code == 200
    assert stale.json()["id"] == first["id"]
    assert stale.json()["run_count"] == 1
    rerun = await service.wait_for(first["id"])
    assert rerun["status"] == "COMPLETED"
    assert target.hits_for("/page/7") == 2


async def test_request_body_over_the_limit_is_413(service: Service) -> None:
    big = {"urls": ["http://x.invalid/" + "a" * 2000] * 2500}  # ~5 MB, over the 4 MiB default
    response = await service.client.post("/api/v1/jobs/batch", json=big)
    assert response.status_code == 413
    assert "request body over" in response.json()["detail"]


async def test_streamed_body_over_the_limit_is_413(service_factory: ServiceFactory) -> None:
    async with service_factory(max_request_bytes=4096) as service:

        async def chunks():  # no Content-Length: the limit must count what arrives
            for _ in range(10):
                yield b" " * 1000

        response = await service.client.post(
            "/api/v1/jobs", content=chunks(), headers={"content-type": "application/json"}
        )
        assert response.status_code == 413


async def test_the_pending_limit_answers_a_url_whose_finished_job_a_submission_keeps(
    database_url: str,
) -> None:
    """A URL whose job completed, submitted again asking nothing new, is answered with that
    job and adds no unfinished one: at the limit it is answered, as a pending job's retry is."""
    settings = fast_settings(database_url=database_url, max_pending_jobs=1)
    async with running("api", settings) as service:
        headers = await service.new_key()

        async def submit(url: str) -> httpx.Response:
            return await service.client.post("/api/v1/jobs", json={"url": url}, headers=headers)

        done, waiting = "http://done.invalid/", "http://waiting.invalid/"
        first = await submit(done)
        async with service.storage.db.write() as conn:
            await conn.execute(
                jobs_table.update()
                .where(jobs_table.c.id == uuid.UUID(first.json()["id"]))
                .values(status="COMPLETED", fetched_at=utcnow(), finished_at=utcnow())
            )
        assert (await submit(waiting)).status_code == 201  # the key is at its limit
        again = await submit(done)
        assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])
        assert again.json()["status"] == "COMPLETED"
        assert (await submit("http://new.invalid/")).status_code == 429
        answered = await service.client.post(
            "/api/v1/jobs/batch", json={"urls": [done, waiting]}, headers=headers
        )
        assert (answered.status_code, answered.json()["created"]) == (200, 0)


async def test_the_pending_limit_refuses_retries_that_would_pass_it(database_url: str) -> None:
    """A retry makes an unfinished job of a finished one: past the limit a single retry and a
    bulk retry are refused whole with a submission's 429, and change nothing."""
    settings = fast_settings(database_url=database_url, max_pending_jobs=2)
    async with running("api", settings) as service:  # no worker: jobs stay PENDING
        headers = await service.new_key()

        async def post(path: str, body: dict[str, Any] | None = None) -> httpx.Response:
            return await service.client.post(f"/api/v1/jobs{path}", json=body, headers=headers)

        async def shown(job_id: str) -> tuple[str, int]:
            job = (await service.client.get(f"/api/v1/jobs/{job_id}", headers=headers)).json()
            return job["status"], job["run_count"]

        a, b = [(await post("", {"url": f"http://{n}.invalid/"})).json()["id"] for n in "ab"]
        async with service.storage.db.write() as conn:
            await conn.execute(
                jobs_table.update()
                .where(jobs_table.c.id.in_([uuid.UUID(a), uuid.UUID(b)]))
                .values(status="FAILED", error_code="http_404", finished_at=utcnow())
            )
        waiting = (await post("", {"url": "http://waiting.invalid/"})).json()["id"]
        # One unfinished job: the two failed ones would make three.
        bulk = await post("/retry", {})
        assert bulk.status_code == 429
        assert "at most 2 unfinished jobs; 1 are pending" in bulk.json()["detail"]
        assert [await shown(job_id) for job_id in (a, b)] == [("FAILED", 0)] * 2
        retried = await post(f"/{a}/retry")
        assert (retried.status_code, retried.json()["status"]) == (200, "PENDING")
        # At the limit: a retry is answered as a new URL's submission is.
        submitted = await post("", {"url": "http://new.invalid/"})
        refused = await post(f"/{b}/retry")
        assert (submitted.status_code, refused.status_code) == (429, 429)
        assert refused.json() == submitted.json()
        assert refused.headers["retry-after"] == submitted.headers["retry-after"]
        assert "TASKCRAWLER_MAX_PENDING_JOBS" in refused.json()["detail"]
        assert (await post("/retry", {})).status_code == 429
        assert await shown(b) == ("FAILED", 0)
        # Retries that add nothing are answered as they are without a limit.
        assert (await post(f"/{a}/retry")).status_code == 409
        nothing = await post("/retry", {"host": "none.invalid"})
        assert nothing.json() == {"restarted": 0, "ids": []}
        # Room again: the bulk retry restarts what matches.
        assert (await service.client.delete(f"/api/v1/jobs/{waiting}", headers=headers)).is_success
        assert (await post("/retry", {})).json() == {"restarted": 1, "ids": [b]}


async def test_an_idempotency_key_sent_to_another_route_is_a_conflict(service: Service) -> None:
    """The same body to another route (or method) with the same key is another request: a
    409, never the first route's stored answer. The native routes' bodies differ today, so
    the first route's handler is served again on paths of the test's own."""
    from taskcrawler.api.routes.jobs import create_job

    again = f"/api/v1/jobs-again-{uuid.uuid4().hex[:8]}"
    service.app.router.add_api_route(again, create_job, methods=["POST", "PUT"])
    headers = {"Idempotency-Key": f"k-{uuid.uuid4()}"}
    body = {"url": f"http://idem-{uuid.uuid4().hex[:8]}.invalid/"}
    first = await service.client.post("/api/v1/jobs", json=body, headers=headers)
    assert first.status_code == 201, first.text
    repeat = await service.client.post("/api/v1/jobs", json=body, headers=headers)
    assert (repeat.status_code, repeat.json()) == (201, first.json())
    for method, path in [("POST", again), ("PUT", again)]:
        other = await service.client.request(method, path, json=body, headers=headers)
        assert other.status_code == 409, (method, path, other.status_code, other.text)
