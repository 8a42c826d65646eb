"""Metrics and log context, without a database: classification, counters, histograms, gauges,
registries per instance, and job_id on log lines."""

from __future__ import annotations

import asyncio
import logging
import math
import uuid
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from taskcrawler.api import create_app
from taskcrawler.cli.logs import JsonFormatter
from taskcrawler.domain import ClaimedJob, Outcome, QueueUnavailable
from taskcrawler.observability import (
    ApiMetrics,
    JobContextFilter,
    QueueDepth,
    TextFormatter,
    WorkerMetrics,
    bind_job,
    log_transition,
    render_metrics,
)
from taskcrawler.observability.http import MetricsEndpoint, serve_metrics
from taskcrawler.settings import Settings
from tests.support.services import free_port
from tests.support.transitions import decided

CREATED = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def claimed(retry_count: int = 0, run_count: int = 0) -> ClaimedJob:
    return ClaimedJob(
        uuid.uuid4(),
        "https://example.com/",
        retry_count,
        uuid.uuid4(),
        created_at=CREATED,
        run_count=run_count,
    )


def done(job: ClaimedJob, seconds: float = 3.0, **fields: object) -> Outcome:
    return Outcome(job=job, finished_at=CREATED + timedelta(seconds=seconds), **fields)  # type: ignore[arg-type]


def error(job: ClaimedJob, code: str, *, transient: bool, seconds: float = 3.0) -> Outcome:
    return done(job, seconds, error_code=code, error_message="boom", transient=transient)


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


# --- worker metrics -------------------------------------------------------------------------


def record(metrics: WorkerMetrics, outcome: Outcome) -> None:
    [transition] = decided([outcome], max_retries=3)
    metrics.record(transition)


def test_worker_counters_by_kind_and_error_code() -> None:
    metrics = WorkerMetrics(registry := CollectorRegistry())
    record(metrics, done(claimed(), http_status=200))
    record(metrics, done(claimed(), http_status=200))
    record(metrics, error(claimed(), "http_404", transient=False))
    record(metrics, error(claimed(), "http_5xx", transient=True))
    record(metrics, error(claimed(retry_count=3), "http_5xx", transient=True))
    record(metrics, error(claimed(), "host_busy", transient=True))

    assert sample(registry, "taskcrawler_jobs_completed_total") == 2
    assert sample(registry, "taskcrawler_jobs_failed_total", error_code="http_404") == 1
    assert sample(registry, "taskcrawler_jobs_failed_total", error_code="http_5xx") == 1
    assert sample(registry, "taskcrawler_jobs_retried_total", error_code="http_5xx") == 1
    assert sample(registry, "taskcrawler_jobs_deferred_total") == 1


def test_latency_is_observed_for_final_first_runs_only() -> None:
    metrics = WorkerMetrics(registry := CollectorRegistry())
    record(metrics, done(claimed(), seconds=2.0, http_status=200))  # observed: 2 s
    record(metrics, error(claimed(), "http_404", transient=False, seconds=0.2))  # observed
    record(metrics, error(claimed(), "timeout", transient=True))  # retried: not final
    record(metrics, error(claimed(), "host_busy", transient=True))  # deferred: not final
    record(metrics, done(claimed(run_count=1), seconds=86400.0))  # a re-run: its age, not latency
    no_created = ClaimedJob(uuid.uuid4(), "https://example.com/", 0, uuid.uuid4())
    record(metrics, done(no_created))

    assert sample(registry, "taskcrawler_job_latency_seconds_count") == 2
    assert sample(registry, "taskcrawler_job_latency_seconds_sum") == pytest.approx(2.2)
    assert sample(registry, "taskcrawler_job_latency_seconds_bucket", le="0.25") == 1
    assert sample(registry, "taskcrawler_job_latency_seconds_bucket", le="2.5") == 2


def test_in_flight_is_read_when_scraped() -> None:
    metrics = WorkerMetrics(registry := CollectorRegistry())
    held: set[int] = {1, 2, 3}
    metrics.track_in_flight(lambda: len(held))
    assert sample(registry, "taskcrawler_jobs_in_flight") == 3
    held.clear()
    assert sample(registry, "taskcrawler_jobs_in_flight") == 0


def test_fetch_duration_histogram_times_a_block() -> None:
    metrics = WorkerMetrics(registry := CollectorRegistry())
    with metrics.fetch_seconds.time():
        pass
    assert sample(registry, "taskcrawler_fetch_duration_seconds_count") == 1


def test_api_counts_created_jobs() -> None:
    metrics = ApiMetrics(registry := CollectorRegistry())
    metrics.created(1)
    metrics.created(0)
    metrics.created(5)
    assert sample(registry, "taskcrawler_jobs_created_total") == 6


