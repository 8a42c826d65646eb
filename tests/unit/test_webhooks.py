"""Webhook payloads, signatures and backoff: pure functions."""

import hashlib
import hmac
import random
import uuid
from datetime import UTC, datetime

import pytest
from fastapi.encoders import jsonable_encoder

from taskcrawler.contract.jobs import JobOut
from taskcrawler.domain import ErrorCode, FetchError, Job, JobStatus
from taskcrawler.domain.views import job_document
from taskcrawler.domain.webhooks import (
    SIGNATURE_HEADER,
    AttemptResult,
    WebhookEvent,
    delivery_headers,
    encode_body,
    event_for,
    retry_delay,
    signature,
    verify_signature,
)
from taskcrawler.settings import Settings
from taskcrawler.worker.webhooks import _callback_target, _error_result

SECRET = "s3cret"
NOW = 1_700_000_000


def _job(**changes: object) -> Job:
    values: dict[str, object] = {
        "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "url": "https://example.com/a",
        "status": JobStatus.COMPLETED,
        "retry_count": 1,
        "created_at": datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        "started_at": datetime(2026, 1, 2, 3, 4, 6, tzinfo=UTC),
        "finished_at": datetime(2026, 1, 2, 3, 4, 7, 1, tzinfo=UTC),
        "scraped_title": "Ünïcode title",
        "http_status": 200,
        "final_url": "https://example.com/a",
        "content_type": "text/html",
        "result": {"metadata": {"title": "x", "nested": [1, 2.5, None]}},
        "formats": ("metadata", "markdown"),
        "callback_url": "https://hooks.example.com/x",
        "run_count": 2,
    }
    values.update(changes)
    return Job(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "job",
    [_job(), _job(status=JobStatus.FAILED, error_code="http_404", error_log="http_404: gone")],
)
def test_the_payload_is_the_job_as_the_api_shows_it(job: Job) -> None:
    assert job_document(job) == jsonable_encoder(JobOut.of(job))
    assert set(job_document(job)) == set(JobOut.model_fields)


def test_events_are_sent_for_completed_and_failed_only() -> None:
    assert event_for(JobStatus.COMPLETED) is WebhookEvent.JOB_COMPLETED
    assert event_for(JobStatus.FAILED) is WebhookEvent.JOB_FAILED
    for status in (JobStatus.PENDING, JobStatus.PROCESSING, JobStatus.CANCELLED):
        assert event_for(status) is None
        assert event_for(status, crawl_page=True) is None


def test_a_crawl_page_announces_either_outcome_as_crawl_page() -> None:
    assert event_for(JobStatus.COMPLETED, crawl_page=True) is WebhookEvent.CRAWL_PAGE
    assert event_for(JobStatus.FAILED, crawl_page=True) is WebhookEvent.CRAWL_PAGE
    assert WebhookEvent.CRAWL_PAGE.value == "crawl.page"


def test_signature_is_hmac_sha256_over_timestamp_dot_body() -> None:
    body = encode_body(job_document(_job()))
    expected = hmac.new(SECRET.encode(), f"{NOW}.".encode() + body, hashlib.sha256).hexdigest()
    assert signature(SECRET, NOW, body) == f"v1={expected}"


def test_a_receiver_verifies_the_signature() -> None:
    body = encode_body({"a": "é"})
    signed = signature(SECRET, NOW, body)
    assert verify_signature(SECRET, body, str(NOW), signed, now=NOW + 10)
    # several signatures (rotation): any valid one is enough
    assert verify_signature(SECRET, body, str(NOW), f"v1=00, {signed}", now=NOW)


@pytest.mark.parametrize(
    ("secret", "body", "timestamp", "now"),
    [
        ("other", b'{"a":"\xc3\xa9"}', str(NOW), NOW),  # wrong secret
        (SECRET, b'{"a":"e"}', str(NOW), NOW),  # body changed
        (SECRET, b'{"a":"\xc3\xa9"}', str(NOW + 1), NOW),  # timestamp changed
        (SECRET, b'{"a":"\xc3\xa9"}', str(NOW), NOW + 301),  # too old: a replay
        (SECRET, b'{"a":"\xc3\xa9"}', "not-a-number", NOW),
        (SECRET, b'{"a":"\xc3\xa9"}', None, NOW),
    ],
)
def test_a_receiver_refuses_what_does_not_verify(
    secret: str, body: bytes, timestamp: str | None, now: int
) -> None:
    signed = signature(SECRET, NOW, encode_body({"a": "é"}))
    assert not verify_signature(secret, body, timestamp, signed, now=now)


def test_headers_name_event_delivery_and_time_and_sign_when_there_is_a_secret() -> None:
    delivery_id = uuid.uuid4()
    body = b"{}"
    headers = delivery_headers(
        delivery_id=delivery_id, event="job.completed", body=body, secret=SECRET, timestamp=NOW
    )
    assert headers["X-TaskCrawler-Event"] == "job.completed"
    assert headers["X-TaskCrawler-Delivery"] == str(delivery_id)
    assert headers["X-TaskCrawler-Timestamp"] == str(NOW)
    assert headers["Content-Type"] == "application/json"
    assert verify_signature(SECRET, body, str(NOW), headers[SIGNATURE_HEADER], now=NOW)
    unsigned = delivery_headers(
        delivery_id=delivery_id, event="job.failed", body=body, secret=None, timestamp=NOW
    )
    assert SIGNATURE_HEADER not in unsigned


def test_retry_delay_is_full_jitter_under_an_exponential_ceiling() -> None:
    rng = random.Random(7)
    for attempts, ceiling in [(1, 5), (2, 10), (3, 20), (4, 40), (9, 600), (30, 600)]:
        delays = [retry_delay(attempts, base=5, cap=600, rng=rng) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling * 0.8  # spread over the whole range, not fixed


def test_success_is_2xx_only() -> None:
    assert AttemptResult(status_code=200).delivered
    assert AttemptResult(status_code=204).delivered
    for code in (None, 301, 404, 500):
        assert not AttemptResult(status_code=code).delivered


def test_blocked_and_invalid_callbacks_are_not_retried_but_network_errors_are() -> None:
    blocked = _error_result(FetchError(ErrorCode.BLOCKED_ADDRESS, "loopback", transient=False))
    assert not blocked.retryable
    assert blocked.error is not None and blocked.error.startswith("blocked_address: loopback. ")
    # The fix is the webhooks' own setting, not the fetch's.
    assert "TASKCRAWLER_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true" in blocked.error
    invalid = _error_result(FetchError(ErrorCode.INVALID_URL, "bad"))
    assert not invalid.retryable
    refused = _error_result(FetchError(ErrorCode.CONNECT, "refused"))
    assert refused.retryable
    # Refused here, nothing was sent; a refused connection was a POST tried on the network.
    assert (blocked.sent, invalid.sent, refused.sent) == (False, False, True)


def test_a_callback_no_request_can_be_made_to_is_refused_before_sending() -> None:
    for url in ("http://\u2488.example/hook", "http://hooks.example:0/", "ftp://hooks.example/"):
        with pytest.raises(FetchError) as refused:
            _callback_target(url)
        assert refused.value.code == ErrorCode.INVALID_URL
    assert str(_callback_target("https://Hooks.Example/in#x")) == "https://hooks.example/in"


def test_webhook_guard_follows_the_fetch_guard_unless_set() -> None:
    assert Settings(allow_private_networks=True).webhooks_reach_private_networks
    assert not Settings(allow_private_networks=False).webhooks_reach_private_networks
    split = Settings(allow_private_networks=True, webhook_allow_private_networks=False)
    assert not split.webhooks_reach_private_networks
