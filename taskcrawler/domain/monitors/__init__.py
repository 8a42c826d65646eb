"""Monitors, without I/O: what a monitor asks for (:mod:`.spec`: :class:`MonitorSpec`,
:class:`Monitor`), when it fires (:mod:`.schedule`: :class:`Schedule`), whether a page changed
(:mod:`.detection`: :class:`Snapshot`, :func:`compare`, :func:`page_set_changes`, :func:`read_run`)
and what a change says and how long it is kept (:mod:`.history`: :class:`Change`,
:func:`change_document`, :class:`ChangeRetention`).

How the pieces fit (the storage, the scheduler and the routes use them):

* A monitor's slots are the times ``anchor + k * interval``. A slot is identified by its scheduled
  time, computed in whole microseconds so every worker computes the same one; a unique key on
  (monitor, slot time) makes each slot fire at most once whichever workers race for it, and a
  compare-and-set of the monitor's last fired slot makes the claim itself exclusive.
  :meth:`Schedule.plan` says which one slot to fire now: the latest due one, so a monitor that was
  late (workers down, a restart) fires once, not once per missed interval.
* Each run of a page is read through the monitor's ignore selectors and reduced to a
  :class:`Snapshot`. Its fingerprint is a hash of the normalized text (whitespace collapsed,
  invisible characters dropped, Unicode NFC), so only a change of what a reader sees counts;
  metadata (title, description, …) is diffed alongside a change but never decides one.
* A crawl monitor also compares the set of pages of two rounds: pages added and removed. Its
  rounds' pages are jobs of their own, so a page both rounds found is compared with the last
  round's job for it (:func:`read_crawl_page`), as a URL monitor's run is with its job's last.
* A fired slot is one run of the monitor's pages as ordinary jobs; a fetch that fails is retried
  as any job is, and the slot stays fired.
"""

from taskcrawler.domain.monitors.detection import (
    NORMALIZATION_VERSION,
    Comparison,
    CrawlRound,
    CrawlRoundReading,
    PageRun,
    PageSetChanges,
    RunReading,
    Snapshot,
    compare,
    fingerprint,
    normalize_text,
    page_set_changes,
    read_crawl_page,
    read_crawl_round,
    read_run,
)
from taskcrawler.domain.monitors.history import (
    DEFAULT_CHANGE_RETENTION_COUNT,
    DEFAULT_CHANGE_RETENTION_DAYS,
    Change,
    ChangeKind,
    ChangeRetention,
    PageDiff,
    RunView,
    StoredRun,
    change_document,
)
from taskcrawler.domain.monitors.schedule import FiredSlot, Schedule, SlotPlan
from taskcrawler.domain.monitors.spec import (
    DEFAULT_FORMATS,
    DEFAULT_MIN_INTERVAL_SECONDS,
    MAX_INTERVAL_SECONDS,
    MAX_MONITOR_URLS,
    InvalidMonitorSpec,
    Monitor,
    MonitorPage,
    MonitorSpec,
    checked_interval,
)

__all__ = [
    "DEFAULT_CHANGE_RETENTION_COUNT",
    "DEFAULT_CHANGE_RETENTION_DAYS",
    "DEFAULT_FORMATS",
    "DEFAULT_MIN_INTERVAL_SECONDS",
    "MAX_INTERVAL_SECONDS",
    "MAX_MONITOR_URLS",
    "NORMALIZATION_VERSION",
    "Change",
    "ChangeKind",
    "ChangeRetention",
    "Comparison",
    "CrawlRound",
    "CrawlRoundReading",
    "FiredSlot",
    "InvalidMonitorSpec",
    "Monitor",
    "MonitorPage",
    "MonitorSpec",
    "PageDiff",
    "PageRun",
    "PageSetChanges",
    "RunReading",
    "RunView",
    "Schedule",
    "SlotPlan",
    "Snapshot",
    "StoredRun",
    "change_document",
    "checked_interval",
    "compare",
    "fingerprint",
    "normalize_text",
    "page_set_changes",
    "read_crawl_page",
    "read_crawl_round",
    "read_run",
]
