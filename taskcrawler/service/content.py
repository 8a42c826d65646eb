"""What a page says beyond its metadata: its texts, links and screenshot, and the links to a
URL."""

from __future__ import annotations

from uuid import UUID

from taskcrawler.domain.errors import NotFound
from taskcrawler.domain.keys import Caller
from taskcrawler.domain.pages import Screenshot, StoredLink
from taskcrawler.service.jobs import JobService
from taskcrawler.storage.ports import ContentRepository


class ContentService:
    def __init__(self, jobs: JobService, content: ContentRepository) -> None:
        self.jobs = jobs
        self.content = content

    async def text(self, caller: Caller, job_id: UUID, fmt: str) -> str:
        """The job's ``markdown``, ``text`` or ``html``."""
        await self._completed_job(caller, job_id, fmt)
        body = await self.content.text(job_id, fmt)
        if body is None:
            raise NotFound(f"no {fmt} stored for this job")
        return body

    async def screenshot(self, caller: Caller, job_id: UUID) -> Screenshot:
        """The PNG of the job's rendered page; :class:`NotFound` when there is none (not asked
        for, not rendered yet, or the job is another tenant's)."""
        await self.jobs.get(caller, job_id)
        shot = await self.content.screenshot(job_id)
        if shot is None:
            raise NotFound("no screenshot stored for this job")
        return shot

    async def capture(self, caller: Caller, job_id: UUID, kind: str, index: int) -> bytes:
        """The ``index``-th file (0 first) of the job's ``kind`` actions: a screenshot action's
        PNG or a pdf action's PDF; :class:`NotFound` when there is none."""
        await self.jobs.get(caller, job_id)
        data = await self.content.capture(job_id, kind, index)
        if data is None:
            raise NotFound(f"no {kind} action's file {index} stored for this job")
        return data

    async def links_of(
        self, caller: Caller, job_id: UUID, *, after: int, limit: int
    ) -> list[StoredLink]:
        """The job's outgoing links after the one whose id is ``after``, in page order."""
        await self._completed_job(caller, job_id, "links")
        return await self.content.links_of(job_id, after=after, limit=limit)

    async def backlinks(
        self, caller: Caller, target_url: str, *, after: int, limit: int
    ) -> list[StoredLink]:
        """Links from the caller's scraped pages to ``target_url``, oldest first."""
        return await self.content.backlinks(caller.owner, target_url, after=after, limit=limit)

    async def _completed_job(self, caller: Caller, job_id: UUID, fmt: str) -> None:
        await self.jobs.with_format(caller, job_id, fmt)
