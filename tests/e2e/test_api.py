"""The HTTP contract, on both modes: status codes, fields, bad input."""

import uuid

import pytest

from tests.e2e.harness import Service, fast_settings, running

SEED_FIELDS = {"id", "url", "status", "retry_count", "scraped_title", "error_log"}
MORE_FIELDS = {
    "http_status",
    "final_url",
    "content_type",
    "created_at",
    "started_at",
    "finished_at",
    "next_attempt_at",
    "error_code",
}


async def test_new_url_is_201_and_pending_with_every_field(service: Service) -> None:
    response = await service.client.post("/api/v1/jobs", json={"url": "http://new.invalid/"})
    assert response.status_code == 201
    job = response.json()
    assert set(job) >= SEED_FIELDS | MORE_FIELDS
    assert job["url"] == "http://new.invalid/"
    assert job["status"] in ("PENDING", "PROCESSING", "FAILED")
    assert job["retry_count"] == 0
    uuid.UUID(job["id"])


async def test_same_url_again_is_200_with_the_same_job(service: Service) -> None:
    first = await service.client.post("/api/v1/jobs", json={"url": "http://Same.invalid"})
    again = await service.client.post("/api/v1/jobs", json={"url": "http://same.invalid:80/#x"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]


async def test_get_returns_the_job(service: Service) -> None:
    job = await service.submit("http://get.invalid/")
    response = await service.client.get(f"/api/v1/jobs/{job['id']}")
    assert response.status_code == 200
    assert response.json()["id"] == job["id"]


async def test_unknown_id_is_404(service: Service) -> None:
    response = await service.client.get(f"/api/v1/jobs/{uuid.uuid4()}")
    assert response.status_code == 404
    assert response.json() == {"detail": "no job with this id"}


async def test_malformed_id_is_422(service: Service) -> None:
    response = await service.client.get("/api/v1/jobs/not-a-uuid")
    assert response.status_code == 422


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"url": "ftp://example.com/"}, "only http and https"),
        ({"url": "not a url"}, "only http and https"),
        ({"url": "http://user:pass@example.com/"}, "credentials"),
        ({"url": "http://example.com/" + "a" * 2100}, "2048"),
        ({"url": ""}, "empty"),
        ({"url": 42}, "string"),
        ({}, "Field required"),
        ({"url": "http://example.com/", "surprise": 1}, "Extra inputs"),
    ],
)
async def test_bad_input_is_422_with_a_readable_message_and_changes_nothing(
    service: Service, body: object, message: str
) -> None:
    response = await service.client.post("/api/v1/jobs", json=body)
    assert response.status_code == 422
    assert message in response.text
    listing = await service.client.post("/api/v1/jobs", json={"url": "http://example.com/"})
    assert listing.status_code == 201  # nothing was stored by the bad request


async def test_not_json_is_422(service: Service) -> None:
    response = await service.client.post(
        "/api/v1/jobs", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422


async def test_health_and_readiness(service: Service) -> None:
    assert (await service.client.get("/healthz")).json() == {"status": "ok", "checks": {}}
    ready = await service.client.get("/readyz")
    assert ready.status_code == 200
    checks = ready.json()["checks"]
    assert {k: v for k, v in checks.items() if k != "vectors"} == {"database": "ok", "queue": "ok"}
    # Said, but not a reason to stop traffic: SQLite has vectors, a PostgreSQL may not.
    if service.mode == "embedded":
        assert checks["vectors"] == "ok"
    else:
        assert checks["vectors"] == "ok" or checks["vectors"].startswith(
            "unavailable: PostgreSQL has no pgvector"
        )


async def test_docs_and_openapi_are_served(service: Service) -> None:
    assert (await service.client.get("/docs")).status_code == 200
    schema = (await service.client.get("/openapi.json")).json()
    assert "/api/v1/jobs" in schema["paths"]


async def test_database_down_is_503_json() -> None:
    settings = fast_settings(database_url="postgresql+asyncpg://postgres@127.0.0.1:1/none")
    async with running("api", settings) as down:
        response = await down.client.post("/api/v1/jobs", json={"url": "http://x.invalid/"})
        assert response.status_code == 503
        assert response.json()["dependency"] == "database"
        ready = await down.client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["checks"]["database"].startswith("unavailable")


async def test_queue_down_still_accepts_jobs(pg_url: str) -> None:
    settings = fast_settings(database_url=pg_url, redis_url="redis://127.0.0.1:1/0")
    async with running("api", settings) as half_down:
        response = await half_down.client.post("/api/v1/jobs", json={"url": "http://x.invalid/"})
        assert response.status_code == 201
        assert response.json()["status"] == "PENDING"
        ready = await half_down.client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["checks"]["database"] == "ok"
        assert ready.json()["checks"]["queue"].startswith("unavailable")
