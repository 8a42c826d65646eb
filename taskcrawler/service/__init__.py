"""Application services: the use cases the API and the command line share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the services are imported by whoever builds them (bootstrap.py)
    from taskcrawler.service.content import ContentService
    from taskcrawler.service.crawls import CrawlService
    from taskcrawler.service.deliveries import DeliveryService
    from taskcrawler.service.exports import ExportService
    from taskcrawler.service.health import HealthService
    from taskcrawler.service.idempotency import IdempotencyService
    from taskcrawler.service.jobs import JobService
    from taskcrawler.service.keys import KeyService
    from taskcrawler.service.mapping import MapService
    from taskcrawler.service.monitors import MonitorService
    from taskcrawler.service.search import SearchService
    from taskcrawler.service.web_search import WebSearchService


@dataclass(frozen=True, slots=True)
class Services:
    """The use cases of the API, built by :mod:`taskcrawler.bootstrap`."""

    jobs: JobService
    content: ContentService
    deliveries: DeliveryService
    keys: KeyService
    idempotency: IdempotencyService
    health: HealthService
    mapper: MapService
    search: SearchService
    crawls: CrawlService
    monitors: MonitorService
    exports: ExportService
    web_search: WebSearchService


__all__ = ["Services"]
