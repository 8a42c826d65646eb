"""Monitors without I/O: the spec and its refusals, the schedule's slots, change detection and
what a change says (its document and its signed webhook)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from taskcrawler.domain.crawls import InvalidCrawlSpec
from taskcrawler.domain.monitors import (
    DEFAULT_MIN_INTERVAL_SECONDS,
    MAX_MONITOR_URLS,
    Change,
    ChangeKind,
    Comparison,
    CrawlRound,
    InvalidMonitorSpec,
    MonitorSpec,
    Schedule,
    Snapshot,
    change_document,
    compare,
    fingerprint,
    normalize_text,
    page_set_changes,
    read_crawl_round,
)
from taskcrawler.domain.webhooks import (
    WebhookEvent,
    change_webhook,
    delivery_headers,
    encode_body,
    verify_signature,
)
from taskcrawler.extract import FORMATS
from taskcrawler.settings import Settings

URL = "https://shop.example.com/prices"


def spec(**fields: Any) -> MonitorSpec:
    fields.setdefault("interval_seconds", 3600)
    if not {"url", "urls", "crawl"} & fields.keys():
        fields["url"] = URL
    return MonitorSpec.create(**fields)


# --- the spec ---------------------------------------------------------------------------------


def test_one_url() -> None:
    made = spec(ignore_selectors=[".ad, time", "#visits"], callback_url="https://hooks.test/x")
    assert made.urls == (URL,) and made.crawl is None and not made.is_crawl
    assert made.interval_seconds == 3600.0 and made.formats == ("metadata", "markdown")
    assert made.selectors == (".ad", "time", "#visits")
    assert MonitorSpec.from_dict(orjson.loads(orjson.dumps(made.to_dict()))) == made


def test_a_list_of_urls_is_deduplicated_by_normalized_url() -> None:
    made = spec(urls=[URL, "HTTPS://shop.example.com:443/prices", "https://b.example/"])
    assert made.urls == (URL, "https://b.example/")


def test_a_crawl_takes_the_monitors_formats() -> None:
    made = spec(
        crawl={"url": "https://docs.example.com/", "limit": 500, "include_paths": ["^/guide/"]},
        formats=["markdown", "links"],
    )
    assert made.is_crawl and made.urls == ()
    assert made.crawl is not None
    assert (made.crawl.limit, made.crawl.include_paths) == (500, ("^/guide/",))
    assert made.crawl.pages.formats == ("markdown", "links")
    assert MonitorSpec.from_dict(made.to_dict()) == made


def test_a_spec_built_directly_still_watches_one_thing() -> None:
    with pytest.raises(ValueError, match="either urls or a crawl"):
        MonitorSpec(interval_seconds=60)
    with pytest.raises(ValueError, match="positive"):
        MonitorSpec(interval_seconds=0, urls=(URL,))


def test_the_minimum_interval_is_the_deployments() -> None:
    assert DEFAULT_MIN_INTERVAL_SECONDS == 60
    assert spec(interval_seconds=60).interval_seconds == 60
    assert spec(interval_seconds=0.25, min_interval_seconds=0.1).interval_seconds == 0.25
    with pytest.raises(InvalidMonitorSpec, match=r"between 60 and .* not 59\.9"):
        spec(interval_seconds=59.9)
    with pytest.raises(InvalidMonitorSpec, match=r"between 0\.1 and"):
        spec(interval_seconds=0.05, min_interval_seconds=0.1)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"interval_seconds": 10}, "interval_seconds", "between 60 and 31,622,400 seconds, not 10"),
        ({"interval_seconds": 10**9}, "interval_seconds", "between 60"),
        ({"interval_seconds": True}, "interval_seconds", "a number of seconds"),
        ({"interval_seconds": "60"}, "interval_seconds", "a number of seconds"),
        ({"interval_seconds": float("nan")}, "interval_seconds", "a number of seconds"),
        ({"url": URL, "urls": [URL]}, "urls", "exactly one of url, urls and crawl"),
        ({"urls": [URL], "crawl": {"url": URL}}, "crawl", "exactly one"),
        ({"url": None, "urls": None, "crawl": None}, "url", "exactly one"),
        ({"url": "ftp://x.example/"}, "url", "only http and https"),
        ({"url": 5}, "url", "a URL string"),
        ({"urls": []}, "urls", "non-empty list"),
        ({"urls": URL}, "urls", "non-empty list"),
        ({"urls": [URL] * (MAX_MONITOR_URLS + 1)}, "urls", "at most 1,000"),
        ({"urls": [URL, URL, "http://"]}, "urls[2]", "no host"),
        ({"crawl": "https://x.example/"}, "crawl", "an object"),
        ({"crawl": {"limit": 5}}, "crawl.url", "a URL string"),
        ({"crawl": {"url": URL, "limit": 10**6}}, "crawl.limit", "between 1 and 100,000"),
        (
            {"crawl": {"url": URL, "limit": 600}, "max_crawl_limit": 500},
            "crawl.limit",
            "between 1 and 500",
        ),
        (
            {"crawl": {"url": URL, "include_paths": ["ok", "(x"]}},
            "crawl.include_paths[1]",
            "missing \\)",
        ),
        ({"crawl": {"url": URL, "formats": ["links"]}}, "crawl.formats", "on the monitor"),
        ({"crawl": {"url": URL, "callback_url": URL}}, "crawl.callback_url", "on the monitor"),
        ({"crawl": {"url": URL, "max_age": 60}}, "crawl.max_age", "on the monitor"),
        ({"crawl": {"url": URL, "depth": 2}}, "crawl.depth", "unknown field"),
        ({"crawl": {"url": URL, "include_paths": 5}}, "crawl.include_paths", "list"),
        ({"formats": []}, "formats", "non-empty list"),
        ({"formats": ["markdown", "pdf"], "known_formats": FORMATS}, "formats[1]", "unknown"),
        ({"ignore_selectors": [".ok", "p:first-child"]}, "ignore_selectors[1]", "pseudo"),
        ({"ignore_selectors": ".ad"}, "ignore_selectors", "a list of CSS selectors"),
        ({"callback_url": "javascript:alert(1)"}, "callback_url", "only http"),
    ],
)
def test_bad_input_names_the_field(fields: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(InvalidMonitorSpec, match=message) as caught:
        spec(**fields)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")
    assert isinstance(caught.value, InvalidCrawlSpec)  # one 422 handler for both


# --- the schedule -----------------------------------------------------------------------------

T0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_the_first_slot_is_the_anchor_and_fires_at_once() -> None:
    schedule = Schedule.every(60, anchor=T0)
    plan = schedule.plan(None, T0)
    assert (plan.fire, plan.next_due, plan.missed) == (T0, at(60), 0)
    assert schedule.plan(T0, at(59.999999)).fire is None
    assert schedule.plan(T0, at(59.999999)).next_due == at(60)
    assert schedule.plan(T0, at(60)).fire == at(60)


def test_a_late_monitor_fires_once_for_the_latest_slot() -> None:
    """Workers down for an hour: one run, not sixty, then back on the grid."""
    schedule = Schedule.every(60, anchor=T0)
    plan = schedule.plan(at(120), at(3600 + 125))
    assert (plan.fire, plan.next_due, plan.missed) == (at(3600 + 120), at(3600 + 180), 59)
    assert schedule.plan(plan.fire, at(3600 + 126)).fire is None


def test_before_the_anchor_nothing_is_due() -> None:
    plan = Schedule.every(60, anchor=T0).plan(None, at(-30))
    assert (plan.fire, plan.next_due) == (None, T0)


def test_a_last_slot_off_the_grid_counts_as_fired_through_it() -> None:
    """After an interval change the last fired slot may lie between the new slots."""
    schedule = Schedule.every(60, anchor=T0)
    assert schedule.plan(at(90), at(100)).fire is None
    assert schedule.plan(at(90), at(100)).next_due == at(120)
    assert schedule.plan(at(90), at(130)).fire == at(120)


def test_slots_are_whole_microseconds_whatever_the_timezone() -> None:
    """Every worker must compute the very same slot time: it is the slot's key."""
    paris = timezone(timedelta(hours=1))
    schedule = Schedule.every(0.1, anchor=T0.astimezone(paris))
    assert schedule.interval_micros == 100_000
    assert schedule.slot(3) == at(0.3)
    assert schedule.slot(10**7) == T0 + timedelta(seconds=10**6)  # no float drift
    assert schedule.plan(None, at(0.35).astimezone(paris)).fire == at(0.3)
    assert Schedule.every(1 / 3, anchor=T0).interval_micros == 333_333


