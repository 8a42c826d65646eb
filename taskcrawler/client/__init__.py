"""A typed Python client of the TaskCrawler API, sync and async.

::

    from taskcrawler.client import TaskCrawler

    with TaskCrawler("http://127.0.0.1:8000", api_key="tc_...") as tc:
        job = tc.wait(tc.submit("https://example.com", formats=["markdown"]).job.id)
        print(job.status, job.scraped_title)
        print(tc.content(job.id))

:class:`AsyncTaskCrawler` has the same methods, to ``await``. A job's options
(:class:`JobOptions`, a keyword for each of the API's), a crawl's (:class:`CrawlOptions`), a
map's (:class:`MapOptions`), a monitor's (:class:`MonitorOptions`) and a bulk cancel's filter
(:class:`CancelFilter`) are keyword arguments. Both raise :class:`TaskCrawlerError` (``status``,
``detail``, ``retry_after``) for every refusal. It imports neither the server nor its database
drivers: only httpx and pydantic.
"""

from taskcrawler.client._async import AsyncTaskCrawler
from taskcrawler.client._base import DEFAULT_BASE_URL
from taskcrawler.client._calls import (
    MAX_BATCH,
    MAX_PAGE,
    CancelFilter,
    CrawlOptions,
    JobOptions,
    KeyOptions,
    MapOptions,
    MonitorChanges,
    MonitorOptions,
    RetryFilter,
    SearchMode,
    SearchOptions,
)
from taskcrawler.client._errors import TaskCrawlerError
from taskcrawler.client._sync import TaskCrawler
from taskcrawler.client.models import (
    ApiKey,
    Batch,
    BatchJob,
    Cancelled,
    Change,
    ChangePage,
    Chunk,
    Chunks,
    Crawl,
    CrawlPage,
    Delivery,
    ExportRecord,
    Job,
    JobPage,
    JobStatus,
    KeyWithSecret,
    Link,
    LinkPage,
    MapResult,
    Monitor,
    MonitorPage,
    MonitorPageEntry,
    NewKey,
    Restarted,
    Run,
    RunContent,
    RunDiff,
    SearchResult,
    SearchResults,
    Submitted,
    WebSearchResult,
    WebSearchResults,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "MAX_BATCH",
    "MAX_PAGE",
    "ApiKey",
    "AsyncTaskCrawler",
    "Batch",
    "BatchJob",
    "CancelFilter",
    "Cancelled",
    "Change",
    "ChangePage",
    "Chunk",
    "Chunks",
    "Crawl",
    "CrawlOptions",
    "CrawlPage",
    "Delivery",
    "ExportRecord",
    "Job",
    "JobOptions",
    "JobPage",
    "JobStatus",
    "KeyOptions",
    "KeyWithSecret",
    "Link",
    "LinkPage",
    "MapOptions",
    "MapResult",
    "Monitor",
    "MonitorChanges",
    "MonitorOptions",
    "MonitorPage",
    "MonitorPageEntry",
    "NewKey",
    "Restarted",
    "RetryFilter",
    "Run",
    "RunContent",
    "RunDiff",
    "SearchMode",
    "SearchOptions",
    "SearchResult",
    "SearchResults",
    "Submitted",
    "TaskCrawler",
    "TaskCrawlerError",
    "WebSearchResult",
    "WebSearchResults",
]
