"""Monitors, without I/O: what a monitor asks for (:class:`MonitorSpec`), when it fires
(:class:`Schedule`), whether a page changed (:class:`Snapshot`, :func:`compare`,
:func:`page_set_changes`) and what a change says (:class:`Change`, :func:`change_document`).

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

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
import unicodedata
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any
from uuid import UUID

from pydantic_core import to_jsonable_python

from taskcrawler.domain.crawls import (
    DEFAULT_MAX_LIMIT,
    CrawlSpec,
    InvalidCrawlSpec,
    _checked_formats,
    _checked_url,
)
from taskcrawler.domain.diffs import TRACKED_METADATA, TextDiff, metadata_changes, unified_diff
from taskcrawler.domain.errors import InvalidURL
from taskcrawler.domain.jobs import DEFAULT_FORMATS as JOB_DEFAULT_FORMATS
from taskcrawler.domain.runs import RunContent
from taskcrawler.domain.selectors import IgnoreSelector, InvalidSelector, parse_ignore_selectors
from taskcrawler.domain.urls import crawl_key, normalize_url

#: The shortest interval a monitor may ask for unless the deployment sets another
#: (``TASKCRAWLER_MONITOR_MIN_INTERVAL_SECONDS``).
DEFAULT_MIN_INTERVAL_SECONDS = 60.0
#: The longest: a year and a day.
MAX_INTERVAL_SECONDS = 366 * 24 * 3600.0
#: URLs one monitor may watch (as many as a batch of jobs).
MAX_MONITOR_URLS = 1000
#: As for jobs: the page's metadata and its main content as Markdown.
DEFAULT_FORMATS = JOB_DEFAULT_FORMATS
#: Crawl fields a monitor sets itself: a crawl monitor's pages are always fetched afresh, with
#: the monitor's formats, and its webhooks are the monitor's.
_MONITOR_OWNED_CRAWL_FIELDS = ("formats", "callback_url", "max_age", "webhook_events")


class InvalidMonitorSpec(InvalidCrawlSpec):
    """Bad input for a monitor; ``field`` names it (``urls[3]``, ``crawl.limit``,
    ``ignore_selectors[0]``). A subclass of :class:`InvalidCrawlSpec` so the API answers both
    with the same 422."""


# --- the spec ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MonitorSpec:
    """What a monitor watches and how. Build it with :meth:`create`, which validates every
    field against the deployment's limits.

    Exactly one of ``urls`` (one or more pages) and ``crawl`` (a site, whose pages added and
    removed between rounds are reported too). ``formats``: what each run's jobs keep, as for any
    job; change detection reads the Markdown and the text whatever they are. ``ignore_selectors``:
    the parts of its pages left out before they are read (see
    :mod:`taskcrawler.domain.selectors`).
    """

    interval_seconds: float
    urls: tuple[str, ...] = ()
    crawl: CrawlSpec | None = None
    formats: tuple[str, ...] = DEFAULT_FORMATS
    ignore_selectors: tuple[IgnoreSelector, ...] = ()
    callback_url: str | None = None

    def __post_init__(self) -> None:
        if bool(self.urls) == (self.crawl is not None):
            raise ValueError("a monitor watches either urls or a crawl")
        if not self.interval_seconds > 0:
            raise ValueError("a monitor's interval must be positive")

    @classmethod
    def create(
        cls,
        *,
        interval_seconds: object,
        url: object = None,
        urls: object = None,
        crawl: object = None,
        formats: object = DEFAULT_FORMATS,
        ignore_selectors: object = (),
        callback_url: object = None,
        min_interval_seconds: float = DEFAULT_MIN_INTERVAL_SECONDS,
        max_crawl_limit: int = DEFAULT_MAX_LIMIT,
        known_formats: Collection[str] | None = None,
    ) -> MonitorSpec:
        """A validated spec; :class:`InvalidMonitorSpec` names the first bad field."""
        targets = (("url", url), ("urls", urls), ("crawl", crawl))
        given = [name for name, value in targets if value is not None]
        if len(given) != 1:
            raise InvalidMonitorSpec(
                given[1] if given else "url", "give exactly one of url, urls and crawl"
            )
        checked_formats = _monitor_field(_checked_formats, formats, known_formats)
        return cls(
            interval_seconds=_checked_interval(interval_seconds, min_interval_seconds),
            urls=_checked_urls(url, urls) if crawl is None else (),
            crawl=(
                _checked_crawl(crawl, checked_formats, max_crawl_limit)
                if crawl is not None
                else None
            ),
            formats=checked_formats,
            ignore_selectors=_checked_selectors(ignore_selectors),
            callback_url=_checked_callback(callback_url),
        )

    @property
    def is_crawl(self) -> bool:
        return self.crawl is not None

    @property
    def selectors(self) -> tuple[str, ...]:
        """The ignore selectors as CSS, in their canonical form."""
        return tuple(selector.css for selector in self.ignore_selectors)

    def with_formats(self, formats: Sequence[str]) -> MonitorSpec:
        """This spec asking for ``formats`` too (a monitor's formats only grow, as a job's
        do); a crawl monitor's crawl with them."""
        union = tuple(dict.fromkeys((*self.formats, *formats)))
        crawl = None if self.crawl is None else dataclasses.replace(self.crawl, formats=union)
        return dataclasses.replace(self, formats=union, crawl=crawl)

    def schedule(self, anchor: datetime) -> Schedule:
        return Schedule.every(self.interval_seconds, anchor=anchor)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, for storing the spec with its monitor."""
        return {
            "interval_seconds": self.interval_seconds,
            "urls": list(self.urls),
            "crawl": self.crawl.to_dict() if self.crawl is not None else None,
            "formats": list(self.formats),
            "ignore_selectors": list(self.selectors),
            "callback_url": self.callback_url,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MonitorSpec:
        """The inverse of :meth:`to_dict`. A stored spec is not checked against today's
        minimum interval or crawl limit: it was accepted when it was created."""
        crawl = data.get("crawl")
        return cls(
            interval_seconds=float(data["interval_seconds"]),
            urls=tuple(data.get("urls") or ()),
            crawl=CrawlSpec.from_dict(crawl) if crawl else None,
            formats=tuple(data.get("formats") or DEFAULT_FORMATS),
            ignore_selectors=parse_ignore_selectors(data.get("ignore_selectors") or ()),
            callback_url=data.get("callback_url"),
        )


def _monitor_field(check: Any, *args: Any) -> Any:
    """A crawls.py check, its error re-raised as this module's."""
    try:
        return check(*args)
    except InvalidMonitorSpec:
        raise
    except InvalidCrawlSpec as exc:
        raise InvalidMonitorSpec(exc.field, exc.message) from None


