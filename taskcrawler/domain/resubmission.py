"""What submitting a URL that already has a job does to that job.

A URL has one job per API key (the seed's idempotency), but what the job holds follows what is
asked of it: its formats are the union of every submission's, and a failure is not kept for
good. Decided here, once, for every surface that submits (jobs, batches, Firecrawl's routes, MCP,
the command line); storage applies the plan under the job's row lock, so that two submissions
adding different formats at once both get theirs.

* FAILED or CANCELLED: a new run, fetched (idempotency keeps the job, not its failure).
* COMPLETED, its page fetched longer ago than ``max_age``: a new run, fetched, with every format.
* COMPLETED, lacking formats: a new run that makes them all from the page's stored raw copy,
  without fetching it again (a screenshot needs the live page: fetched then).
* PENDING: its formats grow in place; the run it waits for makes them all (from the stored
  copy only while that copy can make them all and is recent enough for ``max_age``).
* PROCESSING, lacking formats (or reading a copy older than ``max_age``): the attempt under way
  is dropped (its write will match nothing) and the job waits again for one that makes every
  format.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from taskcrawler.domain.jobs import JobStatus
from taskcrawler.domain.rendering import SCREENSHOT

#: Made by every run whatever its formats (extraction always reads the page's metadata): a job
#: given only these needs no new run.
ALWAYS_MADE = frozenset({"metadata"})
#: Formats only the live page can give (a browser's picture of it), never its stored copy.
LIVE_ONLY = frozenset({SCREENSHOT})


class Action(StrEnum):
    #: Answered as it is.
    KEEP = "keep"
    #: Only its formats (and render mode) change: the run it waits for, or the one it had,
    #: makes them.
    WIDEN = "widen"
    #: A new run, made from the page's stored copy: no fetch.
    DERIVE = "derive"
    #: A new run, fetched.
    FETCH = "fetch"
    #: The attempt under way is dropped; the job waits for one that makes every format.
    TAKE_OVER = "take_over"


#: The actions that send the job to the workers again (its id is published).
DISPATCHING = frozenset({Action.DERIVE, Action.FETCH, Action.TAKE_OVER})


@dataclass(frozen=True, slots=True)
class Existing:
    """What the plan reads of the job a URL already has."""

    status: JobStatus
    formats: tuple[str, ...]
    render: str
    #: When its page was last fetched (None: never).
    fetched_at: datetime | None
    #: Whether the raw page it was made from is stored.
    archived: bool
    #: Whether the run it waits for (or is in) reads the stored copy instead of fetching.
    from_archive: bool


@dataclass(frozen=True, slots=True)
class Asked:
    """What the submissions of one URL asked for, folded together."""

    formats: tuple[str, ...]
    #: The shortest ``max_age`` asked (None: none was).
    max_age: float | None = None
    #: The render mode a submission asked for, taken when the job must render to make a
    #: format it lacks (a screenshot) and did not.
    render: str = "never"

    @classmethod
    def fold(cls, asked: Iterable[Asked]) -> Asked:
        requests = list(asked)
        ages = [a.max_age for a in requests if a.max_age is not None]
        renders = [a.render for a in requests if a.render != "never"]
        return cls(
            formats=union(*(a.formats for a in requests)),
            max_age=min(ages) if ages else None,
            render=renders[0] if renders else "never",
        )


@dataclass(frozen=True, slots=True)
class Plan:
    action: Action
    formats: tuple[str, ...]
    render: str
    from_archive: bool

    @property
    def dispatches(self) -> bool:
        return self.action in DISPATCHING


def union(*formats: Sequence[str]) -> tuple[str, ...]:
    """Every format of each, once, in the order first given."""
    return tuple(dict.fromkeys(name for names in formats for name in names))


def plan(job: Existing, asked: Asked, *, now: datetime) -> Plan:
    """What submitting ``asked`` does to ``job`` at ``now``."""
    formats = union(job.formats, asked.formats)
    to_make = frozenset(formats) - frozenset(job.formats) - ALWAYS_MADE
    # Only a browser takes a screenshot: a job that did not render now renders as asked.
    render = asked.render if to_make & LIVE_ONLY and job.render == "never" else job.render
    changed = formats != job.formats or render != job.render
    if job.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        return Plan(Action.FETCH, formats, render, from_archive=False)
    if job.status is JobStatus.COMPLETED:
        if _stale(job.fetched_at, asked.max_age, now):
            return Plan(Action.FETCH, formats, render, from_archive=False)
        if to_make:
            derive = job.archived and not to_make & LIVE_ONLY
            action = Action.DERIVE if derive else Action.FETCH
            return Plan(action, formats, render, from_archive=derive)
        return Plan(Action.WIDEN if changed else Action.KEEP, formats, render, job.from_archive)
    # PENDING or PROCESSING: a run is on its way; it reads the stored copy only if that can
    # still make everything asked, and is recent enough for max_age.
    refetch = bool(to_make & LIVE_ONLY) or _stale(job.fetched_at, asked.max_age, now)
    from_archive = job.from_archive and not refetch
    if job.status is JobStatus.PROCESSING and (to_make or from_archive != job.from_archive):
        return Plan(Action.TAKE_OVER, formats, render, from_archive)
    changed = changed or from_archive != job.from_archive
    return Plan(Action.WIDEN if changed else Action.KEEP, formats, render, from_archive)


def _stale(fetched_at: datetime | None, max_age: float | None, now: datetime) -> bool:
    if max_age is None:
        return False
    return fetched_at is None or fetched_at < now - timedelta(seconds=max_age)
