"""Workers: claim, fetch, extract, persist, retry; and the sweeper that loses nothing."""

from taskcrawler.worker.sweeper import Sweeper
from taskcrawler.worker.worker import Worker, WorkerStats

__all__ = ["Sweeper", "Worker", "WorkerStats"]
