"""What a monitor asks for (:class:`MonitorSpec`), each field checked; a monitor as stored and
shown (:class:`Monitor`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from taskcrawler.domain.crawls.spec import (
    CRAWL_FIELDS,
    DEFAULT_MAX_LIMIT,
    CrawlSpec,
    InvalidCrawlSpec,
    _checked_formats,
    _checked_url,
)
from taskcrawler.domain.jobs import DEFAULT_FORMATS as JOB_DEFAULT_FORMATS
from taskcrawler.domain.monitors.schedule import Schedule
from taskcrawler.domain.selectors import IgnoreSelector, InvalidSelector, parse_ignore_selectors
from taskcrawler.domain.urls import normalize_url

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
MONITOR_OWNED_CRAWL_FIELDS = ("formats", "callback_url", "max_age", "webhook_events")


class InvalidMonitorSpec(InvalidCrawlSpec):
    """Bad input for a monitor; ``field`` names it (``urls[3]``, ``crawl.limit``,
    ``ignore_selectors[0]``). A subclass of :class:`InvalidCrawlSpec` so the API answers both
    with the same 422."""


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
        crawl = None if self.crawl is None else self.crawl.with_formats(union)
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
    for name in MONITOR_OWNED_CRAWL_FIELDS:
        if crawl.get(name) is not None:
            raise InvalidMonitorSpec(f"crawl.{name}", "is set on the monitor, not on its crawl")
    unknown = sorted(str(name) for name in crawl if name not in CRAWL_FIELDS)
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
