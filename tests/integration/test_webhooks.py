"""Webhooks on both backends: the outbox is written with the outcome, dispatchers share the table
safely, and callback URLs pass the address guard."""

import asyncio
import dataclasses
import ipaddress
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from taskcrawler.domain import ClaimedJob, ErrorCode, JobStatus, Outcome
from taskcrawler.domain.views import job_document
from taskcrawler.domain.webhooks import DeliveryStatus, verify_signature
from taskcrawler.fetch import AddressGuard
from taskcrawler.settings import Settings
from taskcrawler.storage import Database, JobStore, KeyStore, NewJob, WorkStore
from taskcrawler.storage import webhooks as outbox
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.rows import utcnow
from taskcrawler.storage.tables import jobs, webhook_deliveries
from taskcrawler.storage.webhooks import WebhookStore
from taskcrawler.worker.webhooks import WebhookDispatcher
from tests.support.counted_writes import CountedWrites
from tests.support.hostile import StaticResolver
from tests.support.transitions import decided, lost_attempts
from tests.support.webhook_receiver import Receiver, webhook_receiver

HOOK = "https://hooks.example.com/in"


@dataclass
class Stores:
    db: Database
    jobs: JobStore
    work: WorkStore
    hooks: WebhookStore


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Stores]:
    db = open_database(database_url, pool_size=20)
    yield Stores(db, JobStore(db), WorkStore(db), WebhookStore(db))
    await db.close()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with webhook_receiver() as running:
        yield running


async def claimed_jobs(
    store: Stores, count: int = 1, *, callback_url: str | None = HOOK, owner: str = ""
) -> list[ClaimedJob]:
    created = await store.jobs.create_jobs(
        [
            NewJob(f"http://site.test/{uuid.uuid4()}", owner=owner, callback_url=callback_url)
            for _ in range(count)
        ],
        redispatch_after=30,
    )
    return await store.work.claim(
        [c.job.id for c in created], lease_seconds=30, redispatch_after=30
    )


def completed(job: ClaimedJob) -> Outcome:
    return Outcome(job=job, http_status=200, final_url=job.url, scraped_title="T", result={})


async def rows(store: Stores) -> list[Any]:
    async with store.db.read() as conn:
        found = await conn.execute(
            sa.select(webhook_deliveries).order_by(webhook_deliveries.c.created_at)
        )
        return list(found)


async def record(store: Stores, outcomes: list[Outcome], max_retries: int = 3) -> None:
    await store.work.record_transitions(decided(outcomes, max_retries=max_retries))


# --- the outbox ---------------------------------------------------------------------------


async def test_a_completed_job_gets_a_delivery_of_its_api_json(store: Stores) -> None:
    [job] = await claimed_jobs(store, owner="k1")
    assert job.callback_url == HOOK
    await record(store, [completed(job)])
    [row] = await rows(store)
    shown = await store.jobs.get_job(job.id, owner="k1")
    assert shown is not None and shown.status is JobStatus.COMPLETED
    assert (row.job_id, row.owner, row.url, row.event) == (job.id, "k1", HOOK, "job.completed")
    assert (row.status, row.attempts) == ("PENDING", 0)
    assert row.next_attempt_at <= utcnow()
    assert row.payload == job_document(shown)


async def test_only_final_outcomes_with_a_callback_get_deliveries(store: Stores) -> None:
    failed, retried, silent, done = await claimed_jobs(store, 3) + await claimed_jobs(
        store, callback_url=None
    )
    await record(
        store,
        [
            Outcome(job=failed, http_status=404, error_code="http_404", error_message="gone"),
            Outcome(job=retried, error_code=ErrorCode.CONNECT, error_message="x", transient=True),
            completed(done),  # no callback_url
            completed(silent),
        ],
    )
    found = {row.job_id: row.event for row in await rows(store)}
    assert found == {failed.id: "job.failed", silent.id: "job.completed"}
    [failed_row] = [r for r in await rows(store) if r.job_id == failed.id]
    assert failed_row.payload["error_code"] == "http_404"
    assert failed_row.payload["status"] == "FAILED"


