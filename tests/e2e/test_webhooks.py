"""Webhooks end to end, on both modes: a local receiver verifies the signature, retries show in
the deliveries, a blocked callback fails cleanly, and tenants see only their own deliveries."""

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from taskcrawler.domain.webhooks import verify_signature
from tests.e2e.harness import Service, ServiceFactory
from tests.support.webhook_receiver import Receiver, webhook_receiver

FAST_HOOKS: dict[str, Any] = {
    "webhook_poll_seconds": 0.02,
    "webhook_retry_base_seconds": 0.02,
    "webhook_retry_max_seconds": 0.05,
    "webhook_timeout_seconds": 2.0,
    "webhook_secret": "anonymous-secret",
}


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with webhook_receiver() as running:
        yield running


async def wait_delivered(
    service: Service, job_id: str, headers: dict[str, str] | None = None, *, within: float = 10
) -> list[dict[str, Any]]:
    """Poll the deliveries until none is PENDING (the way a client would)."""
    deadline = time.monotonic() + within
    while True:
        response = await service.client.get(f"/api/v1/jobs/{job_id}/deliveries", headers=headers)
        assert response.status_code == 200, response.text
        found: list[dict[str, Any]] = response.json()
        if found and all(d["status"] != "PENDING" for d in found):
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"deliveries still pending after {within}s: {found}")
        await asyncio.sleep(0.02)


async def wait_final(service: Service, job_id: str, headers: dict[str, str]) -> None:
    deadline = time.monotonic() + 10
    while (await service.client.get(f"/api/v1/jobs/{job_id}", headers=headers)).json()[
        "status"
    ] not in ("COMPLETED", "FAILED"):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)


async def test_a_completed_job_posts_its_signed_json_to_the_key_default_callback(
    service_factory: ServiceFactory, target, receiver: Receiver
) -> None:
    async with service_factory(**FAST_HOOKS) as service:
        # a key with a default callback: its jobs need not name one
        created, key = await service.services.keys.create("hooked", callback_url=receiver.url("k"))
        headers = {"Authorization": f"Bearer {created.token}"}
        response = await service.client.post(
            "/api/v1/jobs", json={"url": target.url("/page/7")}, headers=headers
        )
        job_id = response.json()["id"]
        [got] = await receiver.wait_for("k")
        deliveries = await wait_delivered(service, job_id, headers)
        job = (await service.client.get(f"/api/v1/jobs/{job_id}", headers=headers)).json()

    assert key.webhook_secret
    assert verify_signature(
        key.webhook_secret,
        got.body,
        got.headers["X-TaskCrawler-Timestamp"],
        got.headers["X-TaskCrawler-Signature"],
    )
    assert got.headers["X-TaskCrawler-Event"] == "job.completed"
    assert got.headers["Content-Type"] == "application/json"
    # the body is the job exactly as the API shows it
    assert json.loads(got.body) == job
    [delivery] = deliveries
    assert delivery["id"] == got.headers["X-TaskCrawler-Delivery"]
    assert delivery["job_id"] == job_id
    assert (delivery["status"], delivery["attempts"]) == ("DELIVERED", 1)
    assert delivery["last_status_code"] == 204 and delivery["last_error"] is None
    assert delivery["event"] == "job.completed" and delivery["url"] == receiver.url("k")
    assert delivery["delivered_at"] is not None


async def test_a_failing_receiver_is_retried_until_it_answers(
    service_factory: ServiceFactory, target, receiver: Receiver
) -> None:
    async with service_factory(**FAST_HOOKS) as service:
        callback = receiver.url("flaky", fail=2, code=503)
        response = await service.client.post(
            "/api/v1/jobs", json={"url": target.url("/status/404"), "callback_url": callback}
        )
        job_id = response.json()["id"]
        [delivery] = await wait_delivered(service, job_id)
    attempts = receiver.for_name("flaky")
    assert [r.answered for r in attempts] == [503, 503, 204]
    assert len({r.headers["X-TaskCrawler-Delivery"] for r in attempts}) == 1
    for attempt in attempts:  # the anonymous tenant signs with TASKCRAWLER_WEBHOOK_SECRET
        assert attempt.headers["X-TaskCrawler-Event"] == "job.failed"
        assert verify_signature(
            "anonymous-secret",
            attempt.body,
            attempt.headers["X-TaskCrawler-Timestamp"],
            attempt.headers["X-TaskCrawler-Signature"],
        )
    assert (delivery["status"], delivery["attempts"]) == ("DELIVERED", 3)
    assert delivery["event"] == "job.failed"
    assert delivery["last_status_code"] == 204


async def test_a_receiver_that_never_answers_ends_failed_with_its_last_error(
    service_factory: ServiceFactory, target, receiver: Receiver
) -> None:
    async with service_factory(**FAST_HOOKS, webhook_max_attempts=2) as service:
        callback = receiver.url("down", fail=99, code=500)
        job = await service.client.post(
            "/api/v1/jobs", json={"url": target.url("/page/1"), "callback_url": callback}
        )
        [delivery] = await wait_delivered(service, job.json()["id"])
    assert (delivery["status"], delivery["attempts"]) == ("FAILED", 2)
    assert delivery["last_status_code"] == 500
    assert delivery["last_error"].startswith("http_500")
    assert len(receiver.for_name("down")) == 2


