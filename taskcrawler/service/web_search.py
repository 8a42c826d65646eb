"""Web search through the operator's search engine (a SearXNG instance): the results, and
for the native API each result made a job when formats are asked (the jobs' fetches go through
the address guard like any other)."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from taskcrawler.domain.jobs import JobOptions
from taskcrawler.domain.keys import Caller
from taskcrawler.domain.web_search import WebQuery, WebResult, WebSearchNotConfigured
from taskcrawler.service.jobs import JobService
from taskcrawler.websearch import WebSearch


@dataclass(frozen=True, slots=True)
class FoundResult:
    result: WebResult
    #: The result's job, when formats were asked.
    job_id: UUID | None = None


class WebSearchService:
    def __init__(self, engine: WebSearch | None, jobs: JobService) -> None:
        self.engine = engine
        self.jobs = jobs

    @property
    def configured(self) -> bool:
        return self.engine is not None

    async def search(self, query: WebQuery) -> list[WebResult]:
        """The query's results; :class:`WebSearchNotConfigured` without an engine,
        ``WebSearchFailed`` when it gives no usable answer."""
        if self.engine is None:
            raise WebSearchNotConfigured()
        return await self.engine.search(query)

    async def search_and_submit(
        self, caller: Caller, query: WebQuery, options: JobOptions | None
    ) -> list[FoundResult]:
        """The results, each a job of the caller when ``options`` ask for formats."""
        if self.engine is not None and options is not None:
            # Checked before the engine is asked: a request that would be refused costs none.
            self.jobs.check_options(options)
        results = await self.search(query)
        if options is None or not results:
            return [FoundResult(result) for result in results]
        created = await self.jobs.submit_batch(caller, [r.url for r in results], options)
        return [
            FoundResult(result, made.job.id) for result, made in zip(results, created, strict=True)
        ]