async def test_an_outcome_that_lost_its_lease_creates_no_delivery(store: Stores) -> None:
    [job] = await claimed_jobs(store)
    late = dataclasses.replace(job, lease_token=uuid.uuid4())  # another worker holds it now
    await record(store, [completed(late)])
    assert await rows(store) == []
    # whoever holds the lease creates exactly one delivery
    await record(store, [completed(job), completed(late)])
    assert len(await rows(store)) == 1


async def test_no_outcome_is_persisted_without_its_delivery(
    store: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    [job] = await claimed_jobs(store)

    def broken(*_: object) -> int:
        raise RuntimeError("outbox insert failed")

    monkeypatch.setattr(outbox, "_insert", broken)
    with pytest.raises(RuntimeError):
        await record(store, [completed(job)])
    still = await store.jobs.get_job(job.id)
    assert still is not None and still.status is JobStatus.PROCESSING  # rolled back together
    monkeypatch.undo()
    await record(store, [completed(job)])
    assert len(await rows(store)) == 1


async def test_a_job_failed_by_the_sweeper_gets_a_delivery(store: Stores) -> None:
    [job] = await claimed_jobs(store)
    async with store.db.write() as conn:
        await conn.execute(
            jobs.update()
            .where(jobs.c.id == job.id)
            .values(lease_expires_at=utcnow() - timedelta(seconds=1))
        )
    [lost] = await store.work.recover_expired_leases(lost_attempts(max_retries=0))
    assert lost.status is JobStatus.FAILED
    [row] = await rows(store)
    assert (row.job_id, row.event) == (job.id, "job.failed")
    assert row.payload["error_code"] == "worker_lost"


# --- claiming -----------------------------------------------------------------------------


async def test_dispatchers_claim_disjoint_batches_under_a_lease(store: Stores) -> None:
    jobs_ = await claimed_jobs(store, 30)
    await record(store, [completed(j) for j in jobs_])
    other = WebhookStore(open_database(str(store.db.engine.url), pool_size=5))
    try:
        a, b = await asyncio.gather(
            store.hooks.claim_due(limit=20, lease_seconds=30, default_secret=None),
            other.claim_due(limit=20, lease_seconds=30, default_secret=None),
        )
    finally:
        await other.db.close()
    ids_a, ids_b = {d.id for d in a}, {d.id for d in b}
    assert not ids_a & ids_b
    assert len(ids_a | ids_b) == 30
    assert all(d.attempts == 1 for d in [*a, *b])
    # leased: not due again until the lease ends
    assert await store.hooks.claim_due(limit=50, lease_seconds=30, default_secret=None) == []


async def test_a_poll_with_nothing_due_takes_no_writer_and_one_due_is_claimed(
    store: Stores,
) -> None:
    # Every worker polls once a second; on SQLite the writer is the API's too.
    counted = CountedWrites(store.db)
    hooks = WebhookStore(counted)  # type: ignore[arg-type]
    assert await hooks.claim_due(limit=5, lease_seconds=30, default_secret=None) == []
    assert counted.writes == 0
    [job] = await claimed_jobs(store)
    await record(store, [completed(job)])
    [claimed] = await hooks.claim_due(limit=5, lease_seconds=30, default_secret=None)
    assert (claimed.job_id, counted.writes) == (job.id, 1)


async def test_a_late_result_after_the_lease_passed_on_changes_nothing(store: Stores) -> None:
    [job] = await claimed_jobs(store)
    await record(store, [completed(job)])
    [first] = await store.hooks.claim_due(limit=5, lease_seconds=0, default_secret=None)
    [second] = await store.hooks.claim_due(limit=5, lease_seconds=30, default_secret=None)
    assert (first.id, first.attempts, second.attempts) == (second.id, 1, 2)
    late = await store.hooks.finish_attempt(
        first, status=DeliveryStatus.FAILED, status_code=500, error="late"
    )
    assert not late
    assert await store.hooks.finish_attempt(
        second, status=DeliveryStatus.DELIVERED, status_code=200, error=None
    )
    [row] = await rows(store)
    assert (row.status, row.attempts, row.last_status_code) == ("DELIVERED", 2, 200)


async def test_each_delivery_is_signed_with_its_owners_secret(store: Stores) -> None:
    _, key = await KeyStore(store.db).create("tenant")
    [mine] = await claimed_jobs(store, owner=key.owner)
    [anonymous] = await claimed_jobs(store)
    await record(store, [completed(mine), completed(anonymous)])
    claimed = await store.hooks.claim_due(limit=5, lease_seconds=30, default_secret="default")
    secrets = {d.job_id: d.secret for d in claimed}
    assert secrets == {mine.id: key.webhook_secret, anonymous.id: "default"}


# --- the dispatcher -----------------------------------------------------------------------


def hook_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "allow_private_networks": True,
        "webhook_retry_base_seconds": 0.0,
        "webhook_timeout_seconds": 2.0,
        "webhook_max_attempts": 3,
        "webhook_secret": "anon-secret",
    }
    return Settings(**(values | overrides))


