"""A page's links, and the pages linking to a URL."""

from __future__ import annotations

from uuid import UUID

from pydantic import BaseModel, ConfigDict

from taskcrawler.domain.pages import StoredLink


class LinkOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    job_id: UUID
    url: str
    text: str | None
    rel: list[str]
    internal: bool
    nofollow: bool
    source_url: str | None = None


class LinkPage(BaseModel):
    links: list[LinkOut]
    next_cursor: int | None

    @classmethod
    def of(cls, links: list[StoredLink], limit: int) -> LinkPage:
        """A page of ``limit`` links; a full page may have a next one."""
        more = len(links) == limit
        return cls(
            links=[LinkOut.model_validate(link) for link in links],
            next_cursor=links[-1].id if more else None,
        )
