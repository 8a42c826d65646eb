"""What a fetched page leaves behind besides its metadata: texts, links, the raw archive."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class OutLink:
    url: str  # absolute, no fragment
    text: str
    rel: tuple[str, ...]
    internal: bool
    nofollow: bool


@dataclass(frozen=True, slots=True)
class RawPage:
    """The body exactly as fetched, with what is needed to extract it again later."""

    final_url: str
    http_status: int
    headers: dict[str, str]
    content_type: str | None
    charset: str | None
    body: bytes


@dataclass(frozen=True, slots=True)
class PageContent:
    #: format -> body, for the formats the job asked for: markdown, text, html
    texts: dict[str, str] = field(default_factory=dict)
    #: outgoing links, when the job asked for the links format
    links: tuple[OutLink, ...] | None = None
    archive: RawPage | None = None