async def deliver_all(dispatcher: WebhookDispatcher, *, rounds: int = 10) -> None:
    for _ in range(rounds):
        await dispatcher.dispatch_due()
    await dispatcher.close()


async def test_delivered_signed_and_retried_until_the_receiver_answers(
    store: Stores, receiver: Receiver
) -> None:
    [ok] = await claimed_jobs(store, callback_url=receiver.url("ok"))
    [flaky] = await claimed_jobs(store, callback_url=receiver.url("flaky", fail=2, code=503))
    [down] = await claimed_jobs(store, callback_url=receiver.url("down", fail=99))
    await record(store, [completed(ok), completed(flaky), completed(down)])
    await deliver_all(WebhookDispatcher(hook_settings(), store.hooks))

    [got] = receiver.for_name("ok")
    assert verify_signature(
        "anon-secret",
        got.body,
        got.headers["X-TaskCrawler-Timestamp"],
        got.headers["X-TaskCrawler-Signature"],
    )
    assert got.headers["X-TaskCrawler-Event"] == "job.completed"
    assert len(receiver.for_name("flaky")) == 3
    # every attempt of one delivery carries the same delivery id
    assert len({r.headers["X-TaskCrawler-Delivery"] for r in receiver.for_name("flaky")}) == 1
    assert len(receiver.for_name("down")) == 3  # webhook_max_attempts
    by_job = {row.job_id: row for row in await rows(store)}
    assert (by_job[ok.id].status, by_job[ok.id].attempts) == ("DELIVERED", 1)
    assert (by_job[flaky.id].status, by_job[flaky.id].attempts) == ("DELIVERED", 3)
    assert by_job[flaky.id].last_status_code == 204 and by_job[flaky.id].last_error is None
    down_row = by_job[down.id]
    assert (down_row.status, down_row.attempts, down_row.last_status_code) == ("FAILED", 3, 500)
    assert down_row.last_error.startswith("http_500")
    assert down_row.delivered_at is None and down_row.next_attempt_at is None


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "2130706433"])
async def test_callbacks_to_blocked_addresses_are_blocked_without_a_request(
    store: Stores, receiver: Receiver, host: str
) -> None:
    # "localhost" is refused by the resolver, the literals before any lookup: both send nothing,
    # so neither counts as an attempt.
    url = receiver.url("blocked").replace("127.0.0.1", host)
    [job] = await claimed_jobs(store, callback_url=url)
    await record(store, [completed(job)])
    guarded = hook_settings(allow_private_networks=True, webhook_allow_private_networks=False)
    await deliver_all(WebhookDispatcher(guarded, store.hooks))
    assert receiver.received == []
    [row] = await rows(store)
    assert (row.status, row.attempts, row.last_status_code) == ("BLOCKED", 0, None)
    assert row.last_error.startswith("blocked_address: the address")
    assert row.next_attempt_at is None and row.delivered_at is None