async def test_a_blocked_callback_is_blocked_without_a_request(
    service_factory: ServiceFactory, target, receiver: Receiver
) -> None:
    # Fetching the local target is allowed; webhooks keep the guard on.
    async with service_factory(**FAST_HOOKS, webhook_allow_private_networks=False) as service:
        scraped = await service.client.post(
            "/api/v1/jobs",
            json={"url": target.url("/page/2"), "callback_url": receiver.url("inward")},
        )
        job_id = scraped.json()["id"]
        [delivery] = await wait_delivered(service, job_id)
        assert (await service.wait_for(job_id))["status"] == "COMPLETED"
    assert receiver.received == []
    assert (delivery["status"], delivery["attempts"]) == ("BLOCKED", 0)
    assert delivery["last_status_code"] is None
    assert delivery["last_error"].startswith("blocked_address: the address 127.0.0.1 is blocked")


async def test_deliveries_are_visible_to_the_jobs_owner_only(
    service_factory: ServiceFactory, target, receiver: Receiver
) -> None:
    async with service_factory(**FAST_HOOKS) as service:
        alice, bob = await service.new_key("alice"), await service.new_key("bob")
        job = await service.client.post(
            "/api/v1/jobs",
            json={"url": target.url("/page/3"), "callback_url": receiver.url("alice")},
            headers=alice,
        )
        job_id = job.json()["id"]
        assert len(await wait_delivered(service, job_id, alice)) == 1
        path = f"/api/v1/jobs/{job_id}/deliveries"
        assert (await service.client.get(path, headers=bob)).status_code == 404
        assert (await service.client.get(path)).status_code == 404  # anonymous tenant
        unknown = "/api/v1/jobs/00000000-0000-0000-0000-000000000000/deliveries"
        assert (await service.client.get(unknown, headers=alice)).status_code == 404
        assert (await service.client.get("/api/v1/jobs/nope/deliveries")).status_code == 422
        # a job without a callback has no deliveries
        quiet = await service.client.post(
            "/api/v1/jobs", json={"url": target.url("/page/4")}, headers=alice
        )
        await wait_final(service, quiet.json()["id"], alice)
        listed = await service.client.get(
            f"/api/v1/jobs/{quiet.json()['id']}/deliveries", headers=alice
        )
        assert listed.status_code == 200 and listed.json() == []


def _signed_with(secret: str, received: Any) -> bool:
    return verify_signature(
        secret,
        received.body,
        received.headers["X-TaskCrawler-Timestamp"],
        received.headers["X-TaskCrawler-Signature"],
    )


async def test_an_admin_rotates_a_keys_webhook_secret_and_only_the_new_one_signs(
    service_factory: ServiceFactory, target, receiver: Receiver
) -> None:
    async with service_factory(**FAST_HOOKS) as service:
        admin = await service.new_key("root", is_admin=True)
        created = await service.client.post(
            "/api/v1/keys",
            json={"name": "hooked", "callback_url": receiver.url("rotating")},
            headers=admin,
        )
        assert created.status_code == 201, created.text
        key = created.json()
        tenant = {"Authorization": f"Bearer {key['key']}"}
        first = await service.client.post(
            "/api/v1/jobs", json={"url": target.url("/page/21")}, headers=tenant
        )
        [before] = await receiver.wait_for("rotating")

        rotated = await service.client.post(
            f"/api/v1/keys/{key['id']}/webhook-secret", headers=admin
        )
        assert rotated.status_code == 200, rotated.text
        new_secret = rotated.json()["webhook_secret"]
        second = await service.client.post(
            "/api/v1/jobs", json={"url": target.url("/page/22")}, headers=tenant
        )
        [_, after] = await receiver.wait_for("rotating", 2)
        listed = (await service.client.get("/api/v1/keys", headers=admin)).json()

    assert first.status_code == second.status_code == 201
    assert len(key["webhook_secret"]) == len(new_secret) == 64
    assert new_secret != key["webhook_secret"]
    assert rotated.json()["id"] == key["id"] and "key" not in rotated.json()
    assert _signed_with(key["webhook_secret"], before)
    assert _signed_with(new_secret, after) and not _signed_with(key["webhook_secret"], after)
    assert all("webhook_secret" not in listed_key for listed_key in listed)  # shown once


async def test_rotating_a_secret_needs_an_admin_and_an_active_key(service: Service) -> None:
    admin = await service.new_key("root", is_admin=True)
    tenant_token, tenant = await service.services.keys.create("tenant")
    tenant_headers = {"Authorization": f"Bearer {tenant_token.token}"}
    path = f"/api/v1/keys/{tenant.id}/webhook-secret"
    assert (await service.client.post(path, headers=tenant_headers)).status_code == 403
    assert (await service.client.post(path)).status_code == 403  # anonymous: no admin
    unknown = await service.client.post(
        "/api/v1/keys/0123456789abcdef/webhook-secret", headers=admin
    )
    assert unknown.status_code == 404
    malformed = await service.client.post(
        "/api/v1/keys/not%20an%20id/webhook-secret", headers=admin
    )
    assert malformed.status_code == 422
    assert malformed.json()["detail"][0]["loc"] == ["path", "key_id"]
    assert (
        await service.client.delete(f"/api/v1/keys/{tenant.id}", headers=admin)
    ).status_code == 204
    assert (await service.client.post(path, headers=admin)).status_code == 404  # revoked
    [stored] = [k for k in await service.services.keys.list_keys() if k.id == tenant.id]
    assert stored.webhook_secret == tenant.webhook_secret  # nothing changed by the refusals
