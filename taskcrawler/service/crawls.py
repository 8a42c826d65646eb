"""Crawls as the API and the command line use them: start, read with live counts, list a
crawl's pages (ordinary jobs), cancel, list a tenant's crawls.

The crawl itself runs in the workers: each page's outcome adds its frontier in its own
transaction (see :mod:`taskcrawler.storage.crawls`); nothing here keeps a crawl in memory.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from taskcrawler.domain import Job, QueueUnavailable
from taskcrawler.domain.crawls import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_LIMIT,
    Crawl,
    CrawlSpec,
    CrawlStatus,
    InvalidCrawlSpec,
)
from taskcrawler.domain.cursors import decode_export_cursor, encode_export_cursor
from taskcrawler.domain.errors import CrawlNotFound
from taskcrawler.domain.exports import START
from taskcrawler.domain.jobs import JobQuery, JobStatus, Refused
from taskcrawler.domain.keys import Caller
from taskcrawler.domain.structured import check_model
from taskcrawler.queue import JobQueue
from taskcrawler.service.jobs import limit_exceeded, max_pending_jobs
from taskcrawler.storage.ports import CrawlRepository, JobRepository

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CrawlPolicy:
    #: The largest ``limit`` a crawl may ask for (TASKCRAWLER_CRAWL_MAX_LIMIT).
    max_limit: int = DEFAULT_MAX_LIMIT
    #: A page published but not claimed within this long is published again by the sweeper.
    redispatch_after: float = 30.0
    #: Unfinished jobs per key at most, unless the key sets its own; None: unlimited.
    max_pending_jobs: int | None = None
    #: A language model is configured (TASKCRAWLER_LLM_URL): the json and summary formats.
    model_configured: bool = False


class CrawlService:
    def __init__(
        self,
        policy: CrawlPolicy,
        crawls: CrawlRepository,
        jobs: JobRepository,
        queue: JobQueue,
    ) -> None:
        self.policy = policy
        self.crawls = crawls
        self.jobs = jobs
        self.queue = queue

    def spec(self, url: str, **options: Any) -> CrawlSpec:
        """A validated spec under this deployment's maximum ``limit`` (no ``limit``: 10,000, or
        the maximum when that is lower);
        :class:`~taskcrawler.domain.crawls.InvalidCrawlSpec` names the first bad field."""
        options = {name: value for name, value in options.items() if value is not None}
        options.setdefault("limit", min(DEFAULT_LIMIT, self.policy.max_limit))
        return CrawlSpec.create(url, max_limit=self.policy.max_limit, **options)

    async def start(self, caller: Caller, spec: CrawlSpec) -> Crawl:
        """A RUNNING crawl, its start page published. Refused (:class:`LimitExceeded`) while
        the caller has its maximum of unfinished jobs: a crawl's pages are jobs; those it adds
        later are bounded by its ``limit`` instead."""
        crawl, _ = await self.start_with_page(caller, spec)
        return crawl

    async def start_with_page(self, caller: Caller, spec: CrawlSpec) -> tuple[Crawl, UUID]:
        """As :meth:`start`, with the start page's job id (which leads back to the crawl)."""
        pages = spec.pages
        check_model(pages.formats, pages.options.json, configured=self.policy.model_configured)
        callback = pages.callback_url or (caller.key.callback_url if caller.key else None)
        if spec.page_webhooks:
            if callback is None:
                raise InvalidCrawlSpec(
                    "webhook_events",
                    "crawl.page needs a callback_url, on the crawl or on its API key",
                )
            # Every page row copies it from the stored spec (storage.crawls.page_callback).
            pages = dataclasses.replace(pages, callback_url=callback)
            spec = dataclasses.replace(spec, pages=pages)
        started = await self.crawls.create(
            caller.owner,
            spec,
            callback_url=callback,
            redispatch_after=self.policy.redispatch_after,
            pending_limit=max_pending_jobs(caller, self.policy.max_pending_jobs),
        )
        if isinstance(started, Refused):
            raise limit_exceeded(started)
        crawl, start_id = started
        await self._publish([start_id])
        return crawl, start_id

    async def get(self, caller: Caller, crawl_id: UUID) -> Crawl:
        """The caller's crawl with its live counts; :class:`CrawlNotFound` for an unknown id or
        another tenant's."""
        crawl = await self.crawls.get(crawl_id, owner=caller.owner)
        if crawl is None:
            raise CrawlNotFound
        return crawl

    async def list_crawls(
        self, caller: Caller, *, limit: int = 50, cursor: str | None = None, running: bool = False
    ) -> tuple[list[Crawl], str | None]:
        return await self.crawls.list_crawls(
            caller.owner, limit=limit, cursor=cursor, running=running
        )

    async def pages(
        self, caller: Caller, crawl_id: UUID, query: JobQuery
    ) -> tuple[list[Job], str | None]:
        """A page of the crawl's jobs (newest first) and the next page's cursor."""
        await self.get(caller, crawl_id)
        query = dataclasses.replace(query, owner=caller.owner, crawl_id=crawl_id)
        return await self.jobs.list_jobs(query)

    async def finished_pages(
        self,
        caller: Caller,
        crawl_id: UUID,
        *,
        statuses: Sequence[JobStatus],
        limit: int,
        cursor: str | None,
        while_running: bool = False,
    ) -> tuple[list[tuple[Job, str]], str | None]:
        """A page of the crawl's pages of ``statuses`` (COMPLETED, FAILED) in the order they
        finished, each with the cursor that reads on after it, and the next page's cursor:
        following it while the crawl runs shows every page that finishes exactly once (None
        once nothing more has finished; with ``while_running``, once nothing more has finished
        and the crawl has stopped: a client caught up with a running crawl reads on from
        there, it has no other place to). InvalidCursor for a cursor this did not make."""
        crawl = await self.get(caller, crawl_id)
        after = START if cursor is None else decode_export_cursor(cursor, "cursor")
        found, more = await self.crawls.finished_pages(
            crawl_id, owner=caller.owner, statuses=statuses, after=after, limit=limit
        )
        pages = [(job, encode_export_cursor(position)) for position, job in found]
        more = more or (while_running and crawl.status is CrawlStatus.RUNNING)
        if not more:
            return pages, None
        return pages, pages[-1][1] if pages else encode_export_cursor(after)

    async def cancel(self, caller: Caller, crawl_id: UUID) -> Crawl:
        """Nothing new is scheduled; the crawl's PENDING pages become CANCELLED (pages being
        fetched finish, and add nothing). A finished crawl is returned as it is."""
        crawl = await self.crawls.cancel(crawl_id, owner=caller.owner)
        if crawl is None:
            raise CrawlNotFound
        return crawl

    async def _publish(self, ids: Sequence[UUID]) -> None:
        try:
            await self.queue.publish(ids)
        except QueueUnavailable as exc:
            # The start page is PENDING with its dispatch due later: the sweeper publishes it.
            log.warning("queue unavailable, the crawl's start left for the sweeper: %s", exc)
            await self.jobs.mark_dispatch_due(ids)


__all__ = ["CrawlPolicy", "CrawlService"]
