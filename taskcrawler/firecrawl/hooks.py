"""Firecrawl's webhooks for crawls and batch scrapes: which events, the body of each, and the
port they are kept through. Pure.

A crawl or batch scrape started through the Firecrawl-compatible API with a ``webhook`` is told,
as Firecrawl tells it: ``crawl.started`` (``batch_scrape.started``) once, ``crawl.page`` for
every page once it is fetched (its Firecrawl document in ``data``), then ``crawl.completed``,
or ``crawl.failed`` when not one page could be scraped. Each body is
``{"success", "type", "id", "data", "metadata", "error"}`` with the ``metadata`` the request
gave; each POST is signed as Firecrawl signs it (``X-Firecrawl-Signature: sha256=<hex>``, the
HMAC-SHA256 of the raw body keyed with the API key's webhook secret), carries the receiver's
own ``headers``, and goes through TaskCrawler's outbox: guarded, retried, at least once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from uuid import UUID

from taskcrawler.domain.jobs import Job

HookKind = Literal["crawl", "batch_scrape"]
HookEvent = Literal["started", "page", "completed", "failed"]
#: Every event, the default of a webhook that names none.
HOOK_EVENTS: tuple[HookEvent, ...] = ("started", "page", "completed", "failed")
#: The ending event is announced in a pass of its own, after every page's, and sent this long
#: after it is queued: the pages' POSTs (sent concurrently) go first.
ENDING_DELAY_SECONDS = 1.0
ENDINGS: frozenset[HookEvent] = frozenset({"completed", "failed"})


@dataclass(frozen=True, slots=True)
class FirecrawlHook:
    """A crawl's or batch scrape's webhook. ``api_url``: where the API that started it serves
    screenshots (documents carry their URL)."""

    id: UUID
    owner: str
    kind: HookKind
    target_id: UUID
    url: str
    events: tuple[HookEvent, ...] = HOOK_EVENTS
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    metadata: Mapping[str, Any] | None = None
    api_url: str = ""
    started: bool = False

    def wants(self, event: HookEvent) -> bool:
        return event in self.events

    def event_type(self, event: HookEvent) -> str:
        """``crawl.page``, ``batch_scrape.completed``, …"""
        return f"{self.kind}.{event}"

    def body(
        self, event: HookEvent, data: Sequence[Mapping[str, Any]] = (), error: str | None = None
    ) -> dict[str, Any]:
        """The JSON an event is POSTed with."""
        return {
            "success": error is None,
            "type": self.event_type(event),
            "id": str(self.target_id),
            "data": list(data),
            "metadata": dict(self.metadata or {}),
            "error": error,
        }


def ending(pages_completed: int, pages: int) -> tuple[HookEvent, str | None]:
    """How a finished crawl or batch ends: ``failed`` when it had pages and none completed."""
    if pages and not pages_completed:
        return "failed", f"none of its {pages} pages could be scraped"
    return "completed", None


@dataclass(frozen=True, slots=True)
class HookProgress:
    """Where a hook's crawl or batch stands."""

    pages: int
    completed: int
    #: Nothing of it is left to run (a crawl no longer RUNNING; a batch's jobs all final).
    finished: bool


@dataclass(frozen=True, slots=True)
class Announcement:
    """What one pass announces: the events to send (event, body, the job the delivery is
    filed under), the pages it covers (job id, the finish's ``export_seq``), and whether
    the hook is started and finished once it is written."""

    events: Sequence[tuple[HookEvent, dict[str, Any], UUID]]
    pages: Sequence[tuple[UUID, int]]
    started: bool
    finished: bool


class FirecrawlHookRepository(Protocol):
    """Firecrawl's webhooks of crawls and batch scrapes, and what they announced."""

    async def create(self, hook: FirecrawlHook) -> None: ...

    async def claim(self, *, limit: int, lease_seconds: float) -> list[FirecrawlHook]: ...

    async def unannounced(self, hook: FirecrawlHook, *, limit: int) -> list[tuple[Job, int]]: ...

    async def progress(self, hook: FirecrawlHook) -> HookProgress: ...

    async def first_job(self, hook: FirecrawlHook) -> UUID | None: ...

    async def record(self, hook: FirecrawlHook, announcement: Announcement) -> bool: ...


__all__ = [
    "HOOK_EVENTS",
    "Announcement",
    "FirecrawlHook",
    "FirecrawlHookRepository",
    "HookEvent",
    "HookKind",
    "HookProgress",
    "ending",
]
