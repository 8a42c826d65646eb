"""A Firecrawl scrape holds its request open until the page is done (up to five minutes): once
its client has gone, it stops waiting, rather than read the job from the database ten times a
second for nobody until its ``timeout``."""

from __future__ import annotations

from collections.abc import MutableMapping
from datetime import UTC, datetime
from typing import Any, cast
from uuid import UUID, uuid4

import orjson
import pytest

from taskcrawler.api import create_app
from taskcrawler.domain import JobStatus
from taskcrawler.domain.jobs import Created, Job
from taskcrawler.domain.keys import Caller
from taskcrawler.domain.scrape_options import DEFAULT_OPTIONS
from taskcrawler.domain.web_search import WebQuery, WebResult, web_query
from taskcrawler.firecrawl.options import page_options
from taskcrawler.firecrawl.service import ClientGone, FirecrawlService
from taskcrawler.settings import Settings


async def test_a_scrape_whose_client_has_gone_stops_waiting(sqlite_url: str) -> None:
    app = create_app(Settings(_env_file=None, database_url=sqlite_url))
    body = orjson.dumps({"url": "https://example.com/never-fetched", "timeout": 3_000})
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v2/scrape",
        "raw_path": b"/v2/scrape",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"test"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("test", 80),
    }
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        # The body, then the client is gone (as uvicorn says once the connection closed).
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    async with app.router.lifespan_context(app):
        firecrawl = app.state.firecrawl
        reads = 0
        get = firecrawl.jobs.get

        async def counted_get(*args: Any, **kwargs: Any) -> Any:
            nonlocal reads
            reads += 1
            return await get(*args, **kwargs)

        firecrawl.jobs.get = counted_get
        await app(scope, receive, send)
    # No worker runs: the job stays pending, and the scrape would wait for it until its timeout
    # (thirty reads of the job) with nobody left to answer.
    assert reads <= 1
    assert not any(m["type"] == "http.response.start" and m["status"] == 408 for m in sent)


class PendingJobs:
    """Jobs that never finish: what a scrape waits for while no worker runs."""

    def __init__(self) -> None:
        self.reads = 0

    def check_options(self, options: Any) -> None:
        pass

    async def submit_batch(self, caller: Caller, urls: list[str], options: Any) -> list[Created]:
        return [Created(job=pending(url), created=True) for url in urls]

    async def get(self, caller: Caller, job_id: UUID) -> Job:
        self.reads += 1
        return pending("https://site.test/")


class Engine:
    configured = True

    async def search(self, query: WebQuery) -> list[WebResult]:
        return [WebResult(f"https://site.test/{n}", "t", "d", n) for n in range(3)]


def pending(url: str) -> Job:
    return Job(uuid4(), url, JobStatus.PENDING, 0, datetime.now(UTC))


async def test_a_search_whose_client_has_gone_stops_waiting_for_its_pages() -> None:
    jobs = PendingJobs()
    firecrawl = FirecrawlService(cast(Any, jobs), *[cast(Any, None)] * 6, web=cast(Any, Engine()))
    page = page_options(["markdown"], None, DEFAULT_OPTIONS)

    async def gone() -> bool:
        return True

    with pytest.raises(ClientGone):
        await firecrawl.search_sources(
            Caller(""),
            {"web": web_query("q")},
            page,
            timeout_ms=3_000,
            screenshot_url=lambda job_id: "",
            gone=gone,
        )
    assert jobs.reads == 0