def test_registries_are_per_instance() -> None:
    """No global registry: two apps (or workers) in one process count separately."""
    settings = Settings(database_url="sqlite+aiosqlite:///:memory:")
    first, second = create_app(settings, run_worker=True), create_app(settings, run_worker=True)
    assert first.state.metrics.registry is not second.state.metrics.registry
    a, b = WorkerMetrics(CollectorRegistry()), WorkerMetrics(CollectorRegistry())
    a.completed.inc()
    assert sample(b.registry, "taskcrawler_jobs_completed_total") == 0


def test_api_and_worker_share_one_registry_under_serve() -> None:
    registry = CollectorRegistry()
    ApiMetrics(registry)
    WorkerMetrics(registry)  # no duplicate names between the two
    QueueDepth(registry)
    names = {family.name for family in registry.collect()}
    assert {
        "taskcrawler_jobs_created",
        "taskcrawler_jobs_completed",
        "taskcrawler_queue_depth",
    } <= names


# --- queue depth and rendering --------------------------------------------------------------


async def test_queue_depth_is_read_at_scrape_time() -> None:
    registry = CollectorRegistry()
    depth = 7

    async def read() -> int:
        return depth

    gauge = QueueDepth(registry, read)
    text = (await render_metrics(registry, [gauge])).decode()
    assert "taskcrawler_queue_depth 7.0" in text
    depth = 0
    await gauge.refresh()
    assert sample(registry, "taskcrawler_queue_depth") == 0


async def test_queue_depth_is_nan_when_the_queue_is_down_or_unknown() -> None:
    registry = CollectorRegistry()

    async def down() -> int:
        raise QueueUnavailable("redis", "connection refused")

    await QueueDepth(registry, down).refresh()
    assert math.isnan(sample(registry, "taskcrawler_queue_depth"))
    other = CollectorRegistry()
    await QueueDepth(other).refresh()
    assert math.isnan(sample(other, "taskcrawler_queue_depth"))


async def test_worker_metrics_server_serves_text_and_survives_a_taken_port() -> None:
    import aiohttp

    registry = CollectorRegistry()
    WorkerMetrics(registry).completed.inc(4)
    endpoint = MetricsEndpoint(registry)
    port = free_port()
    runner = await serve_metrics(endpoint, "127.0.0.1", port)
    assert runner is not None
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/metrics") as response,
        ):
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain")
            text = await response.text()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert families["taskcrawler_jobs_completed"].samples[0].value == 4
        # A second worker on the same machine and port: no metrics, but no crash either.
        assert await serve_metrics(endpoint, "127.0.0.1", port) is None
    finally:
        await runner.cleanup()


# --- logs -----------------------------------------------------------------------------------


def make_record(message: str = "hello", **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("taskcrawler.test", logging.INFO, __file__, 1, message, None, None)
    record.__dict__.update(extra)
    return record


def test_job_id_from_context_reaches_json_and_text_lines() -> None:
    job_id = uuid.uuid4()

    async def in_a_job_task() -> logging.LogRecord:
        bind_job(job_id)
        record = make_record()
        JobContextFilter().filter(record)
        return record

    record = asyncio.run(in_a_job_task())
    assert orjson.loads(JsonFormatter().format(record))["job_id"] == str(job_id)
    assert TextFormatter().format(record).endswith(f"hello [job {job_id}]")


def test_lines_outside_a_job_have_no_job_id() -> None:
    record = make_record()
    JobContextFilter().filter(record)
    assert "job_id" not in orjson.loads(JsonFormatter().format(record))
    assert TextFormatter().format(record).endswith("taskcrawler.test: hello")


def test_explicit_job_id_wins_over_the_context() -> None:
    async def task() -> logging.LogRecord:
        bind_job("from-context")
        record = make_record(job_id="explicit")
        JobContextFilter().filter(record)
        return record

    assert asyncio.run(task()).job_id == "explicit"  # type: ignore[attr-defined]


async def test_concurrent_jobs_keep_their_own_id() -> None:
    seen: dict[str, object] = {}

    async def job(name: str) -> None:
        bind_job(name)
        await asyncio.sleep(0.01)
        record = make_record()
        JobContextFilter().filter(record)
        seen[name] = record.job_id  # type: ignore[attr-defined]

    await asyncio.gather(*(asyncio.create_task(job(f"job-{i}")) for i in range(20)))
    assert seen == {f"job-{i}": f"job-{i}" for i in range(20)}


def test_outcome_lines_debug_for_success_info_for_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="taskcrawler.jobs")
    ok = done(claimed(), http_status=200)
    log_transition(*decided([ok]))
    assert caplog.records == []  # a completed job at INFO would cost more than the job

    failed = error(claimed(), "http_404", transient=False)
    log_transition(*decided([failed]))
    (line,) = caplog.records
    assert line.levelno == logging.INFO
    assert line.job_id == failed.job.id  # type: ignore[attr-defined]
    assert line.error_code == "http_404"  # type: ignore[attr-defined]
    assert "http_404" in line.getMessage()

    caplog.clear()
    caplog.set_level(logging.DEBUG, logger="taskcrawler.jobs")
    log_transition(*decided([ok]))
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