def test_naive_times_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        Schedule.every(60, anchor=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="at least a microsecond"):
        Schedule.every(0, anchor=T0)


_INTERVALS = st.integers(1, 10_000_000)  # microseconds
_MOMENTS = st.integers(-(10**9), 10**10)  # microseconds from T0


def _us(micros: int) -> datetime:
    return T0 + timedelta(microseconds=micros)


@settings(max_examples=500)
@given(interval=_INTERVALS, last=st.none() | _MOMENTS, now=_MOMENTS)
def test_the_plan_fires_the_latest_due_slot_and_wakes_at_the_next(
    interval: int, last: int | None, now: int
) -> None:
    schedule = Schedule.every(interval / 1e6, anchor=T0)
    last_fired = None if last is None else _us(last)
    plan = schedule.plan(last_fired, _us(now))
    if plan.fire is not None:
        index = schedule.index_at(plan.fire)
        assert schedule.slot(index) == plan.fire and index >= 0  # a slot
        assert plan.fire <= _us(now)  # due
        assert last_fired is None or plan.fire > last_fired  # not fired before
        assert plan.fire + schedule.interval > _us(now)  # the latest due
        assert plan.next_due == plan.fire + schedule.interval
    else:
        # nothing due: the next slot after the last fired one is still ahead
        assert plan.next_due > _us(now) and plan.missed == 0
        assert plan.next_due >= T0
        assert last_fired is None or plan.next_due > last_fired
        assert plan.next_due - schedule.interval <= max(_us(now), last_fired or T0, T0)


