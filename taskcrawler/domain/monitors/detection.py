"""Whether a page changed: a run reduced to a :class:`Snapshot` and its fingerprint, compared
with the last (:func:`compare`), a crawl round's pages added and removed (:func:`page_set_changes`),
and a run or a round read into what storage records (:func:`read_run`, :func:`read_crawl_page`,
:func:`read_crawl_round`)."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from taskcrawler.domain.diffs import TRACKED_METADATA, metadata_changes, unified_diff
from taskcrawler.domain.errors import InvalidURL
from taskcrawler.domain.monitors.history import Change, ChangeKind, PageDiff, StoredRun
from taskcrawler.domain.runs import RunContent
from taskcrawler.domain.selectors import IgnoreSelector
from taskcrawler.domain.urls import crawl_key

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
