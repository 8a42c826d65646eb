"""A page: as fetched, the links it holds, and what a job keeps of it besides its metadata."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from taskcrawler.domain.scrape_options import DEFAULT_OPTIONS, ScrapeOptions


@dataclass(frozen=True, slots=True)
class FetchedPage:
    """The body exactly as fetched, with what is needed to extract it again later."""

    url: str  # as requested
    final_url: str  # after redirects
    status: int
    headers: dict[str, str]  # names in lower case
    content_type: str | None
    charset: str | None
    body: bytes
    #: When it was fetched, for a stored copy read again (None: just now).
    fetched_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Link:
    """One outgoing link of a page. ``url`` is absolute and has no fragment."""

    url: str
    text: str
    rel: tuple[str, ...]
    internal: bool
    nofollow: bool


@dataclass(frozen=True, slots=True)
class Candidate:
    """A link on its way to a crawl's frontier (an attempt's outcome carries them): ``key`` is
    what the crawl deduplicates on (and fetches: the key is a valid URL, with tracking
    parameters and fragment gone), ``depth`` its link hops."""

    key: str
    depth: int


class StoredLink(BaseModel):
    """A link found on a scraped page, as kept: ``id`` orders a page's links (and is their
    cursor), ``source_url`` is the page it is on. A model, not a dataclass: the API shows it
    as it is (:class:`~taskcrawler.contract.links.LinkOut`), from this one declaration."""

    model_config = ConfigDict(frozen=True)

    id: int
    job_id: UUID
    url: str
    text: str | None
    rel: tuple[str, ...]
    internal: bool
    nofollow: bool
    source_url: str | None = None


@dataclass(frozen=True, slots=True)
class Screenshot:
    """A PNG of a rendered page."""

    png: bytes
    width: int
    height: int
    #: The page was taller than ``render_screenshot_max_height`` (or its PNG over the byte
    #: limit) and the picture stops before the page does.
    cut: bool


@dataclass(frozen=True, slots=True)
class Capture:
    """A file a page action made: a ``screenshot`` action's PNG or a ``pdf`` action's PDF."""

    kind: Literal["screenshot", "pdf"]
    data: bytes


@dataclass(frozen=True, slots=True)
class PageContent:
    #: format -> body, for the formats the job asked for: markdown, text, html
    texts: dict[str, str] = field(default_factory=dict)
    #: outgoing links, when the job asked for the links format
    links: tuple[Link, ...] | None = None
    archive: FetchedPage | None = None
    #: a picture of the rendered page, when the job asked for the screenshot format
    screenshot: Screenshot | None = None
    #: the files its page actions made, in the order they ran, replacing an earlier run's; None
    #: when this run made none of its own (a page extracted again from its stored copy): the
    #: earlier run's are kept, as the result's ``actions`` that lists them is
    captures: tuple[Capture, ...] | None = None


@dataclass(frozen=True, slots=True)
class Archived:
    """A job's stored copy of its page, to extract again."""

    job_id: UUID
    owner: str
    formats: tuple[str, ...]
    page: FetchedPage
    #: The stored result: what a re-extraction does not make (``render``) is kept from it.
    result: dict[str, Any] | None = None
    #: The job's options: what of the page its content holds, how many pages of a PDF.
    options: ScrapeOptions = DEFAULT_OPTIONS


@dataclass(frozen=True, slots=True)
class ContentRecord:
    """What one job's page leaves beside the job: its texts, links, copy and files."""

    job_id: UUID
    owner: str
    content: PageContent
    #: Whether an earlier run may have stored rows that these replace. Only a finished job is
    #: ever restarted, and restarting counts a run, so a job on its first run has none: its
    #: writes skip the DELETEs, two of a lone metadata-only outcome's five statements.
    replaces: bool = True


@dataclass(frozen=True, slots=True)
class Reextracted:
    """A page extracted again from its stored copy: what replaces its content, title and
    result."""

    record: ContentRecord
    title: str | None
    result: dict[str, Any]
    #: The new Markdown, for a job whose formats include chunks: its stored chunks (offsets
    #: into the Markdown) are made again from it.
    markdown: str | None = None
