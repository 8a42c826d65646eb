"""Announces Firecrawl crawls' and batch scrapes' events to their webhooks
(:mod:`taskcrawler.firecrawl.hooks`): every worker polls the open hooks, each taken by
one worker at a time under a lease, and queues their deliveries in the webhook outbox, from
where the dispatcher sends them (guarded, signed, retried) like every webhook."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from uuid import UUID

import orjson

from taskcrawler.domain import ServiceUnavailable
from taskcrawler.domain.jobs import Job
from taskcrawler.firecrawl.documents import firecrawl_document, their_formats
from taskcrawler.firecrawl.hooks import (
    Announcement,
    FirecrawlHook,
    FirecrawlHookRepository,
    HookEvent,
    ending,
)
from taskcrawler.storage.ports import ContentRepository

log = logging.getLogger(__name__)

#: Hooks one pass takes, and pages one pass announces of each.
HOOKS_PER_PASS = 20
PAGES_PER_PASS = 100
#: A pass announces a hook's pages until their documents pass this many bytes of JSON (one
#: page at least): a hundred big pages' documents are GBs, held at once and written in one
#: transaction. The rest are announced by the next passes.
PASS_MAX_BYTES = 32 * 1024 * 1024
LEASE_SECONDS = 60.0


class HookAnnouncer:
    def __init__(
        self,
        hooks: FirecrawlHookRepository,
        content: ContentRepository,
        *,
        interval_seconds: float = 0.5,
    ) -> None:
        self.hooks = hooks
        self.content = content
        self.interval_seconds = interval_seconds

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.announce_due()
            except ServiceUnavailable as exc:
                log.warning("firecrawl webhooks: %s unavailable: %s", exc.dependency, exc)
            except Exception:
                log.exception("firecrawl webhooks: unexpected error; going on")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.interval_seconds)

    async def announce_due(self) -> int:
        """One pass: what each open hook has to say since the last. Returns the events."""
        claimed = await self.hooks.claim(limit=HOOKS_PER_PASS, lease_seconds=LEASE_SECONDS)
        sent = 0
        for hook in claimed:
            announcement = await self._announcement(hook)
            if await self.hooks.record(hook, announcement):
                sent += len(announcement.events)
        return sent

    async def _announcement(self, hook: FirecrawlHook) -> Announcement:
        events: list[tuple[HookEvent, dict[str, Any], UUID]] = []
        filed_under = await self.hooks.first_job(hook)
        if filed_under is None:  # a batch of jobs that are gone: nothing to say, ever
            return Announcement((), (), hook.started, True)
        if not hook.started and hook.wants("started"):
            events.append(("started", hook.body("started"), filed_under))
        # Read before the pages: a crawl seen finished here has all its pages fetched, so
        # the pages read next are the last (any later finish was read with them).
        progress = await self.hooks.progress(hook)
        pages = await self.hooks.unannounced(hook, limit=PAGES_PER_PASS)
        if hook.wants("page"):
            size = 0
            for index, (job, _) in enumerate(pages):
                document = await self._document(hook, job)
                size += len(orjson.dumps(document))
                if index and size > PASS_MAX_BYTES:
                    pages = pages[:index]
                    break
                events.append(("page", hook.body("page", [document]), job.id))
        # The end is told in a pass that found no page left to tell: after every page's event.
        finished = progress.finished and not pages
        if finished:
            event, error = ending(progress.completed, progress.pages)
            if hook.wants(event):
                events.append((event, hook.body(event, error=error), filed_under))
        return Announcement(events, [(job.id, seq) for job, seq in pages], True, finished)

    async def _document(self, hook: FirecrawlHook, job: Job) -> dict[str, Any]:
        api_url = hook.api_url.rstrip("/")
        return await firecrawl_document(
            self.content,
            job,
            their_formats(job),
            lambda job_id: f"{api_url}/api/v1/jobs/{job_id}/screenshot",
        )


__all__ = ["HookAnnouncer"]