async def test_the_guard_vets_every_attempt_at_delivery_time(
    store: Stores, receiver: Receiver
) -> None:
    # As in production, except that 127.0.0.1 counts as public: "hooks.test" reaches the
    # receiver, and then its DNS answer moves inward (rebinding) before the retry.
    port = receiver.port
    [steady] = await claimed_jobs(store, callback_url=f"http://hooks.test:{port}/hook/steady")
    [moving] = await claimed_jobs(
        store, callback_url=f"http://rebind.test:{port}/hook/moving?fail=1"
    )
    await record(store, [completed(steady), completed(moving)])
    public = ipaddress.ip_address("127.0.0.1")
    dns = StaticResolver(
        {"hooks.test": ["127.0.0.1"], "rebind.test": [["127.0.0.1"], ["127.0.0.2"]]}
    )

    def dispatcher() -> WebhookDispatcher:
        return WebhookDispatcher(
            hook_settings(allow_private_networks=False),
            store.hooks,
            guard=AddressGuard(allow=lambda ip: ip == public),
            resolver=dns,
        )

    await deliver_all(dispatcher(), rounds=1)
    # The retry runs elsewhere (another worker: no pooled connection to reuse) and resolves again.
    await deliver_all(dispatcher())
    by_job = {row.job_id: row for row in await rows(store)}
    assert by_job[steady.id].status == "DELIVERED"
    assert len(receiver.for_name("moving")) == 1  # the first attempt, answered 500
    # The retry was refused before connecting: one POST sent, and the refusal recorded as such.
    assert (by_job[moving.id].status, by_job[moving.id].attempts) == ("BLOCKED", 1)
    assert by_job[moving.id].last_error.startswith("blocked_address: the address 127.0.0.2")


async def test_a_reason_phrase_that_cannot_be_stored_is_recorded_cleaned(store: Stores) -> None:
    # aiohttp keeps a NUL of the status line and decodes bytes that are not UTF-8 to lone
    # surrogates: neither database stores them, and an attempt that cannot be recorded would be
    # claimed (and POSTed) again when its lease ends, for ever.
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 500 Bad\x00Thing\xff\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        [job] = await claimed_jobs(store, callback_url=f"http://127.0.0.1:{port}/hook")
        await record(store, [completed(job)])
        dispatcher = WebhookDispatcher(hook_settings(webhook_max_attempts=1), store.hooks)
        await deliver_all(dispatcher, rounds=1)
    finally:
        server.close()
        await server.wait_closed()
    [row] = await rows(store)
    assert (row.status, row.attempts, row.last_status_code) == ("FAILED", 1, 500)
    assert row.last_error == "http_500: Bad\ufffdThing\ufffd"


async def test_a_jobs_deliveries_are_its_last_ones_oldest_first(store: Stores) -> None:
    """A monitored page's deliveries grow by one a run without end: the list is its last
    ``limit``, oldest first, another tenant's none."""
    [job] = await claimed_jobs(store, owner="k1")
    start = utcnow()
    ids = [uuid.uuid4() for _ in range(5)]
    async with store.db.write() as conn:
        await conn.execute(
            webhook_deliveries.insert(),
            [
                {
                    "id": ids[run],
                    "job_id": job.id,
                    "owner": "k1",
                    "url": HOOK,
                    "event": "job.completed",
                    "payload": {"run": run},
                    "status": "DELIVERED",
                    "created_at": start + timedelta(seconds=run),
                }
                for run in range(5)
            ],
        )
    last = await store.hooks.list_for_job(job.id, owner="k1", limit=3)
    every = await store.hooks.list_for_job(job.id, owner="k1", limit=10)
    assert [d.id for d in last] == ids[2:]
    assert [d.id for d in every] == ids
    assert await store.hooks.list_for_job(job.id, owner="k2", limit=10) == []
