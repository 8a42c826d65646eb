"""The composition root: what every process runs is built here from its settings, and only here.

``taskcrawler serve``, ``api`` and ``worker`` open one :class:`Runtime` (the database and its
repositories, the queue, and the Redis client when there is one) and build their parts on it;
``reextract`` and ``keys`` open the storage alone. Components receive the settings they use as
small config objects or parameters, and the resources they share from here: none opens its own,
and none borrows one from another. Worker-side parts import lazily, so an API-only process never
loads the fetcher.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from taskcrawler import __version__
from taskcrawler.settings import Settings
from taskcrawler.storage import Storage, open_storage

if TYPE_CHECKING:  # and imported where used: `taskcrawler keys` needs the storage alone
    import asyncio

    from redis.asyncio import Redis

    from taskcrawler.common.processes import CallRunner, ProcessPool
    from taskcrawler.domain.idempotency import IdempotencyRetention
    from taskcrawler.domain.transitions import RetryPolicy
    from taskcrawler.embed import Embedder
    from taskcrawler.extract.chunking import ChunkingConfig
    from taskcrawler.fetch import Fetcher, HostLimiter
    from taskcrawler.firecrawl.announcer import HookAnnouncer
    from taskcrawler.firecrawl.service import FirecrawlService
    from taskcrawler.llm import ChatModel
    from taskcrawler.observability import WorkerMetrics
    from taskcrawler.queue import HostLines, JobQueue
    from taskcrawler.rerank import Reranker
    from taskcrawler.service import Services
    from taskcrawler.service.exports import ExportService
    from taskcrawler.service.jobs import JobPolicy
    from taskcrawler.service.keys import KeyService
    from taskcrawler.service.monitors import MonitorService
    from taskcrawler.service.ratelimit import RateLimiter
    from taskcrawler.websearch import WebSearch
    from taskcrawler.worker import Worker
    from taskcrawler.worker.monitoring import MonitorScheduler
    from taskcrawler.worker.parsing import PageParser
    from taskcrawler.worker.process import WorkerProcess, WorkerProcesses
    from taskcrawler.worker.rendering import RenderStep
    from taskcrawler.worker.webhooks import WebhookDispatcher
    from taskcrawler.worker.worker import WorkerConfig


@dataclass(frozen=True, slots=True)
class Runtime:
    """What a process opens once and shares: storage, the queue, and Redis when configured
    (the queue, rate limits, politeness and the robots cache all use the one client)."""

    settings: Settings
    storage: Storage
    queue: JobQueue
    redis: Redis | None = None

    @classmethod
    def open(cls, settings: Settings, *, queue: JobQueue | None = None) -> Runtime:
        """Redis when configured; else ``queue``, by default one in this process."""
        from taskcrawler.queue import MemoryQueue

        storage = storage_of(settings)
        if settings.redis_url is None:
            return cls(settings, storage, queue or MemoryQueue())
        from taskcrawler.queue.redis import RedisQueue, redis_client  # embedded: no Redis

        redis = redis_client(settings.redis_url)
        return cls(settings, storage, RedisQueue(redis, prefix=settings.redis_prefix), redis)

    async def close(self) -> None:
        await self.queue.close()
        if self.redis is not None:
            await self.redis.aclose()
        await self.storage.close()


def storage_of(settings: Settings, *, pool_size: int | None = None) -> Storage:
    """The database of ``settings`` and its repositories."""
    return open_storage(settings.database_url, pool_size=pool_size or settings.db_pool_size)


@asynccontextmanager
async def storage_only(settings: Settings, *, pool_size: int) -> AsyncIterator[Storage]:
    """The storage alone, for a command that needs no queue (``reextract``, ``keys``)."""
    storage = storage_of(settings, pool_size=pool_size)
    try:
        yield storage
    finally:
        await storage.close()


def key_service(storage: Storage, settings: Settings) -> KeyService:
    """Keys as the API and ``taskcrawler keys`` manage them, on ``storage``."""
    from taskcrawler.service.keys import KeyService

    return KeyService(
        storage.keys,
        required=settings.auth_required,
        failures_per_minute=settings.auth_failures_per_minute,
    )


# --- the API ------------------------------------------------------------------------------------


def job_policy(settings: Settings) -> JobPolicy:
    from taskcrawler.service.jobs import JobPolicy

    return JobPolicy(
        redispatch_after=settings.redispatch_seconds,
        rate_limit_per_minute=settings.rate_limit_per_minute,
        max_pending_jobs=settings.max_pending_jobs,
        model_configured=model_configured(settings),
    )


def model_configured(settings: Settings) -> bool:
    """Whether a language model is configured: the json and summary formats need one."""
    return bool(settings.llm_url and settings.llm_model)


def rate_limiter(runtime: Runtime) -> RateLimiter:
    """Shared through Redis when there is one, so every API process counts together."""
    from taskcrawler.service.ratelimit import MemoryRateLimiter, RedisRateLimiter

    if runtime.redis is None:
        return MemoryRateLimiter()
    return RedisRateLimiter(runtime.redis, prefix=runtime.settings.redis_prefix)


def api_fetcher(runtime: Runtime) -> Fetcher:
    """The API's own fetcher (for map): the guard, robots.txt and politeness of a worker's,
    shared through Redis with the workers when there is one. It waits for a politeness slot as
    long as the fetch deadline allows, rather than giving up at once like a job."""
    from taskcrawler.fetch import Fetcher

    settings = runtime.settings
    return Fetcher(
        settings,
        limiter=host_limiter(settings, runtime.redis),
        redis=runtime.redis,
        redis_prefix=settings.redis_prefix,
    )


def api_parsers(settings: Settings) -> ProcessPool:
    """The API's own parser processes, for what a request would otherwise compute on the event
    loop (a map's start page and sitemaps): as many as a worker's, each call under the same
    deadline; started at the first use."""
    from taskcrawler.common.processes import ProcessPool
    from taskcrawler.service.map_parsing import PARSED_IN_PROCESSES

    return ProcessPool(
        settings.parse_processes, settings.parse_timeout_seconds, preload=PARSED_IN_PROCESSES
    )


def api_services(
    runtime: Runtime,
    page_fetcher: Fetcher,
    query_embedder: Embedder,
    parsers: CallRunner,
    *,
    reranker: Reranker | None = None,
    web_engine: WebSearch | None = None,
    on_created: Callable[[int], object] = lambda count: None,
) -> Services:
    from taskcrawler.service import Services
    from taskcrawler.service.content import ContentService
    from taskcrawler.service.crawls import CrawlPolicy, CrawlService
    from taskcrawler.service.deliveries import DeliveryService
    from taskcrawler.service.health import HealthService
    from taskcrawler.service.idempotency import IdempotencyService
    from taskcrawler.service.jobs import JobService
    from taskcrawler.service.mapping import MapService
    from taskcrawler.service.search import SearchService
    from taskcrawler.service.web_search import WebSearchService

    storage = runtime.storage
    jobs = JobService(
        job_policy(runtime.settings),
        storage.jobs,
        runtime.queue,
        rate_limiter(runtime),
        on_created=on_created,
    )
    search = SearchService(
        jobs,
        storage.chunks,
        query_embedder,
        reranker,
        rerank_candidates=runtime.settings.rerank_candidates,
        query_embed_seconds=runtime.settings.search_embed_timeout_seconds,
    )
    content = ContentService(jobs, storage.content)
    mapper = MapService(page_fetcher, runtime.settings, parsers)
    crawls = CrawlService(
        CrawlPolicy(
            max_limit=runtime.settings.crawl_max_limit,
            redispatch_after=runtime.settings.redispatch_seconds,
            max_pending_jobs=runtime.settings.max_pending_jobs,
            model_configured=model_configured(runtime.settings),
        ),
        storage.crawls,
        storage.jobs,
        runtime.queue,
    )
    web_search = WebSearchService(web_engine, jobs)
    return Services(
        jobs=jobs,
        web_search=web_search,
        content=content,
        deliveries=DeliveryService(jobs, storage.webhooks),
        keys=key_service(storage, runtime.settings),
        idempotency=IdempotencyService(
            storage.idempotency, idempotency_retention(runtime.settings)
        ),
        health=HealthService(storage.db.ping, runtime.queue.ping, vectors=search.vectors),
        mapper=mapper,
        search=search,
        crawls=crawls,
        monitors=monitor_service(runtime),
        exports=export_service(storage, runtime.settings),
    )


def firecrawl_service(runtime: Runtime, services: Services) -> FirecrawlService:
    """Firecrawl's compatible API, on the use cases of :func:`api_services`."""
    from taskcrawler.firecrawl.hook_store import FirecrawlHookStore
    from taskcrawler.firecrawl.service import FirecrawlService

    storage = runtime.storage
    return FirecrawlService(
        services.jobs,
        services.content,
        services.mapper,
        storage.batches,
        services.crawls,
        FirecrawlHookStore(storage.db),
        storage.tracking,
        web=services.web_search,
        max_wait_seconds=runtime.settings.scrape_max_wait_seconds,
        worker_concurrency=runtime.settings.worker_concurrency,
    )


def export_service(storage: Storage, settings: Settings) -> ExportService:
    from taskcrawler.service.exports import ExportService

    return ExportService(
        storage.exports,
        request_headers={"user-agent": settings.user_agent},
        software=f"TaskCrawler {__version__}",
    )


def monitor_service(runtime: Runtime) -> MonitorService:
    from taskcrawler.service.monitors import MonitorPolicy, MonitorService

    settings = runtime.settings
    policy = MonitorPolicy(
        min_interval_seconds=settings.monitor_min_interval_seconds,
        redispatch_after=settings.redispatch_seconds,
        max_crawl_limit=settings.crawl_max_limit,
        changes_page_max_bytes=settings.changes_page_max_bytes,
        max_pending_jobs=settings.max_pending_jobs,
    )
    return MonitorService(policy, runtime.storage.monitors, queue=runtime.queue)


# --- the worker ---------------------------------------------------------------------------------


def retry_policy(settings: Settings) -> RetryPolicy:
    from taskcrawler.domain.transitions import RetryPolicy

    return RetryPolicy(
        max_retries=settings.max_retries,
        base_seconds=settings.retry_base_seconds,
        max_seconds=settings.retry_max_seconds,
    )


def idempotency_retention(settings: Settings) -> IdempotencyRetention:
    from taskcrawler.domain.idempotency import IdempotencyRetention

    return IdempotencyRetention(keep_hours=settings.idempotency_retention_hours)


def worker_config(settings: Settings, *, sweeps: bool = True) -> WorkerConfig:
    from taskcrawler.worker.sweeper import SweepConfig
    from taskcrawler.worker.worker import WorkerConfig

    retry = retry_policy(settings)
    return WorkerConfig(
        concurrency=settings.worker_concurrency,
        retry=retry,
        sweep=SweepConfig(
            interval_seconds=settings.sweep_interval_seconds,
            retry=retry,
            redispatch_seconds=settings.redispatch_seconds,
            idempotency=idempotency_retention(settings),
        ),
        lease_seconds=settings.lease_seconds,
        shutdown_grace_seconds=settings.shutdown_grace_seconds,
        archive_pages=settings.archive_pages,
        sweeps=sweeps,
    )


def host_limiter(settings: Settings, redis: Redis | None = None) -> HostLimiter:
    """Politeness per host: shared through Redis when there is one (every worker process and
    machine counts together), else kept in this process."""
    from taskcrawler.fetch import make_host_limiter

    return make_host_limiter(settings, redis)


def host_lines(runtime: Runtime) -> HostLines:
    """Where job ids wait for their host's politeness slot: in Redis when there is one (every
    worker of the deployment takes from the same lines), else in this process, whose queue is
    its own too."""
    from taskcrawler.queue import MemoryHostLines

    if runtime.redis is None:
        return MemoryHostLines()
    from taskcrawler.queue.redis import RedisHostLines

    return RedisHostLines(runtime.redis, prefix=runtime.settings.redis_prefix)


def fetcher(settings: Settings, redis: Redis | None = None) -> Fetcher:
    """A fetcher whose politeness and robots cache are shared through ``redis`` when given."""
    from taskcrawler.fetch import Fetcher

    return Fetcher(
        settings,
        limiter=host_limiter(settings, redis),
        host_wait_seconds=settings.host_wait_seconds,
        redis=redis,
        redis_prefix=settings.redis_prefix,
    )


def standalone_fetcher(settings: Settings) -> Fetcher:
    """A fetcher for one page in the foreground (``taskcrawler scrape``): politeness in this
    process, no wait bound for its slot but the fetch's deadline."""
    from taskcrawler.fetch import Fetcher

    return Fetcher(settings, limiter=host_limiter(settings))


def page_parser(settings: Settings) -> PageParser:
    """Where a worker parses its pages: small ones inline, the rest in a thread or in a pool
    of parser processes, each parse there under a deadline."""
    from taskcrawler.worker.parsing import PageParser

    return PageParser(
        timeout=settings.parse_timeout_seconds,
        processes=settings.parse_processes,
        max_links=settings.max_links_per_page,
        memory_mb=settings.parse_memory_mb,
    )


def render_step(settings: Settings, parser: PageParser) -> RenderStep:
    """The worker's render step: one browser for the process when chromium and Playwright are
    there (started at the first render), none otherwise. Playwright is imported only then."""
    from taskcrawler.browser import render_availability
    from taskcrawler.worker.rendering import RenderStep

    availability = render_availability(settings)
    if not availability.available:
        return RenderStep(None, availability, parser)
    from taskcrawler.browser.renderer import BrowserRenderer

    renderer = BrowserRenderer(settings, availability=availability)
    return RenderStep(renderer, availability, parser)


def reranker(settings: Settings) -> Reranker | None:
    """The reranker at TASKCRAWLER_RERANK_URL, if one is configured."""
    if not settings.rerank_url:
        return None
    from taskcrawler.rerank import RerankerConfig, build_reranker

    return build_reranker(
        RerankerConfig(
            url=settings.rerank_url,
            model=settings.rerank_model,
            api_key=settings.rerank_api_key,
            timeout_seconds=settings.rerank_timeout_seconds,
        )
    )


def web_search(settings: Settings) -> WebSearch | None:
    """The search engine at TASKCRAWLER_SEARXNG_URL, if one is configured."""
    if not settings.searxng_url:
        return None
    from taskcrawler.websearch import SearxngConfig, build_web_search

    return build_web_search(
        SearxngConfig(url=settings.searxng_url, timeout_seconds=settings.searxng_timeout_seconds)
    )


def chat_model(settings: Settings) -> ChatModel | None:
    """The language model at TASKCRAWLER_LLM_URL, if one is configured."""
    if not settings.llm_url or not settings.llm_model:
        return None  # model_configured() is False: the API refuses what needs one
    from taskcrawler.llm import LLMConfig, build_chat_model

    return build_chat_model(
        LLMConfig(
            url=settings.llm_url,
            model=settings.llm_model,
            api_key=settings.llm_api_key,
            timeout_seconds=settings.llm_timeout_seconds,
            max_retries=settings.llm_max_retries,
            concurrency=settings.llm_concurrency,
            max_input_chars=settings.llm_max_input_chars,
            max_response_bytes=settings.llm_max_response_bytes,
        )
    )


def embedder(settings: Settings) -> Embedder:
    """The embedder of TASKCRAWLER_EMBEDDER; a model is loaded only when first used."""
    from taskcrawler.embed import EmbedderConfig, build_embedder

    return build_embedder(
        EmbedderConfig(
            kind=settings.embedder,
            url=settings.embedder_url,
            model=settings.embedder_model,
            query_model=settings.embedder_query_model,
            api_key=settings.embedder_api_key,
            timeout_seconds=settings.embedder_timeout_seconds,
            batch_size=settings.embedder_batch_size,
            max_retries=settings.embedder_max_retries,
            query_prefix=settings.embedder_query_prefix,
            document_prefix=settings.embedder_document_prefix,
        )
    )


def chunking_config(settings: Settings) -> ChunkingConfig:
    from taskcrawler.extract.chunking import ChunkingConfig

    return ChunkingConfig(settings.chunk_tokens, settings.chunk_overlap_tokens)


def worker(
    runtime: Runtime,
    page_fetcher: Fetcher,
    parser: PageParser,
    metrics: WorkerMetrics,
    rendering: RenderStep | None = None,
    page_embedder: Embedder | None = None,
    chat_model: ChatModel | None = None,
    *,
    sweeps: bool = True,
) -> Worker:
    """``sweeps``: whether this worker runs a sweeper (see :class:`WorkerConfig`)."""
    from taskcrawler.fetch.sitemaps import SitemapLimits
    from taskcrawler.worker import Worker
    from taskcrawler.worker.chunking import PageChunker
    from taskcrawler.worker.crawling import CrawlPages
    from taskcrawler.worker.structuring import StructuringStep

    settings = runtime.settings
    chunker = None
    if page_embedder is not None:
        chunker = PageChunker(
            runtime.storage.chunks,
            page_embedder,
            chunking_config(settings),
            timeout_seconds=settings.embedder_timeout_seconds,
        )
    return Worker(
        worker_config(settings, sweeps=sweeps),
        runtime.storage.work,
        runtime.queue,
        page_fetcher,
        parser,
        metrics=metrics,
        rendering=rendering,
        chunker=chunker,
        structuring=StructuringStep(
            chat_model,
            parser,
            max_input_chars=settings.llm_max_input_chars,
            answer_attempts=settings.llm_answer_attempts,
        ),
        crawls=CrawlPages(
            runtime.storage.crawls,
            page_fetcher,
            SitemapLimits.from_settings(runtime.settings),
            parser.pool,
        ),
        lines=host_lines(runtime),
        answers=runtime.storage.idempotency,
    )


def webhook_dispatcher(runtime: Runtime) -> WebhookDispatcher:
    from taskcrawler.worker.webhooks import WebhookDispatcher

    return WebhookDispatcher(runtime.settings, runtime.storage.webhooks)


def hook_announcer(runtime: Runtime) -> HookAnnouncer:
    """Announces Firecrawl crawls' and batch scrapes' events to their webhooks."""
    from taskcrawler.firecrawl.announcer import HookAnnouncer
    from taskcrawler.firecrawl.hook_store import FirecrawlHookStore

    return HookAnnouncer(FirecrawlHookStore(runtime.storage.db), runtime.storage.content)


# --- serve: the API with its worker in a child process ------------------------------------------


def serve_runtime(settings: Settings) -> tuple[Runtime, WorkerProcess]:
    """The API's runtime under ``taskcrawler serve`` and the supervisor of its worker process.

    Without Redis the API publishes job ids over a socket to the worker process
    (:mod:`taskcrawler.queue.pipe`); with Redis both use it, as ``api`` and ``worker`` do.
    The child reads its settings as this process did (environment, ``.env``), plus the
    command line's: the database, the concurrency. Its metrics port is off unless
    TASKCRAWLER_WORKER_METRICS_PORT is set, so that two ``serve`` never contend for it; the
    API reads the child's metrics over a Unix socket instead and serves them in its own.
    """
    from taskcrawler.queue.pipe import PipeSender
    from taskcrawler.worker.process import WorkerProcess

    sender = PipeSender() if settings.redis_url is None else None
    env = {
        "TASKCRAWLER_DATABASE_URL": settings.database_url,
        "TASKCRAWLER_WORKER_CONCURRENCY": str(settings.worker_concurrency),
        "TASKCRAWLER_WORKER_METRICS_PORT": str(
            settings.worker_metrics_port
            if "worker_metrics_port" in settings.model_fields_set
            else 0
        ),
    }
    supervisor = WorkerProcess(
        env, sender=sender, grace_seconds=settings.shutdown_grace_seconds, metrics_socket=True
    )
    return Runtime.open(settings, queue=sender), supervisor


def worker_processes(settings: Settings) -> WorkerProcesses | None:
    """The supervisor of ``taskcrawler worker``'s processes, or None for one process (the
    worker then runs in this one). Each child reads its settings as this process did
    (environment, ``.env``) plus the command line's; the n-th serves its metrics on the metrics
    port + n."""
    from taskcrawler.worker.process import WorkerProcesses

    count = settings.worker_processes or usable_cores()
    if count <= 1:
        return None
    port = settings.worker_metrics_port

    def env_of(index: int) -> dict[str, str]:
        return {
            "TASKCRAWLER_DATABASE_URL": settings.database_url,
            "TASKCRAWLER_WORKER_CONCURRENCY": str(settings.worker_concurrency),
            "TASKCRAWLER_WORKER_PROCESSES": "1",
            "TASKCRAWLER_WORKER_METRICS_PORT": str(port + index if port else 0),
        }

    return WorkerProcesses(
        count,
        env_of,
        grace_seconds=settings.shutdown_grace_seconds,
        shared_queue=settings.redis_url is not None,
    )


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, a container's cpuset)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


async def worker_process_runtime(
    settings: Settings, wake_fd: int | None
) -> tuple[Runtime, asyncio.Event | None]:
    """The runtime of ``serve``'s worker process, and, when its job ids come over the socket
    ``wake_fd``, the event set once the API process has closed that socket."""
    if wake_fd is None or settings.redis_url is not None:
        return Runtime.open(settings), None
    import socket

    from taskcrawler.queue.pipe import PipeReceiver

    receiver = PipeReceiver(socket.socket(fileno=wake_fd))
    await receiver.open()
    return Runtime.open(settings, queue=receiver), receiver.closed


def monitor_scheduler(runtime: Runtime, parser: PageParser) -> MonitorScheduler:
    """Fires due monitor slots and reads their runs, beside a worker."""
    from taskcrawler.domain.monitors import ChangeRetention
    from taskcrawler.domain.runs import RetentionPolicy
    from taskcrawler.worker.monitoring import MonitorConfig, MonitorScheduler

    settings = runtime.settings
    config = MonitorConfig(
        poll_seconds=settings.monitor_poll_seconds,
        redispatch_seconds=settings.redispatch_seconds,
        retention=RetentionPolicy(
            keep_runs=settings.run_retention_runs, keep_days=settings.run_retention_days
        ),
        change_retention=ChangeRetention(
            keep_changes=settings.change_retention_count,
            keep_days=settings.change_retention_days,
        ),
        max_pending_jobs=settings.max_pending_jobs,
    )
    return MonitorScheduler(config, runtime.storage.monitor_work, runtime.queue, parser)
