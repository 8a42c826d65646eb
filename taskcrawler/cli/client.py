"""A small asynchronous client of the HTTP API (v1), for the command line.

Every failure becomes an :class:`ApiError` whose message is one line a person can act on: what the
server said, and what to do about it when that is clear (set the key, wait, start the server).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from types import TracebackType
from typing import Any, Self

import aiohttp
import orjson

from taskcrawler.cli.commands import API_KEY_ENV, DEFAULT_API, MAX_BATCH
from taskcrawler.domain.jobs import FINAL_STATUSES

JOBS = "/api/v1/jobs"
CRAWLS = "/api/v1/crawls"
MONITORS = "/api/v1/monitors"
MAX_PAGE = 500  # the list endpoint's largest page
FINISHED = frozenset(status.value for status in FINAL_STATUSES)

Job = dict[str, Any]
Params = Sequence[tuple[str, str]]

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


def api_key_from_env() -> str | None:
    return os.environ.get(API_KEY_ENV, "").strip() or None


def _detail(body: Any) -> str:
    """FastAPI's ``detail``: a string, or a list of validation errors."""
    detail = body.get("detail") if isinstance(body, Mapping) else None
    if isinstance(detail, list):
        parts = []
        for item in detail:
            if not isinstance(item, Mapping):
                parts.append(str(item))
                continue
            where = ".".join(
                str(p) for p in item.get("loc", ()) if p not in ("body", "query", "path")
            )
            parts.append(f"{where}: {item.get('msg')}" if where else str(item.get("msg")))
        return "; ".join(parts)
    return str(detail) if detail else ""


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


