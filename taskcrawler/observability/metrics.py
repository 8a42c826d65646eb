"""Prometheus collectors of one process: the API's, a worker's, and the queue's depth.

The hot path only increments counters and observes histograms (no per-job labels beyond
``error_code``, whose values are a small fixed set). Gauges that need I/O, such as the queue's
depth, are read when Prometheus scrapes, not while jobs run.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Sequence

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from taskcrawler.domain import ServiceUnavailable
from taskcrawler.domain.transitions import Transition, TransitionKind

log = logging.getLogger(__name__)

__all__ = [
    "CONTENT_TYPE_LATEST",
    "ApiMetrics",
    "QueueDepth",
    "WorkerMetrics",
    "process_registry",
    "render_metrics",
]


def process_registry() -> CollectorRegistry:
    """A registry for one process, with its CPU seconds and memory (``process_*``, read from
    /proc when scraped): a worker whose CPU rate nears 1.0 has filled its one core."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    return registry


#: Seconds. A fetch is bounded by TASKCRAWLER_FETCH_TIMEOUT_SECONDS (default 20).
FETCH_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0)
#: Seconds from submission to a final state: retries with backoff can take minutes.
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0,
                   1800.0, 3600.0)  # fmt: skip
#: A scrape waits at most this long for the queue's depth.
DEPTH_TIMEOUT_SECONDS = 2.0


