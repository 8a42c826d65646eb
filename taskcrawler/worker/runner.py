"""What a worker process is run with (its duties, its priority, its collector); the running
itself, which builds the worker, is :func:`taskcrawler.running.run_worker`."""

from __future__ import annotations

import gc
import logging
import os
from dataclasses import dataclass

log = logging.getLogger(__name__)


def lower_priority(nice: int) -> None:
    """Make this process, a worker process, ``nice`` steps nicer (once). Called by the
    processes that are workers alone (``taskcrawler worker`` and its children, ``serve``'s
    worker process), never where a worker runs beside an API."""
    global _niced
    if nice <= 0 or _niced or not hasattr(os, "nice"):
        return
    _niced = True
    try:
        os.nice(nice)
    except OSError as exc:  # not permitted where it runs: the worker works all the same
        log.warning("could not lower the worker's priority by %d: %s", nice, exc)


_niced = False

#: A worker process's young-generation threshold for the garbage collector (Python's default:
#: 700 allocations). A job makes thousands of short-lived objects (its page's texts, rows,
#: headers); at the default the collector ran dozens of times a job and took about 0.05 ms of
#: its CPU, 10,000 took that under 0.01 ms (bench/results/2026-12-06-worker-loop.md). The older
#: generations keep their thresholds: a full collection still follows ten of the next one.
YOUNG_GENERATION_THRESHOLD = 10_000


def collect_less_often() -> None:
    """Raise the collector's young threshold in this process, a worker process (called where
    :func:`lower_priority` is: never in an API's process, whose latency was not measured)."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, middle, old)


@dataclass(frozen=True, slots=True)
class Duties:
    """What a worker process runs beside its jobs.

    The scheduled work (monitors, webhook deliveries, Firecrawl-style hook announcements) is
    found in the database: one process of a ``taskcrawler worker`` does it for all of them, the
    others would only poll for it too (each an idle cost per process). The sweeper publishes to
    the queue: one for all where the processes share it (Redis), one in each where each has a
    queue of its own (no Redis). Every process keeps its own heartbeat: its leases are its own.
    """

    sweeper: bool = True
    scheduled: bool = True


ALL_DUTIES = Duties()
