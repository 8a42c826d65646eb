"""The command line's view of the API: :class:`taskcrawler.client.AsyncTaskCrawler`, with jobs as
the JSON the commands print, and errors as one line a person can act on.

Every failure becomes an :class:`ApiError` whose message says what the server said, and what to
do about it when that is clear (set the key, wait, start the server).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self, Unpack

from pydantic import BaseModel

from taskcrawler.cli.commands import API_KEY_ENV, DEFAULT_API, api_key_from_env
from taskcrawler.client import (
    MAX_PAGE,
    AsyncTaskCrawler,
    CancelFilter,
    JobOptions,
    SearchOptions,
    TaskCrawlerError,
)
from taskcrawler.domain.jobs import FINAL_STATUSES

__all__ = ["FINISHED", "MAX_PAGE", "ApiClient", "ApiError", "Job", "api_key_from_env"]

FINISHED = frozenset(status.value for status in FINAL_STATUSES)
JOBS = "/api/v1/jobs"

Job = dict[str, Any]

_HINTS = {
    401: f"set {API_KEY_ENV} to a valid key",
    403: "this needs an admin key",
}


class ApiError(Exception):
    """The API refused or could not be reached. ``status`` is None when there was no answer."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        """Worth asking again later: no answer, rate-limited, or the service briefly down."""
        return self.status is None or self.status in (429, 502, 503, 504)

    @classmethod
    def of(cls, error: TaskCrawlerError) -> ApiError:
        message = str(error)
        if error.status is not None and (hint := _HINTS.get(error.status)):
            message += f" ({hint})"
        return cls(message, status=error.status, retry_after=error.retry_after)


def _json(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")


class ApiClient:
    """``async with ApiClient(url, key) as api: await api.submit(...)``."""

    def __init__(self, base_url: str = DEFAULT_API, key: str | None = None, timeout: float = 30.0):
        self.client = AsyncTaskCrawler(base_url, key, timeout=timeout, user_agent="taskcrawler-cli")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.client.aclose()

    async def submit(self, url: str, **options: Unpack[JobOptions]) -> tuple[Job, bool]:
        """One URL: the job, and whether it is new (201) or the URL's existing job (200)."""
        try:
            submitted = await self.client.submit(url, **options)
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None
        return _json(submitted.job), submitted.created

    async def submit_batch(
        self, urls: Sequence[str], **options: Unpack[JobOptions]
    ) -> dict[str, Any]:
        """Up to 1,000 URLs: ``{"jobs": [...each with "created"...], "created", "existing"}``."""
        try:
            return _json(await self.client.submit_batch(urls, **options))
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None

    async def list_jobs(
        self,
        *,
        statuses: Sequence[str] = (),
        host: str | None = None,
        created_after: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        id_prefix: str | None = None,
    ) -> tuple[list[Job], str | None]:
        try:
            page = await self.client.list_jobs(
                statuses=statuses,
                host=host,
                created_after=created_after,
                limit=limit,
                cursor=cursor,
                id_prefix=id_prefix,
            )
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None
        return [_json(job) for job in page.jobs], page.next_cursor

    async def get_job(self, job_id: str) -> Job:
        try:
            return _json(await self.client.get_job(job_id))
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None

    async def runs(self, job_id: str) -> list[dict[str, Any]]:
        try:
            return [_json(run) for run in await self.client.runs(job_id)]
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None

    async def retry(self, job_id: str) -> Job:
        try:
            return _json(await self.client.retry(job_id))
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None

    async def cancel(self, job_id: str) -> Job:
        try:
            return _json(await self.client.cancel(job_id))
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None

    async def cancel_matching(self, **where: Unpack[CancelFilter]) -> dict[str, Any]:
        """Cancel every unfinished job that matches: ``{"cancelled", "ids", "more"}``."""
        try:
            return _json(await self.client.cancel_matching(**where))
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None

    async def search(
        self, q: str, **options: Unpack[SearchOptions]
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """The hits, and the rankings that made them (``legs``)."""
        try:
            found = await self.client.search(q, **options)
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None
        return [_json(result) for result in found.results], list(found.legs)

    async def start_crawl(self, spec: dict[str, Any]) -> dict[str, Any]:
        """``spec``: ``url`` and :meth:`AsyncTaskCrawler.start_crawl`'s options."""
        try:
            return _json(await self.client.start_crawl(**spec))
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None

    async def get_crawl(self, crawl_id: str) -> dict[str, Any]:
        try:
            return _json(await self.client.get_crawl(crawl_id))
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None

    async def list_crawls(
        self, *, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        try:
            page = await self.client.list_crawls(limit=limit, cursor=cursor)
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None
        return [_json(crawl) for crawl in page.crawls], page.next_cursor

    async def cancel_crawl(self, crawl_id: str) -> dict[str, Any]:
        try:
            return _json(await self.client.cancel_crawl(crawl_id))
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None

    # ------------------------------------------------------------------ monitors

    async def create_monitor(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body``: ``interval_seconds`` and :meth:`AsyncTaskCrawler.create_monitor`'s
        options."""
        try:
            return _json(await self.client.create_monitor(**body))
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None

    async def list_monitors(
        self, *, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        try:
            page = await self.client.list_monitors(limit=limit, cursor=cursor)
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None
        return [_json(monitor) for monitor in page.monitors], page.next_cursor

    async def update_monitor(self, monitor_id: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            return _json(await self.client.update_monitor(monitor_id, **body))
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None

    async def delete_monitor(self, monitor_id: str) -> None:
        try:
            await self.client.delete_monitor(monitor_id)
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None

    async def changes(
        self, monitor_id: str, *, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        try:
            page = await self.client.changes(monitor_id, limit=limit, cursor=cursor)
        except TaskCrawlerError as exc:
            raise ApiError.of(exc) from None
        return [_json(change) for change in page.changes], page.next_cursor
