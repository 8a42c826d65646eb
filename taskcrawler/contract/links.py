"""A page's links, and the pages linking to a URL."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from taskcrawler.domain.pages import StoredLink


class LinkOut(StoredLink):
    """A link found on a scraped page: ``id`` orders its page's links (and is their cursor)."""

    model_config = ConfigDict(from_attributes=True, frozen=False)

    rel: list[str]  # type: ignore[assignment]


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
