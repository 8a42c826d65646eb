"""A typed Python client of the TaskCrawler API, sync and async.

::

    from taskcrawler.client import TaskCrawler

    with TaskCrawler("http://127.0.0.1:8000", api_key="tc_...") as tc:
        job = tc.wait(tc.submit("https://example.com", formats=["markdown"]).job.id)
        print(job.status, job.scraped_title)
        print(tc.content(job.id))

:class:`AsyncTaskCrawler` has the same methods, to ``await``. A job's options
(:class:`JobOptions`: formats, callback_url, max_age, render, render_options) and a crawl's
(:class:`CrawlOptions`) and a map's (:class:`MapOptions`) are keyword arguments. Both raise
:class:`TaskCrawlerError` (``status``, ``detail``, ``retry_after``) for every refusal. It imports
neither the server nor its database drivers: only httpx and pydantic.
"""

from taskcrawler.client._async import AsyncTaskCrawler
from taskcrawler.client._base import DEFAULT_BASE_URL
from taskcrawler.client._calls import (
    MAX_BATCH,
    MAX_PAGE,
    CrawlOptions,
    JobOptions,
    MapOptions,
    SearchMode,
    SearchOptions,
)
from taskcrawler.client._errors import TaskCrawlerError
from taskcrawler.client._sync import TaskCrawler
from taskcrawler.client.models import (
    Batch,
    BatchJob,
    Crawl,
    CrawlPage,
    ExportRecord,
    Job,
    JobPage,
    JobStatus,
    Link,
    LinkPage,
    MapResult,
    Run,
    SearchResult,
    SearchResults,
    Submitted,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "MAX_BATCH",
    "MAX_PAGE",
    "AsyncTaskCrawler",
    "Batch",
    "BatchJob",
    "Crawl",
    "CrawlOptions",
    "CrawlPage",
    "ExportRecord",
    "Job",
    "JobOptions",
    "JobPage",
    "JobStatus",
    "Link",
    "LinkPage",
    "MapOptions",
    "MapResult",
    "Run",
    "SearchMode",
    "SearchOptions",
    "SearchResult",
    "SearchResults",
    "Submitted",
    "TaskCrawler",
    "TaskCrawlerError",
]