class ApiClient:
    """``async with ApiClient(url, key) as api: await api.submit(...)``."""

    def __init__(self, base_url: str = DEFAULT_API, key: str | None = None, timeout: float = 30.0):
        self.base_url = base_url.rstrip("/")
        self.key = key
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Self:
        headers = {"Accept": "application/json", "User-Agent": "taskcrawler-cli"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        self._session = aiohttp.ClientSession(
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=self.timeout),
            json_serialize=lambda obj: orjson.dumps(obj).decode(),
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # ------------------------------------------------------------------ calls

    async def submit(self, url: str, **options: Any) -> tuple[Job, bool]:
        """One URL: the job, and whether it is new (201) or the URL's existing job (200).
        ``options``: job options of the API (``render``, ``formats``, ...)."""
        status, body = await self._call("POST", JOBS, json={"url": url, **options})
        return body, status == 201

    async def submit_batch(self, urls: Sequence[str], **options: Any) -> dict[str, Any]:
        """Up to 1,000 URLs: ``{"jobs": [...each with "created"...], "created", "existing"}``."""
        if len(urls) > MAX_BATCH:
            raise ValueError(f"at most {MAX_BATCH} URLs per batch")
        body_in = {"urls": list(urls), **options}
        _, body = await self._call("POST", f"{JOBS}/batch", json=body_in)
        return dict(body)

    async def list_jobs(
        self,
        *,
        statuses: Sequence[str] = (),
        host: str | None = None,
        created_after: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> tuple[list[Job], str | None]:
        params: list[tuple[str, str]] = [("status", s) for s in statuses]
        params.append(("limit", str(limit)))
        for name, value in (("host", host), ("created_after", created_after), ("cursor", cursor)):
            if value:
                params.append((name, value))
        _, body = await self._call("GET", JOBS, params=params)
        return list(body["jobs"]), body.get("next_cursor")

    async def get_job(self, job_id: str) -> Job:
        _, body = await self._call("GET", f"{JOBS}/{job_id}")
        return dict(body)

    async def runs(self, job_id: str) -> list[dict[str, Any]]:
        _, body = await self._call("GET", f"{JOBS}/{job_id}/runs")
        return list(body)

    async def retry(self, job_id: str) -> Job:
        _, body = await self._call("POST", f"{JOBS}/{job_id}/retry")
        return dict(body)

    async def cancel(self, job_id: str) -> Job:
        _, body = await self._call("DELETE", f"{JOBS}/{job_id}")
        return dict(body)

    async def search(self, params: Params) -> list[dict[str, Any]]:
        _, body = await self._call("GET", "/api/v1/search", params=params)
        return list(body["results"])

    async def start_crawl(self, spec: dict[str, Any]) -> dict[str, Any]:
        _, body = await self._call("POST", CRAWLS, json=spec)
        return dict(body)

    async def get_crawl(self, crawl_id: str) -> dict[str, Any]:
        _, body = await self._call("GET", f"{CRAWLS}/{crawl_id}")
        return dict(body)

    async def cancel_crawl(self, crawl_id: str) -> dict[str, Any]:
        _, body = await self._call("DELETE", f"{CRAWLS}/{crawl_id}")
        return dict(body)

    # ------------------------------------------------------------------ monitors

    async def create_monitor(self, body: dict[str, Any]) -> dict[str, Any]:
        _, created = await self._call("POST", MONITORS, json=body)
        return dict(created)

    async def list_monitors(
        self, *, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        params = [("limit", str(limit))] + ([("cursor", cursor)] if cursor else [])
        _, body = await self._call("GET", MONITORS, params=params)
        return list(body["monitors"]), body.get("next_cursor")

    async def update_monitor(self, monitor_id: str, body: dict[str, Any]) -> dict[str, Any]:
        _, updated = await self._call("PATCH", f"{MONITORS}/{monitor_id}", json=body)
        return dict(updated)

    async def delete_monitor(self, monitor_id: str) -> None:
        await self._call("DELETE", f"{MONITORS}/{monitor_id}")

    async def changes(
        self, monitor_id: str, *, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        params = [("limit", str(limit))] + ([("cursor", cursor)] if cursor else [])
        _, body = await self._call("GET", f"{MONITORS}/{monitor_id}/changes", params=params)
        return list(body["changes"]), body.get("next_cursor")

    # ------------------------------------------------------------------ plumbing

    async def _call(
        self, method: str, path: str, *, json: Any = None, params: Params | None = None
    ) -> tuple[int, Any]:
        if self._session is None:
            raise RuntimeError("use `async with ApiClient(...)`")
        url = self.base_url + path
        try:
            async with self._session.request(method, url, json=json, params=params) as response:
                raw = await response.read()
                status = response.status
                retry_after = _retry_after(response.headers.get("Retry-After"))
                content_type = response.content_type
        except aiohttp.ClientConnectorError as exc:
            raise ApiError(
                f"cannot connect to the API at {self.base_url} ({exc.os_error.strerror or exc}); "
                "is `taskcrawler serve` running there? (--api sets the address)"
            ) from None
        except TimeoutError:
            raise ApiError(
                f"the API at {self.base_url} did not answer within {self.timeout:g} s"
            ) from None
        except aiohttp.ClientError as exc:
            raise ApiError(f"talking to the API at {self.base_url} failed: {exc}") from None
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
            if status < 400:
                raise ApiError(
                    f"{url} answered {status} with {content_type or 'no content type'}, not "
                    "JSON: is --api the address of a TaskCrawler API?",
                    status=status,
                ) from None
        if status >= 400:
            raise self._error(status, body, retry_after, url)
        return status, body

    @staticmethod
    def _error(status: int, body: Any, retry_after: float | None, url: str) -> ApiError:
        detail = _detail(body)
        if not detail:
            detail = "not found" if status == 404 else "no details"
            if status == 404 and body is None:
                detail = f"{url} does not exist: is --api the address of a TaskCrawler API?"
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "error"
        message = f"{status} {reason}: {detail}"
        if status in (429, 503) and retry_after is not None:
            message += f"; try again in {retry_after:g} s"
        if hint := _HINTS.get(status):
            message += f" ({hint})"
        return ApiError(message, status=status, retry_after=retry_after)
