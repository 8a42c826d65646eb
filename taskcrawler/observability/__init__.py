"""Metrics (Prometheus) and log context: what an operator watches.

Nothing here is created at import time: every app and worker builds its own
:class:`~prometheus_client.CollectorRegistry`, so tests can run several in one process.
"""

from taskcrawler.observability.logs import JobContextFilter, TextFormatter, bind_job, log_transition
from taskcrawler.observability.metrics import (
    ApiMetrics,
    QueueDepth,
    WorkerMetrics,
    process_registry,
    render_metrics,
)

__all__ = [
    "ApiMetrics",
    "JobContextFilter",
    "QueueDepth",
    "TextFormatter",
    "WorkerMetrics",
    "bind_job",
    "log_transition",
    "process_registry",
    "render_metrics",
]
