"""Metrics (Prometheus) and log context: what an operator watches.

Nothing here is created at import time: every app and worker builds its own
:class:`~prometheus_client.CollectorRegistry`, so tests can run several in one process.
"""

from typing import TYPE_CHECKING, Any

from taskcrawler.observability.logs import JobContextFilter, TextFormatter, bind_job, log_transition

if TYPE_CHECKING:
    from taskcrawler.observability.metrics import (
        ApiMetrics,
        QueueDepth,
        WorkerMetrics,
        process_registry,
        render_metrics,
    )

_METRICS = frozenset(
    {"ApiMetrics", "QueueDepth", "WorkerMetrics", "process_registry", "render_metrics"}
)


def __getattr__(name: str) -> Any:
    """The metrics, imported on first use: a command that only logs (``taskcrawler jobs``) has
    no use for prometheus_client."""
    if name in _METRICS:
        from taskcrawler.observability import metrics

        return getattr(metrics, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