@dataclass
class _Database:
    """The monitor's row as the lead's scheduler will keep it: the last fired slot, changed by
    compare-and-set, and the set of fired slots (a unique key)."""

    last_fired: datetime | None = None
    fired: list[datetime] = field(default_factory=list)

    def claim(self, seen: datetime | None, slot: datetime) -> bool:
        if self.last_fired != seen or slot in self.fired:
            return False
        self.last_fired = slot
        self.fired.append(slot)
        return True


@settings(max_examples=300)
@given(
    interval=st.integers(1, 1000),
    wakeups=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 30_000), st.booleans()), max_size=80
    ),
)
def test_workers_racing_fire_each_slot_at_most_once_in_order(
    interval: int, wakeups: list[tuple[int, int, bool]]
) -> None:
    """Several workers wake at arbitrary moments (in clock order), each reading the row, or
    planning from a stale copy of it, and claiming. No slot fires twice, slots fire in order,
    and each fired when it was due."""
    schedule = Schedule.every(interval, anchor=T0)
    database = _Database()
    copies: dict[int, datetime | None] = {}
    for worker, moment, stale in sorted(wakeups, key=lambda wakeup: wakeup[1]):
        seen = copies.get(worker) if stale else database.last_fired
        plan = schedule.plan(seen, at(moment))
        if plan.fire is not None and database.claim(seen, plan.fire):
            assert plan.fire <= at(moment)
        copies[worker] = database.last_fired
    assert database.fired == sorted(set(database.fired))


@settings(max_examples=200)
@given(interval=st.integers(1, 100), gaps=st.lists(st.integers(0, 1000), max_size=50))
def test_waking_at_least_once_per_interval_fires_every_slot(interval: int, gaps: list[int]) -> None:
    """Rounds fired = rounds due, when a worker looks at least once per interval (a restart in
    between included): every slot up to the last wake-up fires, exactly once."""
    schedule = Schedule.every(interval, anchor=T0)
    last: datetime | None = None
    fired = []
    moment = 0
    for gap in [0, *gaps]:
        moment += gap % interval  # less than one interval between two looks
        plan = schedule.plan(last, at(moment))
        assert plan.missed == 0
        if plan.fire is not None:
            fired.append(plan.fire)
            last = plan.fire
    assert fired == [schedule.slot(k) for k in range(schedule.index_at(at(moment)) + 1)]


