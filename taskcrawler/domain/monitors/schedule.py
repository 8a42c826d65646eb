"""When a monitor fires: its slots (:class:`Schedule`), the one to fire now (:class:`SlotPlan`),
and a slot fired (:class:`FiredSlot`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

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


@dataclass(frozen=True, slots=True)
class FiredSlot:
    """A slot a scheduler fired: its monitor, its time, the due slots it stood for beyond
    itself (``missed``) and the jobs to publish (restarted, or still waiting for a first run)."""

    monitor_id: UUID
    slot_at: datetime
    missed: int
    job_ids: tuple[UUID, ...]
