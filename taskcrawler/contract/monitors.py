"""Monitors: creating and changing one, a monitor, the changes it found, a watched page's runs."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator

from taskcrawler.contract.base import RequestModel
from taskcrawler.contract.options import JOB_OPTIONS, JobOptionsIn

if TYPE_CHECKING:
    from taskcrawler.domain.crawls import CrawlSpec
    from taskcrawler.domain.monitors import Change, Monitor, RunView

#: What a monitor's jobs may keep (as for any job).
MonitorFormat = Literal["metadata", "markdown", "text", "html", "links"]
_URL_CHARS = 2048
_MAX_MONITOR_URLS = 1000


class MonitorCreate(RequestModel):
    """``POST /api/v1/monitors``: exactly one of ``url``, ``urls`` and ``crawl``."""

    url: str | None = Field(None, max_length=_URL_CHARS, description="One page to watch.")
    urls: list[Annotated[str, Field(max_length=_URL_CHARS)]] | None = Field(
        None, max_length=_MAX_MONITOR_URLS, description="Pages to watch (up to 1,000)."
    )
    crawl: dict[str, Any] | None = Field(
        None,
        description="A site to watch: a crawl's fields (url, limit, max_depth, include_paths, "
        "…). Each round crawls it; pages added and removed since the last round are reported.",
    )
    interval_seconds: float = Field(
        description="Seconds between runs; at least the deployment's minimum (default 60)."
    )
    formats: list[MonitorFormat] | None = Field(
        None,
        max_length=20,
        description='What each run\'s jobs keep; default ["metadata", "markdown"].',
    )
    ignore_selectors: list[Annotated[str, Field(max_length=200)]] | None = Field(
        None,
        max_length=20,
        description="CSS selectors of the parts of a page that change on every load (dates, "
        "counters, ads): left out before a run is compared with the last.",
    )
    callback_url: str | None = Field(
        None,
        max_length=_URL_CHARS,
        description="Gets a signed page.changed POST for each change (default: the key's).",
    )

    @field_validator("crawl")
    @classmethod
    def _crawl_pages_read_as_a_jobs(cls, crawl: dict[str, Any] | None) -> dict[str, Any] | None:
        """The crawl's rendering and scrape options, with the bounds and in the types a job's
        have; its other fields are the domain's to check."""
        if crawl is None:
            return None
        asked = {name: crawl[name] for name in _page_reading() if crawl.get(name) is not None}
        if not asked:
            return crawl
        pages = JobOptionsIn.model_validate(asked).job_options()
        return {**crawl, **{name: getattr(pages, name) for name in asked}}


def _page_reading() -> tuple[str, ...]:
    """How a crawl monitor's pages are read: each job option the monitor does not set itself,
    checked and converted as a job's is."""
    # Imported here: the client reads monitors with this module, and needs no monitor logic.
    from taskcrawler.domain.monitors.spec import MONITOR_OWNED_CRAWL_FIELDS

    return tuple(name for name in JOB_OPTIONS if name not in MONITOR_OWNED_CRAWL_FIELDS)


class MonitorPatch(RequestModel):
    """``PATCH /api/v1/monitors/{id}``: pause, resume, a new interval, or formats to add."""

    paused: bool | None = Field(None, description="true pauses the monitor, false resumes it.")
    interval_seconds: float | None = Field(
        None, description="A new interval; the next run comes one new interval from now."
    )
    formats: list[MonitorFormat] | None = Field(
        None,
        max_length=20,
        description="Formats to add: the monitor's pages make them from their next run on (a "
        "monitor's formats only grow, as a job's do).",
    )


class MonitorPageOut(BaseModel):
    url: str
    job_id: UUID = Field(description="The page's job: its runs are the monitor's rounds.")


