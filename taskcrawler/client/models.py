"""What the API answers, as typed models: the very models the API renders
(:mod:`taskcrawler.contract`), under the names the client has always given them. They import
pydantic and the domain, not the server, so ``import taskcrawler.client`` stays light.

A newer server may add fields: the models ignore fields they do not know rather than fail.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from taskcrawler.contract.crawls import CrawlList as CrawlPage
from taskcrawler.contract.crawls import CrawlOut as Crawl
from taskcrawler.contract.deliveries import DeliveryOut as Delivery
from taskcrawler.contract.jobs import BatchItem as BatchJob
from taskcrawler.contract.jobs import BatchOut as Batch
from taskcrawler.contract.jobs import CancelOut as Cancelled
from taskcrawler.contract.jobs import JobOut as Job
from taskcrawler.contract.jobs import JobPage
from taskcrawler.contract.jobs import RetryOut as Restarted
from taskcrawler.contract.jobs import RunOut as Run
from taskcrawler.contract.keys import KeyCreated as NewKey
from taskcrawler.contract.keys import KeyOut as ApiKey
from taskcrawler.contract.keys import KeyWithSecret
from taskcrawler.contract.links import LinkOut as Link
from taskcrawler.contract.links import LinkPage
from taskcrawler.contract.maps import MapOut as MapResult
from taskcrawler.contract.monitors import ChangeList as ChangePage
from taskcrawler.contract.monitors import ChangeOut as Change
from taskcrawler.contract.monitors import MonitorList as MonitorPage
from taskcrawler.contract.monitors import MonitorOut as Monitor
from taskcrawler.contract.monitors import MonitorPageOut as MonitorPageEntry
from taskcrawler.contract.monitors import RunContentOut as RunContent
from taskcrawler.contract.monitors import RunDiffOut as RunDiff
from taskcrawler.contract.search import ChunkList as Chunks
from taskcrawler.contract.search import ChunkOut as Chunk
from taskcrawler.contract.search import SearchResult, SearchResults
from taskcrawler.contract.web_search import WebSearchOut as WebSearchResults
from taskcrawler.contract.web_search import WebSearchResultOut as WebSearchResult
from taskcrawler.domain.jobs import JobStatus

__all__ = [
    "ApiKey",
    "Batch",
    "BatchJob",
    "Cancelled",
    "Change",
    "ChangePage",
    "Chunk",
    "Chunks",
    "Crawl",
    "CrawlPage",
    "Delivery",
    "ExportRecord",
    "Job",
    "JobPage",
    "JobStatus",
    "KeyWithSecret",
    "Link",
    "LinkPage",
    "MapResult",
    "Monitor",
    "MonitorPage",
    "MonitorPageEntry",
    "NewKey",
    "Restarted",
    "Run",
    "RunContent",
    "RunDiff",
    "SearchResult",
    "SearchResults",
    "Submitted",
    "WebSearchResult",
    "WebSearchResults",
]


class Submitted(BaseModel):
    """``POST /api/v1/jobs``: the job, and whether this call created it (201) or the URL
    already had it (200)."""

    job: Job
    created: bool


class ExportRecord(BaseModel):
    """One line of ``GET /api/v1/export?format=jsonl``: a finished job, its texts, and the
    cursor that resumes the export after it."""

    cursor: str
    job: Job
    content: dict[str, str] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict)