# --- change detection -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Price: $19.99", "Price:\n\t $19.99  "),
        ("Price: $19.99", "Price:\u00a0$19.99"),
        ("Price: $19.99", "Pri\u200bce: $19.\u00ad99\ufeff"),
        ("caf\u00e9", "cafe\u0301"),  # composed and decomposed é
        ("a\n\nb", "a\u2028b"),
    ],
)
def test_noise_in_the_text_does_not_change_the_fingerprint(a: str, b: str) -> None:
    assert normalize_text(a) == normalize_text(b)
    assert fingerprint(a) == fingerprint(b)
    assert compare(fingerprint(a), fingerprint(b)) is Comparison.UNCHANGED


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Price: $19.99", "Price: $21.99"),
        ("Price: $19.99", "Price: $19.99."),
        ("in stock", "In stock"),
        ("ab", "a b"),
    ],
)
def test_a_visible_change_changes_the_fingerprint(a: str, b: str) -> None:
    assert compare(fingerprint(a), fingerprint(b)) is Comparison.CHANGED


def test_comparisons() -> None:
    now = fingerprint("x")
    assert now.startswith("n1:") and len(now) == 3 + 64
    assert compare(None, now) is Comparison.FIRST
    assert compare(now, now) is Comparison.UNCHANGED
    assert compare("n0:" + "0" * 64, now) is Comparison.REBASELINED
    assert compare(fingerprint("y"), now) is Comparison.CHANGED


def test_snapshots_track_a_few_metadata_fields_and_diff() -> None:
    metadata = {"title": "Prices", "description": "d", "word_count": 3, "language": "en"}
    before = Snapshot.of(
        markdown="# Prices\n\n$19.99\n", text="Prices\n\n$19.99", metadata=metadata
    )
    after = Snapshot.of(
        markdown="# Prices\n\n$21.99\n",
        text="Prices\n\n$21.99",
        metadata={**metadata, "title": "Prices!", "word_count": 4},
    )
    assert before.metadata == {
        "title": "Prices",
        "description": "d",
        "canonical_url": None,
        "language": "en",
    }
    assert before.compare(None) is Comparison.FIRST
    assert after.compare(before) is Comparison.CHANGED
    diff = after.diff(before, from_label="run 1", to_label="run 2")
    assert diff.markdown.text.endswith("-$19.99\n+$21.99\n")
    assert diff.metadata == {"title": {"old": "Prices", "new": "Prices!"}}
    assert diff.to_dict()["diff"] == diff.markdown.text


def test_pages_added_and_removed_are_compared_by_crawl_key() -> None:
    before = [
        "https://site.test/a",
        "https://site.test/b?utm_source=x",
        "https://site.test/c#top",
        "not a url",
    ]
    after = ["https://site.test/b", "https://site.test/c", "https://site.test/d"]
    changes = page_set_changes(before, after, complete=True)
    assert changes.added == ("https://site.test/d",)
    assert changes.removed == ("https://site.test/a",)


def test_a_round_cut_short_reports_no_removals() -> None:
    changes = page_set_changes(["https://site.test/a"], ["https://site.test/z"], complete=False)
    assert (changes.added, changes.removed) == (("https://site.test/z",), ())


# --- changes and their webhooks ---------------------------------------------------------------

SECRET = "s3cret"


def _change(kind: ChangeKind, **fields: Any) -> Change:
    values: dict[str, Any] = {
        "id": uuid.UUID(int=1),
        "monitor_id": uuid.UUID(int=2),
        "kind": kind,
        "url": URL,
        "job_id": uuid.UUID(int=3),
        "detected_at": datetime(2026, 12, 4, 12, 0, 1, 500, tzinfo=UTC),
    }
    values.update(fields)
    return Change(**values)


def test_a_change_document() -> None:
    before = Snapshot.of(markdown="$19.99\n", text="$19.99", metadata={"title": "A"})
    after = Snapshot.of(markdown="$21.99\n", text="$21.99", metadata={"title": "B"})
    change = _change(
        ChangeKind.CHANGED,
        run=4,
        previous_run=3,
        diff=after.diff(before, from_label="run 3", to_label="run 4"),
        previous_job_id=uuid.UUID(int=3),
    )
    assert change_document(change) == {
        "id": "00000000-0000-0000-0000-000000000001",
        "monitor_id": "00000000-0000-0000-0000-000000000002",
        "kind": "changed",
        "url": URL,
        "job_id": "00000000-0000-0000-0000-000000000003",
        "detected_at": "2026-12-04T12:00:01.000500Z",
        "run": 4,
        "previous_run": 3,
        "previous_job_id": "00000000-0000-0000-0000-000000000003",
        "diff": "--- run 3\n+++ run 4\n@@ -1 +1 @@\n-$19.99\n+$21.99\n",
        "diff_complete": True,
        "metadata": {"title": {"old": "A", "new": "B"}},
    }