def _checked_interval(value: object, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidMonitorSpec("interval_seconds", "must be a number of seconds")
    if not minimum <= value <= MAX_INTERVAL_SECONDS:
        raise InvalidMonitorSpec(
            "interval_seconds",
            f"must be between {_seconds(minimum)} and {_seconds(MAX_INTERVAL_SECONDS)} seconds, "
            f"not {_seconds(value)}",
        )
    return float(value)


def checked_interval(value: object, minimum: float = DEFAULT_MIN_INTERVAL_SECONDS) -> float:
    """``value`` as an interval in seconds; :class:`InvalidMonitorSpec` when it is not one
    between ``minimum`` and :data:`MAX_INTERVAL_SECONDS`."""
    return _checked_interval(value, minimum)


def _seconds(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:g}"


def _checked_urls(url: object, urls: object) -> tuple[str, ...]:
    if url is not None:
        return (_monitor_field(_checked_url, url, "url"),)
    if isinstance(urls, str) or not isinstance(urls, Sequence) or not urls:
        raise InvalidMonitorSpec("urls", "must be a non-empty list of URLs")
    if len(urls) > MAX_MONITOR_URLS:
        raise InvalidMonitorSpec("urls", f"at most {MAX_MONITOR_URLS:,} URLs")
    distinct: dict[str, str] = {}
    for index, value in enumerate(urls):
        checked = _monitor_field(_checked_url, value, f"urls[{index}]")
        distinct.setdefault(normalize_url(checked), checked)
    return tuple(distinct.values())


def _checked_crawl(crawl: object, formats: tuple[str, ...], max_limit: int) -> CrawlSpec:
    if not isinstance(crawl, Mapping):
        raise InvalidMonitorSpec("crawl", "must be an object with at least a url")
    for name in _MONITOR_OWNED_CRAWL_FIELDS:
        if crawl.get(name) is not None:
            raise InvalidMonitorSpec(f"crawl.{name}", "is set on the monitor, not on its crawl")
    unknown = sorted(str(name) for name in crawl if name not in CrawlSpec.__dataclass_fields__)
    if unknown:
        raise InvalidMonitorSpec(f"crawl.{unknown[0]}", "unknown field")
    options = dict(crawl)
    url = options.pop("url", None)
    try:
        return CrawlSpec.create(url, max_limit=max_limit, formats=formats, **options)
    except InvalidCrawlSpec as exc:
        raise InvalidMonitorSpec(f"crawl.{exc.field}", exc.message) from None
    except TypeError:  # a value of a type the crawl checks do not expect at all
        raise InvalidMonitorSpec("crawl", "a field has a value of the wrong type") from None


def _checked_selectors(values: object) -> tuple[IgnoreSelector, ...]:
    try:
        return parse_ignore_selectors(values)
    except InvalidSelector as exc:
        raise InvalidMonitorSpec(exc.field, exc.message) from None


def _checked_callback(value: object) -> str | None:
    if value is None:
        return None
    checked: str = _monitor_field(_checked_url, value, "callback_url")
    return checked


# --- the schedule -----------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _micros(moment: datetime) -> int:
    if moment.tzinfo is None:
        raise ValueError("schedule times must be timezone-aware")
    return (moment - _EPOCH) // _MICROSECOND


def _moment(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


@dataclass(frozen=True, slots=True)
class SlotPlan:
    """What a monitor does at some moment: fire ``fire`` (the one slot to run now, or None),
    then wake at ``next_due``. ``missed``: due slots passed over because a later one is due too
    (a late monitor runs once, for the latest)."""

    fire: datetime | None
    next_due: datetime
    missed: int = 0


@dataclass(frozen=True, slots=True)
class Schedule:
    """Slots at ``anchor + k * interval`` for k = 0, 1, 2, … in whole microseconds (UTC).

    The anchor is the monitor's creation (its first slot fires at once: the baseline run), or
    the moment its interval was changed, so that the next run comes one new interval later.
    Pausing needs nothing here: a paused monitor is not planned, and on resume the latest
    missed slot fires once.
    """

    anchor_micros: int
    interval_micros: int

    @classmethod
    def every(cls, interval_seconds: float, *, anchor: datetime) -> Schedule:
        interval = round(interval_seconds * 1_000_000)
        if interval <= 0:
            raise ValueError("the interval must be at least a microsecond")
        return cls(_micros(anchor), interval)

    @property
    def anchor(self) -> datetime:
        return _moment(self.anchor_micros)

    @property
    def interval(self) -> timedelta:
        return timedelta(microseconds=self.interval_micros)

    def slot(self, index: int) -> datetime:
        """The scheduled time of slot ``index``: the slot's identity."""
        return _moment(self.anchor_micros + index * self.interval_micros)

    def index_at(self, moment: datetime) -> int:
        """The index of the latest slot at or before ``moment`` (-1 before the anchor)."""
        return (_micros(moment) - self.anchor_micros) // self.interval_micros

    def plan(self, last_fired: datetime | None, now: datetime) -> SlotPlan:
        """Which slot to fire at ``now`` when ``last_fired`` (a slot time, or None before the
        first run) was the last one fired, and when the next is due.

        Every slot after ``last_fired`` and at or before ``now`` is due; only the latest fires.
        """
        first_unfired = 0 if last_fired is None else max(0, self.index_at(last_fired) + 1)
        latest_due = self.index_at(now)
        if latest_due < first_unfired:
            return SlotPlan(fire=None, next_due=self.slot(first_unfired))
        return SlotPlan(
            fire=self.slot(latest_due),
            next_due=self.slot(latest_due + 1),
            missed=latest_due - first_unfired,
        )


# --- change detection -------------------------------------------------------------------------

#: Bumped whenever normalization changes: fingerprints of another version are not compared
#: (the page is re-baselined, not reported as changed).
NORMALIZATION_VERSION = "n1"
# Characters that render as nothing: zero-width spaces and joiners, the word joiner, the
# byte-order mark, the soft hyphen. Pages sprinkle them unevenly between loads.
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")


def normalize_text(text: str) -> str:
    """The text that decides "changed": Unicode NFC, invisible characters dropped, every run of
    whitespace (any Unicode space, line breaks included) made one space, trimmed."""
    text = _INVISIBLE.sub("", unicodedata.normalize("NFC", text))
    return " ".join(text.split())


def fingerprint(text: str) -> str:
    """``n1:<sha256 hex>`` of the normalized ``text``."""
    normalized = normalize_text(text).encode("utf-8", "surrogatepass")
    return f"{NORMALIZATION_VERSION}:{hashlib.sha256(normalized).hexdigest()}"


class Comparison(StrEnum):
    """A run's fingerprint against the last one of the same page."""

    FIRST = "first"  # nothing to compare with: this run is the baseline
    UNCHANGED = "unchanged"
    CHANGED = "changed"
    REBASELINED = "rebaselined"  # made by another normalization: the baseline, not a change


def compare(previous: str | None, current: str) -> Comparison:
    if previous is None:
        return Comparison.FIRST
    if previous == current:
        return Comparison.UNCHANGED
    if previous.partition(":")[0] != current.partition(":")[0]:
        return Comparison.REBASELINED
    return Comparison.CHANGED


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One run of a page, as change detection sees it: its Markdown and text (read through the
    monitor's ignore selectors), the tracked metadata fields, and the text's fingerprint."""

    markdown: str
    text: str
    metadata: Mapping[str, Any]
    fingerprint: str

    @classmethod
    def of(cls, *, markdown: str, text: str, metadata: Mapping[str, Any]) -> Snapshot:
        tracked = {name: metadata.get(name) for name in TRACKED_METADATA}
        return cls(markdown, text, tracked, fingerprint(text))

    def compare(self, previous: Snapshot | None) -> Comparison:
        return compare(previous.fingerprint if previous is not None else None, self.fingerprint)

    def diff(self, previous: Snapshot, *, from_label: str, to_label: str) -> PageDiff:
        return PageDiff(
            unified_diff(
                previous.markdown, self.markdown, from_label=from_label, to_label=to_label
            ),
            metadata_changes(previous.metadata, self.metadata),
        )


@dataclass(frozen=True, slots=True)
class PageDiff:
    """Between two runs: the unified diff of their Markdown and the metadata that changed
    (``{field: {"old": …, "new": …}}``)."""

    markdown: TextDiff
    metadata: dict[str, dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {**self.markdown.to_dict(), "metadata": self.metadata}


@dataclass(frozen=True, slots=True)
class PageSetChanges:
    """Pages of a crawl monitor found in this round and not the last (``added``), and the
    reverse (``removed``), as URLs of the round that had them, sorted."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


def page_set_changes(
    previous: Collection[str], current: Collection[str], *, complete: bool
) -> PageSetChanges:
    """The pages added and removed between two rounds of a crawl, compared by
    :func:`crawl_key` (two spellings of one page are one page; unusable URLs are left out).

    ``complete``: whether the current round saw the whole site. A round cut short (stopped at
    its ``limit``, cancelled, its start page failing) reports additions only: a page it did not
    reach is not known to be gone.
    """
    before = _keyed(previous)
    after = _keyed(current)
    added = tuple(sorted(after[key] for key in after.keys() - before.keys()))
    if not complete:
        return PageSetChanges(added=added)
    removed = tuple(sorted(before[key] for key in before.keys() - after.keys()))
    return PageSetChanges(added=added, removed=removed)


def _keyed(urls: Collection[str]) -> dict[str, str]:
    keyed: dict[str, str] = {}
    for url in urls:
        try:
            keyed.setdefault(crawl_key(url), url)
        except InvalidURL:
            continue
    return keyed


# --- changes ----------------------------------------------------------------------------------


class ChangeKind(StrEnum):
    CHANGED = "changed"
    ADDED = "added"  # crawl monitors: a page this round found and the last did not
    REMOVED = "removed"  # crawl monitors: a page the last round found and this one did not


@dataclass(frozen=True, slots=True)
class Change:
    """A change a monitor detected. ``run`` / ``previous_run``: the job runs compared (a
    ``changed`` page has both, an ``added`` one only ``run``, a ``removed`` one only
    ``previous_run``); ``diff`` is set for ``changed`` only. ``previous_job_id``: the job of
    ``previous_run`` for a ``changed`` page: ``job_id`` itself for a URL monitor's page, the
    last round's job for a crawl monitor's."""

    id: UUID
    monitor_id: UUID
    kind: ChangeKind
    url: str
    job_id: UUID
    detected_at: datetime
    run: int | None = None
    previous_run: int | None = None
    diff: PageDiff | None = None
    previous_job_id: UUID | None = None


#: Changes kept per monitor, and their age at most. A change's diff is cut at 256 Ki characters
#: (domain.diffs), so 1,000 of them hold at most 250 MiB of ASCII diffs.
DEFAULT_CHANGE_RETENTION_COUNT = 1_000
DEFAULT_CHANGE_RETENTION_DAYS = 30.0


@dataclass(frozen=True, slots=True)
class ChangeRetention:
    """Which changes of a monitor are kept: its newest ``keep_changes`` (None: any number),
    none older than ``keep_days`` (None: any age)."""

    keep_changes: int | None = DEFAULT_CHANGE_RETENTION_COUNT
    keep_days: float | None = DEFAULT_CHANGE_RETENTION_DAYS

    def __post_init__(self) -> None:
        if self.keep_changes is not None and self.keep_changes < 0:
            raise ValueError("keep_changes must be 0 or more, or None")
        if self.keep_days is not None and not self.keep_days > 0:
            raise ValueError("keep_days must be a positive number of days or None")

    def oldest_kept(self, now: datetime) -> datetime | None:
        """Changes detected before this are dropped (None: none for their age)."""
        return None if self.keep_days is None else now - timedelta(days=self.keep_days)


def change_document(change: Change) -> dict[str, Any]:
    """A change as ``GET /api/v1/monitors/{id}/changes`` lists it and its webhook sends it
    (JSON-ready, encoded as the job documents are)."""
    diff = change.diff
    document: dict[str, Any] = to_jsonable_python(
        {
            "id": change.id,
            "monitor_id": change.monitor_id,
            "kind": change.kind,
            "url": change.url,
            "job_id": change.job_id,
            "detected_at": change.detected_at,
            "run": change.run,
            "previous_run": change.previous_run,
            "previous_job_id": change.previous_job_id,
            "diff": diff.markdown.text if diff is not None else None,
            "diff_complete": diff.markdown.complete if diff is not None else None,
            "metadata": diff.metadata if diff is not None else {},
        }
    )
    return document


@dataclass(frozen=True, slots=True)
class CrawlRound:
    """What a crawl monitor's round found, once its crawl stopped running: each page that
    completed, as ``{url: job id}``; ``complete``: whether it saw the whole site (see
    :func:`page_set_changes`). ``previous``: the pages the last read round left to compare
    with (None for the first round: the baseline). ``runs``: each completed page's run, to
    read through the monitor's ignore selectors (see :func:`read_crawl_page`)."""

    monitor_id: UUID
    owner: str
    slot_at: datetime
    callback_url: str | None
    pages: Mapping[str, UUID]
    complete: bool
    previous: Mapping[str, UUID] | None
    runs: tuple[PageRun, ...] = ()

    def previous_jobs(self) -> dict[str, UUID]:
        """For each page of this round the last round found too (compared by
        :func:`crawl_key`): the last round's job for it."""
        if self.previous is None:
            return {}
        before = _keyed(self.previous)
        return {
            url: self.previous[before[key]]
            for key, url in _keyed(self.pages).items()
            if key in before
        }


@dataclass(frozen=True, slots=True)
class CrawlRoundReading:
    """The changes a round reports, and the pages the next round is compared with: this
    round's, and for a round cut short, the last round's pages it did not reach too (they are
    not known to be gone)."""

    round: CrawlRound
    changes: tuple[Change, ...]
    kept: Mapping[str, UUID]


def read_crawl_round(
    found: CrawlRound, *, now: datetime, new_id: Callable[[], UUID]
) -> CrawlRoundReading:
    """Pages added and removed since the last round (nothing for the baseline round)."""
    if found.previous is None:
        return CrawlRoundReading(found, (), dict(found.pages))
    previous = found.previous
    diff = page_set_changes(previous, found.pages, complete=found.complete)
    changes = [
        Change(new_id(), found.monitor_id, ChangeKind.ADDED, url, found.pages[url], now)
        for url in diff.added
    ] + [
        Change(new_id(), found.monitor_id, ChangeKind.REMOVED, url, previous[url], now)
        for url in diff.removed
    ]
    kept = dict(found.pages)
    if not found.complete:
        seen = _keyed(found.pages)
        for key, url in _keyed(previous).items():
            if key not in seen:
                kept[url] = previous[url]
    return CrawlRoundReading(found, tuple(changes), kept)


def read_crawl_page(
    page: PageRun,
    current: Snapshot | None,
    baseline: tuple[StoredRun, Snapshot] | None,
    *,
    now: datetime,
    change_id: UUID,
) -> RunReading:
    """A page of a crawl monitor's round: its history record, its content (stored whole: the
    next round compares with it from a job of its own), and the change when the last round's
    page (``baseline``, a run of another job) read other normalized text.

    ``current``: the page read through the monitor's ignore selectors (None when it could not
    be read: nothing is recorded of it, and the next round has nothing to compare with).
    """
    if current is None:
        return RunReading(page, _read_nothing(page, now))
    content = RunContent(current.markdown, current.text)
    record = _record(page, current, content.digest, page.run, now)
    change = _change(
        page,
        current,
        baseline,
        now=now,
        change_id=change_id,
        labels=lambda before: (
            f"job {before.job_id} run {before.run}",
            f"job {page.job_id} run {page.run}",
        ),
    )
    return RunReading(page, record, content.encode(), change)


# --- monitors as stored, and what the scheduler and change detection work on -----------------


@dataclass(frozen=True, slots=True)
class MonitorPage:
    """A page a monitor watches: an ordinary job of its own, run again at each slot."""

    url: str
    job_id: UUID


@dataclass(frozen=True, slots=True)
class Monitor:
    """A monitor as the API shows it. ``last_slot_at``: the scheduled time of the last slot
    fired (None before the first); ``rounds``: slots fired so far."""

    id: UUID
    owner: str
    spec: MonitorSpec
    paused: bool
    anchor_at: datetime
    next_due_at: datetime
    created_at: datetime
    updated_at: datetime
    last_slot_at: datetime | None = None
    rounds: int = 0
    pages: tuple[MonitorPage, ...] = ()

    @property
    def schedule(self) -> Schedule:
        return self.spec.schedule(self.anchor_at)


@dataclass(frozen=True, slots=True)
class FiredSlot:
    """A slot a scheduler fired: its monitor, its time, the due slots it stood for beyond
    itself (``missed``) and the jobs to publish (restarted, or still waiting for a first run)."""

    monitor_id: UUID
    slot_at: datetime
    missed: int
    job_ids: tuple[UUID, ...]


@dataclass(frozen=True, slots=True)
class PageRun:
    """A finished run of a watched page that change detection has not read yet.

    ``run``: the job's run number (0 for its first); ``body_size``: the size of the page the run
    fetched, kept in the job's archive (None after a 304 or a failure: nothing to read);
    ``baseline_run``: the run it is compared with."""

    monitor_id: UUID
    owner: str
    job_id: UUID
    url: str
    run: int
    status: str
    http_status: int | None
    unchanged: bool
    evaluated_run: int | None
    baseline_run: int | None
    ignore_selectors: tuple[IgnoreSelector, ...]
    callback_url: str | None
    final_url: str | None = None
    charset: str | None = None
    body_size: int | None = None


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A run's record in the run history: when it ran, how it ended, and what it read (the
    content of run ``content_run``, None when it read nothing)."""

    job_id: UUID
    run: int
    fetched_at: datetime
    status: str
    http_status: int | None
    fingerprint: str | None
    digest: str | None
    content_run: int | None
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RunReading:
    """What change detection decided of a :class:`PageRun`, for storage to record at once:
    the run's history row, its content blob when it stores one, the change when there is one
    (and the payload of its webhook)."""

    page: PageRun
    record: StoredRun
    blob: bytes | None = None
    change: Change | None = None
    #: The run the next one is compared with after this one.
    baseline_run: int | None = None


def read_run(
    page: PageRun,
    current: Snapshot | None,
    baseline: tuple[StoredRun, Snapshot] | None,
    *,
    now: datetime,
    change_id: UUID,
) -> RunReading:
    """What a finished run of a watched page means: its history record, the blob it stores
    (only when its content differs from the baseline's), and the change it reports.

    ``current``: the run read through the monitor's ignore selectors (None when the run read
    nothing: a failure, or a 304 whose content is the baseline's). ``baseline``: the run it is
    compared with and what that read. Only a change of the normalized text is reported; the
    first run, a re-baselined one and a 304 never are.
    """
    if current is None:
        if page.unchanged and baseline is not None:
            kept, _ = baseline
            record = StoredRun(
                page.job_id,
                page.run,
                now,
                page.status,
                page.http_status,
                kept.fingerprint,
                kept.digest,
                kept.content_run,
                kept.metadata,
            )
            return RunReading(page, record, baseline_run=page.run)
        return RunReading(page, _read_nothing(page, now), baseline_run=page.baseline_run)
    content = RunContent(current.markdown, current.text)
    digest = content.digest
    previous = baseline[0] if baseline is not None else None
    same = previous is not None and previous.digest == digest and previous.content_run is not None
    content_run = previous.content_run if same and previous is not None else page.run
    record = _record(page, current, digest, content_run, now)
    blob = None if same else content.encode()
    change = _change(
        page,
        current,
        baseline,
        now=now,
        change_id=change_id,
        labels=lambda before: (f"run {before.run}", f"run {page.run}"),
    )
    return RunReading(page, record, blob, change, baseline_run=page.run)


def _read_nothing(page: PageRun, now: datetime) -> StoredRun:
    return StoredRun(
        page.job_id, page.run, now, page.status, page.http_status, None, None, None, {}
    )


def _record(
    page: PageRun, current: Snapshot, digest: str, content_run: int | None, now: datetime
) -> StoredRun:
    return StoredRun(
        page.job_id,
        page.run,
        now,
        page.status,
        page.http_status,
        current.fingerprint,
        digest,
        content_run,
        dict(current.metadata),
    )


def _change(
    page: PageRun,
    current: Snapshot,
    baseline: tuple[StoredRun, Snapshot] | None,
    *,
    now: datetime,
    change_id: UUID,
    labels: Callable[[StoredRun], tuple[str, str]],
) -> Change | None:
    """The change ``page`` reports against ``baseline`` (None unless its normalized text
    changed); ``labels``: the diff's from and to labels, given the baseline's run."""
    if baseline is None or current.compare(baseline[1]) is not Comparison.CHANGED:
        return None
    before, previous = baseline
    from_label, to_label = labels(before)
    return Change(
        id=change_id,
        monitor_id=page.monitor_id,
        kind=ChangeKind.CHANGED,
        url=page.url,
        job_id=page.job_id,
        detected_at=now,
        run=page.run,
        previous_run=before.run,
        diff=current.diff(previous, from_label=from_label, to_label=to_label),
        previous_job_id=before.job_id,
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
