"""An event-loop lateness probe: a timer task that measures how long the loop's thread went
without giving it a turn.

Two figures per gap between two firings of a periodic timer:

* ``lateness``: how much later than asked for it fired (wall clock). A busy machine adds to it
  whenever the process waits for a core, so it is reported, not asserted on.
* ``blocked``: the CPU time the loop's own thread spent over the same gap (``thread_time``),
  less the period. The loop's thread computes only when it runs, so this is what the code on
  the loop cost, whatever else the machine was doing: a step that holds the loop for a second
  shows as a second here, a process put off the core for a second does not. That makes it a
  bound on blocking that holds on two busy cores, not a speed figure.

While probing, the objects that exist when it starts are frozen out of the garbage collector
(``gc.freeze``): a full collection of a test session's heap (hundreds of thousands of objects)
takes tens of milliseconds whatever the request did, where an API process's own heap is a
fraction of it. Collections of what the probed code allocates still count.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

PERIOD_SECONDS = 0.005
#: What one request may hold the loop for, in CPU time: ten times a healthy step, and more
#: than ten times less than the stalls it exists to catch (a map of 100,000 sitemap URLs held
#: it for 3.4 s, 20,000 for about 0.7 s).
BUDGET_SECONDS = 0.1


@dataclass
class LatenessProbe:
    period: float = PERIOD_SECONDS
    blocked: list[float] = field(default_factory=list)
    lateness: list[float] = field(default_factory=list)

    @property
    def worst_blocked(self) -> float:
        return max(self.blocked, default=0.0)

    @property
    def worst_lateness(self) -> float:
        return max(self.lateness, default=0.0)

    def summary(self) -> str:
        return (
            f"the loop's thread computed up to {self.worst_blocked * 1000:.1f} ms between two "
            f"turns of a {self.period * 1000:g} ms timer (fired up to "
            f"{self.worst_lateness * 1000:.1f} ms late), over {len(self.blocked)} turns"
        )

    async def _tick(self) -> None:
        while True:
            wall, cpu = time.monotonic(), time.thread_time()
            try:
                await asyncio.sleep(self.period)
            finally:
                # Stopped too: the block ending the probed code may have held the loop last.
                self.lateness.append(max(0.0, time.monotonic() - wall - self.period))
                self.blocked.append(max(0.0, time.thread_time() - cpu - self.period))


@contextlib.asynccontextmanager
async def probing(period: float = PERIOD_SECONDS) -> AsyncIterator[LatenessProbe]:
    """A probe running on the current loop for the block's duration."""
    probe = LatenessProbe(period)
    gc.freeze()
    task = asyncio.create_task(probe._tick())
    await asyncio.sleep(0)
    try:
        yield probe
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        gc.unfreeze()
