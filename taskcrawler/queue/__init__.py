"""The queue is a transport for job ids, never the truth: the database is.

A message may be lost (Redis restarted empty) or delivered twice; the sweeper and the guarded
claim make both harmless. That is why the transport is this small.
"""

from __future__ import annotations

from taskcrawler.queue.base import HostLines, JobQueue, Ready, Taken, Waiting
from taskcrawler.queue.memory import MemoryHostLines, MemoryQueue

__all__ = ["HostLines", "JobQueue", "MemoryHostLines", "MemoryQueue", "Ready", "Taken", "Waiting"]