@pytest.mark.parametrize(
    ("kind", "event"),
    [
        (ChangeKind.CHANGED, WebhookEvent.PAGE_CHANGED),
        (ChangeKind.ADDED, WebhookEvent.PAGE_ADDED),
        (ChangeKind.REMOVED, WebhookEvent.PAGE_REMOVED),
    ],
)
def test_change_webhooks_are_signed_like_the_others(kind: ChangeKind, event: WebhookEvent) -> None:
    change = _change(kind, run=None if kind is ChangeKind.REMOVED else 2)
    named, payload = change_webhook(change)
    assert named is event and named.value == f"page.{kind.value}"
    assert payload == change_document(change)
    assert payload["diff"] is None and payload["metadata"] == {}
    body = encode_body(payload)
    headers = delivery_headers(
        delivery_id=uuid.UUID(int=9), event=named, body=body, secret=SECRET, timestamp=1_700_000_000
    )
    assert headers["X-TaskCrawler-Event"] == event.value
    assert verify_signature(
        SECRET,
        body,
        headers["X-TaskCrawler-Timestamp"],
        headers["X-TaskCrawler-Signature"],
        now=1_700_000_001,
    )
    assert orjson.loads(body) == payload


# --- crawl rounds -----------------------------------------------------------------------------


def _round(
    pages: dict[str, uuid.UUID], previous: dict[str, uuid.UUID] | None, *, complete: bool
) -> CrawlRound:
    return CrawlRound(
        monitor_id=uuid.UUID(int=1),
        owner="o",
        slot_at=datetime(2030, 1, 1, tzinfo=UTC),
        callback_url=None,
        pages=pages,
        complete=complete,
        previous=previous,
    )


def test_a_crawl_round_reports_pages_added_and_removed() -> None:
    a, b, c = (f"https://s.example/{name}" for name in "abc")
    ids = iter(uuid.UUID(int=100 + n) for n in range(10))
    now = datetime(2030, 1, 1, tzinfo=UTC)
    first = read_crawl_round(
        _round({a: uuid.UUID(int=2), b: uuid.UUID(int=3)}, None, complete=True),
        now=now,
        new_id=lambda: next(ids),
    )
    assert first.changes == () and dict(first.kept) == {a: uuid.UUID(int=2), b: uuid.UUID(int=3)}
    second = read_crawl_round(
        _round({a: uuid.UUID(int=4), c: uuid.UUID(int=5)}, dict(first.kept), complete=True),
        now=now,
        new_id=lambda: next(ids),
    )
    assert [(ch.kind, ch.url, ch.job_id) for ch in second.changes] == [
        (ChangeKind.ADDED, c, uuid.UUID(int=5)),
        (ChangeKind.REMOVED, b, uuid.UUID(int=3)),
    ]
    assert set(second.kept) == {a, c}
    # Cut short: nothing is reported gone, and the pages it did not reach are kept.
    short = read_crawl_round(
        _round({a: uuid.UUID(int=6)}, dict(second.kept), complete=False),
        now=now,
        new_id=lambda: next(ids),
    )
    assert short.changes == () and set(short.kept) == {a, c}


def test_a_crawl_round_pairs_each_page_with_the_last_rounds_job_for_it() -> None:
    a, b = "https://s.example/a", "https://s.example/b"
    found = _round(
        {"https://S.example/a#top": uuid.UUID(int=4), b: uuid.UUID(int=5)},
        {a: uuid.UUID(int=2)},
        complete=True,
    )
    assert found.previous_jobs() == {"https://S.example/a#top": uuid.UUID(int=2)}
    assert _round({a: uuid.UUID(int=4)}, None, complete=True).previous_jobs() == {}


def test_a_monitor_interval_below_a_millisecond_is_refused_at_start() -> None:
    # Below a microsecond a schedule could not be made: every monitor's next run raised.
    with pytest.raises(ValidationError):
        Settings(monitor_min_interval_seconds=1e-9)
    assert Settings(monitor_min_interval_seconds=0.001).monitor_min_interval_seconds == 0.001