class MonitorOut(BaseModel):
    id: UUID
    status: Literal["ACTIVE", "PAUSED"]
    urls: list[str]
    crawl: dict[str, Any] | None = Field(
        None, description="A crawl monitor's crawl, as each round runs it (null for pages)."
    )
    interval_seconds: float
    formats: list[str]
    ignore_selectors: list[str]
    callback_url: str | None
    pages: list[MonitorPageOut]
    rounds: int = Field(description="Scheduled runs fired so far.")
    last_run_at: datetime | None = Field(description="The scheduled time of the last run.")
    next_run_at: datetime | None = Field(description="When the next run is due (unless paused).")
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, monitor: Monitor) -> MonitorOut:
        spec = monitor.spec
        return cls(
            id=monitor.id,
            status="PAUSED" if monitor.paused else "ACTIVE",
            urls=list(spec.urls),
            crawl=_shown_crawl(spec.crawl) if spec.crawl is not None else None,
            interval_seconds=spec.interval_seconds,
            formats=list(spec.formats),
            ignore_selectors=list(spec.selectors),
            callback_url=spec.callback_url,
            pages=[MonitorPageOut(url=page.url, job_id=page.job_id) for page in monitor.pages],
            rounds=monitor.rounds,
            last_run_at=monitor.last_slot_at,
            next_run_at=None if monitor.paused else monitor.next_due_at,
            created_at=monitor.created_at,
            updated_at=monitor.updated_at,
        )


def _shown_crawl(crawl: CrawlSpec) -> dict[str, Any]:
    """A crawl monitor's crawl as an answer may show it: its request headers by name only, as
    a crawl's options are shown (their values are cookies and tokens)."""
    shown = crawl.to_dict()
    if shown["options"] is not None:
        shown["options"] = crawl.pages.options.public()
    return shown


class MonitorList(BaseModel):
    monitors: list[MonitorOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page.")


class ChangeOut(BaseModel):
    id: UUID
    monitor_id: UUID
    kind: Literal["changed", "added", "removed"]
    url: str
    job_id: UUID
    detected_at: datetime
    run: int | None = Field(description="The job's run that found the change.")
    previous_run: int | None = Field(description="The run it was compared with.")
    previous_job_id: UUID | None = Field(
        description="The job of previous_run: job_id for a URL monitor's page, the last "
        "round's job for a crawl monitor's page; null for pages added and removed."
    )
    diff: str | None = Field(description="Unified diff of the two runs' Markdown.")
    diff_complete: bool | None = Field(description="False when the diff was cut at its limit.")
    metadata: dict[str, dict[str, Any]] = Field(
        description='Metadata fields that changed: {"title": {"old": …, "new": …}}.'
    )

    @classmethod
    def of(cls, change: Change) -> ChangeOut:
        # Imported here: the client reads changes with this model and needs no monitors.
        from taskcrawler.domain.monitors import change_document

        return cls.model_validate(change_document(change))


class ChangeList(BaseModel):
    changes: list[ChangeOut]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page.")


class RunContentOut(BaseModel):
    job_id: UUID
    run: int
    status: str
    http_status: int | None
    fetched_at: datetime
    content_run: int | None = Field(
        description="The run whose content this one read (an earlier one after a 304)."
    )
    metadata: dict[str, Any]
    markdown: str = Field(description="The Markdown, read through the monitor's selectors.")
    text: str

    @classmethod
    def of(cls, view: RunView) -> RunContentOut:
        record = view.record
        return cls(
            job_id=record.job_id,
            run=record.run,
            status=record.status,
            http_status=record.http_status,
            fetched_at=record.fetched_at,
            content_run=record.content_run,
            metadata=dict(record.metadata),
            markdown=view.content.markdown,
            text=view.content.text,
        )


class RunDiffOut(BaseModel):
    job_id: UUID
    from_run: int = Field(alias="from")
    to_run: int = Field(alias="to")
    diff: str = Field(description="Unified diff of the Markdown; empty when it is the same.")
    complete: bool
    coarse: bool
    added_lines: int
    removed_lines: int
    metadata: dict[str, dict[str, Any]]

    model_config = ConfigDict(populate_by_name=True)
