"""A worker running in the test's event loop, for tests that drive the monitor scheduler.

A worker's first sweep after it starts, on an in-process queue (empty after any restart),
publishes every PENDING job whatever its dispatch time. A test that creates jobs while that
sweep may still be coming would have them run at a moment nobody chose (a monitor's pages
before its first slot, say). :func:`running_worker` returns once that sweep is over, so the
jobs a test creates afterwards run only when the test publishes them (or the scheduler does).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from taskcrawler.worker.worker import Worker


@asynccontextmanager
async def running_worker(worker: Worker) -> AsyncIterator[Worker]:
    """``worker`` running until the block ends, its restart sweep done on entry."""
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop), name="test-worker")
    swept = asyncio.create_task(worker.sweeper.restart_swept.wait())
    try:
        await asyncio.wait({running, swept}, return_when=asyncio.FIRST_COMPLETED)
        if running.done():
            running.result()  # a worker that ended before it was up: its error, here
            raise AssertionError("the worker stopped before its first sweep")
        yield worker
    finally:
        swept.cancel()
        stop.set()
        await running