class ApiMetrics:
    """Counted by the API process."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.jobs_created = Counter(
            "taskcrawler_jobs_created",
            "Jobs created by this API process (a duplicate submission creates none).",
            registry=registry,
        )

    def created(self, count: int) -> None:
        if count:
            self.jobs_created.inc(count)


class WorkerMetrics:
    """Counted by a worker; in ``taskcrawler serve`` they share the API's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.completed = Counter(
            "taskcrawler_jobs_completed",
            "Jobs this worker completed (304 Not Modified re-fetches included).",
            registry=registry,
        )
        self.failed = Counter(
            "taskcrawler_jobs_failed",
            "Jobs this worker failed for good, by error code.",
            ["error_code"],
            registry=registry,
        )
        self.retried = Counter(
            "taskcrawler_jobs_retried",
            "Attempts that failed transiently and were scheduled for a retry, by error code.",
            ["error_code"],
            registry=registry,
        )
        self.deferred = Counter(
            "taskcrawler_jobs_deferred",
            "Jobs rescheduled without counting an attempt (their host was busy).",
            registry=registry,
        )
        self.claimed = Counter(
            "taskcrawler_jobs_claimed",
            "Jobs this worker claimed (a job claims once per attempt; a deferral claims again).",
            registry=registry,
        )
        self.in_flight = Gauge(
            "taskcrawler_jobs_in_flight",
            "Jobs this worker holds right now (fetching, extracting or saving).",
            registry=registry,
        )
        self.fetch_seconds = Histogram(
            "taskcrawler_fetch_duration_seconds",
            "Duration of one fetch attempt, failed ones included.",
            buckets=FETCH_BUCKETS,
            registry=registry,
        )
        self.job_latency_seconds = Histogram(
            "taskcrawler_job_latency_seconds",
            "From a job's creation to its final state (COMPLETED or FAILED), first runs only.",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.render_available = Gauge(
            "taskcrawler_render_available",
            "1 when this worker has a browser to render pages with, else 0.",
            registry=registry,
        )
        self.renderer = RendererCollector(lambda: {})
        registry.register(self.renderer)

    def track_rendering(self, available: bool, stats: Callable[[], dict[str, float]]) -> None:
        """Whether this worker can render, and where its renderer's counters are read."""
        self.render_available.set(1 if available else 0)
        self.renderer.stats = stats

    def track_in_flight(self, count: Callable[[], int]) -> None:
        """Read the in-flight count when scraped: nothing to update per job."""
        self.in_flight.set_function(count)

    def record(self, transition: Transition) -> None:
        kind = transition.kind
        if kind in (TransitionKind.COMPLETED, TransitionKind.UNCHANGED):
            self.completed.inc()
        elif kind is TransitionKind.RETRIED:
            self.retried.labels(transition.error_code).inc()
        elif kind is TransitionKind.DEFERRED:
            self.deferred.inc()
            return
        else:
            self.failed.labels(transition.error_code).inc()
        if kind is not TransitionKind.RETRIED:
            outcome = transition.outcome
            job = outcome.job
            # A re-run (max_age, retry) keeps its old created_at: its latency would be the age.
            if job.created_at is not None and job.run_count == 0:
                latency = (outcome.finished_at - job.created_at).total_seconds()
                self.job_latency_seconds.observe(max(latency, 0.0))


#: The renderer's counters (``taskcrawler_render_<name>_total``), with their help.
RENDER_COUNTERS = {
    "rendered": "Pages rendered in the browser.",
    "failed": "Renders that failed (timeouts and crashes included).",
    "timeouts": "Renders whose page kept the browser busy past the deadline.",
    "crashes": "Renders the browser or the page's renderer died in.",
    "launches": "Browsers started (the first, and after each recycle or crash).",
    "recycled_after_pages": "Browsers restarted after TASKCRAWLER_BROWSER_RECYCLE_PAGES pages.",
    "recycled_for_memory": "Browsers restarted above TASKCRAWLER_BROWSER_MAX_RSS_MB.",
    "blocked_requests": "Requests of rendered pages refused by the address guard.",
}
RENDER_GAUGES = {
    "browser_processes": "Live processes of this worker's browser.",
    "browser_resident_bytes": "Resident memory of this worker's browser processes (a sum).",
}


class RendererCollector:
    """The renderer's counters and its browser's processes and memory, read when scraped
    (zero in a worker without a browser)."""

    def __init__(self, stats: Callable[[], dict[str, float]]) -> None:
        self.stats = stats

    def collect(self) -> Iterable[Metric]:
        values = self.stats()
        for name, help_text in RENDER_COUNTERS.items():
            yield CounterMetricFamily(
                f"taskcrawler_render_{name}", help_text, value=values.get(name, 0.0)
            )
        for name, help_text in RENDER_GAUGES.items():
            yield GaugeMetricFamily(f"taskcrawler_{name}", help_text, value=values.get(name, 0.0))


class QueueDepth:
    """``taskcrawler_queue_depth``, read from the queue when scraped (NaN if it is down)."""

    def __init__(
        self, registry: CollectorRegistry, source: Callable[[], Awaitable[int]] | None = None
    ) -> None:
        #: The queue's ``depth``; set by whoever owns the queue (the API's lifespan).
        self.source = source
        self.gauge = Gauge(
            "taskcrawler_queue_depth",
            "Job ids waiting in the queue (a hint: the database is the truth).",
            registry=registry,
        )

    async def refresh(self) -> None:
        if self.source is None:
            self.gauge.set(math.nan)
            return
        try:
            value = float(await asyncio.wait_for(self.source(), DEPTH_TIMEOUT_SECONDS))
        except (ServiceUnavailable, TimeoutError) as exc:
            log.warning("queue depth unavailable: %s", exc)
            value = math.nan
        self.gauge.set(value)


async def render_metrics(
    registry: CollectorRegistry, refresh: Iterable[QueueDepth] = (), children: Sequence[str] = ()
) -> bytes:
    """The Prometheus text exposition of ``registry``, after refreshing the scrape-time gauges,
    with the series of the child processes whose expositions are ``children``."""
    for gauge in refresh:
        await gauge.refresh()
    if not children:
        return generate_latest(registry)
    return generate_latest(_Merged(registry, children))


#: The label that tells a worker process's series from the API's where both have one by a name.
CHILD_LABEL = ("process", "worker")


class _Merged:
    """``own``'s families and those of the children's expositions, as one exposition.

    A child's series keep their names (``taskcrawler_jobs_completed`` reads the same under
    ``serve`` as from ``taskcrawler worker``). A family both processes have (``process_*``: CPU
    and memory) is one family whose child samples carry ``process="worker"``.
    """

    def __init__(self, own: CollectorRegistry, children: Sequence[str]) -> None:
        self.own = own
        self.children = children

    def collect(self) -> Iterable[Metric]:
        families = {family.name: family for family in self.own.collect()}
        own_names = set(families)
        for text in self.children:
            try:
                parsed = list(text_string_to_metric_families(text))
            except ValueError as exc:
                log.warning("worker process metrics unreadable: %s", exc)
                continue
            for family in parsed:
                mine = families.get(family.name)
                if mine is None:
                    families[family.name] = family
                elif family.name in own_names and mine.type == family.type:
                    mine.samples.extend(_labelled(sample) for sample in family.samples)
        return list(families.values())


def _labelled(sample: Sample) -> Sample:
    name, value = CHILD_LABEL
    return sample._replace(labels={**sample.labels, name: value})
