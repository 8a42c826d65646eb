"""The schema, as SQLAlchemy Core tables. Alembic migrations in ``migrations/`` create it."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class UTCDateTime(sa.TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite has no time zones of its own)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored: pass an aware UTC datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", sa.Uuid(), primary_key=True),
    # Who submitted it; deduplication is per owner so tenants learn nothing of each other.
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    sa.Column("url", sa.Text(), nullable=False),
    # sha256 of the normalized URL: a fixed-size unique key whatever the URL's length.
    sa.Column("url_key", sa.String(64), nullable=False),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("retry_count", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("scraped_title", sa.Text()),
    sa.Column("error_code", sa.String(64)),
    sa.Column("error_log", sa.Text()),
    sa.Column("http_status", sa.Integer()),
    sa.Column("final_url", sa.Text()),
    sa.Column("content_type", sa.String(255)),
    sa.Column("result", JSONType),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("started_at", UTCDateTime()),
    sa.Column("finished_at", UTCDateTime()),
    # Set while a job waits to be published (a scheduled retry, a failed publish, a job handed
    # back); NULL once published, and only then is it claimable (a claim compares no clocks).
    sa.Column("next_attempt_at", UTCDateTime()),
    # When the sweeper should (re)publish this PENDING job if nobody has claimed it by then.
    sa.Column("dispatch_at", UTCDateTime()),
    sa.Column("lease_token", sa.Uuid()),
    sa.Column("lease_expires_at", UTCDateTime()),
    # what the job asked for, and what a re-scrape needs
    # e.g. ["metadata", "markdown"]: the union of what its submissions asked; NULL means
    # ["metadata"] (jobs made before new ones defaulted to metadata and Markdown)
    sa.Column("formats", JSONType),
    sa.Column("callback_url", sa.Text()),  # webhook on COMPLETED / FAILED
    sa.Column("etag", sa.Text()),  # validators of the last 200, for If-None-Match / -Modified-Since
    sa.Column("last_modified", sa.Text()),
    sa.Column("run_count", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("unchanged", sa.Boolean()),  # the last run got 304 Not Modified
    sa.Column("render", sa.String(8)),  # never | auto | always; NULL means never
    sa.Column("render_options", JSONType),  # RenderRequest.to_json(); NULL means the defaults
    sa.Column("options", JSONType),  # ScrapeOptions.to_json(); NULL means the defaults (0012)
    # A crawl's page: its crawl, and its link hops from the crawl's start (migration 0004).
    sa.Column("crawl_id", sa.Uuid()),
    sa.Column("depth", sa.Integer()),
    # Position of the job's latest finish (COMPLETED or FAILED) in its owner's export stream, set
    # by a trigger in the finishing transaction (migration 0008 says why and how).
    sa.Column("export_seq", sa.BigInteger()),
    # When the page its result was made from was fetched (or confirmed by a 304); a run made
    # from the stored copy keeps it. NULL before migration 0011: finished_at says it then.
    sa.Column("fetched_at", UTCDateTime()),
    # The run it waits for (or is in) adds formats from the page's stored copy: no fetch.
    sa.Column("from_archive", sa.Boolean()),
    sa.UniqueConstraint("owner", "url_key"),
    sa.Index("ix_jobs_owner_created", "owner", "created_at", "id"),
    sa.Index("ix_jobs_owner_status_created", "owner", "status", "created_at", "id"),
    # Partial indexes: only the rows the sweeper looks at are indexed, so they stay small. The
    # key column's IS NOT NULL keeps them to the sweeper's range queries: a claim or an outcome
    # write that could use them would scan every PENDING or PROCESSING row when statistics
    # misjudge how many there are (migration 0003).
    sa.Index(
        "ix_jobs_export",
        "owner",
        "export_seq",
        "id",
        postgresql_where=sa.text("export_seq IS NOT NULL"),
        sqlite_where=sa.text("export_seq IS NOT NULL"),
    ),
    sa.Index(
        "ix_jobs_dispatch",
        "dispatch_at",
        postgresql_where=sa.text("status = 'PENDING' AND dispatch_at IS NOT NULL"),
        sqlite_where=sa.text("status = 'PENDING' AND dispatch_at IS NOT NULL"),
    ),
    sa.Index(
        "ix_jobs_lease",
        "lease_expires_at",
        postgresql_where=sa.text("status = 'PROCESSING' AND lease_expires_at IS NOT NULL"),
        sqlite_where=sa.text("status = 'PROCESSING' AND lease_expires_at IS NOT NULL"),
    ),
    # Crawl pages only: a crawl's counts and whether anything of it is left, its pages listed.
    sa.Index(
        "ix_jobs_crawl_status",
        "crawl_id",
        "status",
        postgresql_where=sa.text("crawl_id IS NOT NULL"),
        sqlite_where=sa.text("crawl_id IS NOT NULL"),
    ),
    sa.Index(
        "ix_jobs_crawl_created",
        "crawl_id",
        "created_at",
        "id",
        postgresql_where=sa.text("crawl_id IS NOT NULL"),
        sqlite_where=sa.text("crawl_id IS NOT NULL"),
    ),
    # A crawl's finished pages in the order they finished: its status pages (migration 0017).
    sa.Index(
        "ix_jobs_crawl_finished",
        "crawl_id",
        "export_seq",
        "id",
        postgresql_where=sa.text("crawl_id IS NOT NULL AND export_seq IS NOT NULL"),
        sqlite_where=sa.text("crawl_id IS NOT NULL AND export_seq IS NOT NULL"),
    ),
)

crawls = sa.Table(
    "crawls",
    metadata,
    sa.Column("id", sa.Uuid(), primary_key=True),
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    sa.Column("url", sa.Text(), nullable=False),  # the start URL as given
    sa.Column("spec", JSONType, nullable=False),  # CrawlSpec.to_dict()
    sa.Column("status", sa.String(16), nullable=False),  # RUNNING | COMPLETED | CANCELLED
    # Pages admitted to the frontier, written under the crawl's row lock: never above the limit.
    sa.Column("discovered", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("callback_url", sa.Text()),  # gets crawl.completed
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("finished_at", UTCDateTime()),
    sa.Index("ix_crawls_owner_created", "owner", "created_at", "id"),
    sa.Index(
        "ix_crawls_running",
        "created_at",
        postgresql_where=sa.text("status = 'RUNNING'"),
        sqlite_where=sa.text("status = 'RUNNING'"),
    ),
)


# --- content, links, archive, runs (what a page says, and the history of re-scrapes) ----------

job_contents = sa.Table(
    "job_contents",
    metadata,
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("format", sa.String(16), primary_key=True),  # markdown | text | html
    sa.Column("body", sa.Text(), nullable=False),
)

job_links = sa.Table(
    "job_links",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    sa.Column("url", sa.Text(), nullable=False),
    sa.Column("url_key", sa.String(64), nullable=False),  # sha256 of the normalized target
    sa.Column("text", sa.Text()),
    sa.Column("rel", sa.String(255)),
    sa.Column("internal", sa.Boolean(), nullable=False),
    sa.Column("nofollow", sa.Boolean(), nullable=False),
    sa.Index("ix_job_links_job_id", "job_id", "id"),
    sa.Index("ix_job_links_target", "owner", "url_key", "id"),
)

page_archive = sa.Table(
    "page_archive",
    metadata,
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("fetched_at", UTCDateTime(), nullable=False),
    sa.Column("final_url", sa.Text(), nullable=False),
    sa.Column("http_status", sa.Integer(), nullable=False),
    sa.Column("headers", JSONType, nullable=False),
    sa.Column("content_type", sa.String(255)),
    sa.Column("charset", sa.String(64)),
    sa.Column("sha256", sa.String(64), nullable=False),  # of the uncompressed body
    sa.Column("size", sa.Integer(), nullable=False),
    sa.Column("body_gz", sa.LargeBinary(), nullable=False),  # gzip of the body as fetched
)

#: A PNG of the rendered page (format ``screenshot``), at most ``max_body_bytes``.
job_screenshots = sa.Table(
    "job_screenshots",
    metadata,
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("taken_at", UTCDateTime(), nullable=False),
    sa.Column("width", sa.Integer(), nullable=False),
    sa.Column("height", sa.Integer(), nullable=False),
    sa.Column("cut", sa.Boolean(), nullable=False),  # the page was taller than the picture
    sa.Column("png", sa.LargeBinary(), nullable=False),
)

job_runs = sa.Table(
    "job_runs",
    metadata,
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("run", sa.Integer(), primary_key=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("retry_count", sa.Integer(), nullable=False),
    sa.Column("http_status", sa.Integer()),
    sa.Column("scraped_title", sa.Text()),
    sa.Column("error_code", sa.String(64)),
    sa.Column("error_log", sa.Text()),
    sa.Column("content_hash", sa.String(80)),
    sa.Column("started_at", UTCDateTime()),
    sa.Column("finished_at", UTCDateTime()),
)

job_batches = sa.Table(
    "job_batches",
    metadata,
    # A batch of jobs submitted together (Firecrawl's batch scrape): its status is theirs.
    sa.Column("id", sa.Uuid(), primary_key=True),
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    sa.Column("job_ids", JSONType, nullable=False),  # in the order the URLs were given
    sa.Column("created_at", UTCDateTime(), nullable=False),
)

# --- tenancy (API keys, idempotent requests, webhooks) ----------------------------------------

api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),  # public part of the key: tc_<id>_<secret>
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("secret_hash", sa.String(64), nullable=False),  # sha256 of the secret part
    sa.Column("is_admin", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("requests_per_minute", sa.Integer()),
    sa.Column("max_pending_jobs", sa.Integer()),
    sa.Column("callback_url", sa.Text()),  # default webhook for this key's jobs
    sa.Column("webhook_secret", sa.String(64)),  # HMAC key of its webhooks
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("revoked_at", UTCDateTime()),
)

idempotent_requests = sa.Table(
    "idempotent_requests",
    metadata,
    sa.Column("owner", sa.String(64), primary_key=True),
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("request_hash", sa.String(64), nullable=False),
    sa.Column("status_code", sa.Integer(), nullable=False),
    sa.Column("response", JSONType, nullable=False),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Index("ix_idempotent_requests_created", "created_at"),  # retention (migration 0016)
)

webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    sa.Column("id", sa.Uuid(), primary_key=True),
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    sa.Column("url", sa.Text(), nullable=False),
    sa.Column("event", sa.String(32), nullable=False),  # job.completed | job.failed
    sa.Column("payload", JSONType, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # PENDING|DELIVERED|FAILED|BLOCKED
    sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("next_attempt_at", UTCDateTime()),
    sa.Column("last_status_code", sa.Integer()),
    sa.Column("last_error", sa.Text()),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("delivered_at", UTCDateTime()),
    sa.Column("lease_expires_at", UTCDateTime()),
    # Firecrawl's webhooks (migration 0012): its signature header, and the receiver's own
    # headers; NULL for TaskCrawler's.
    sa.Column("style", sa.String(16)),
    sa.Column("headers", JSONType),
    sa.Index("ix_webhook_deliveries_job", "job_id", "created_at"),
    sa.Index(
        "ix_webhook_deliveries_due",
        "next_attempt_at",
        postgresql_where=sa.text("status = 'PENDING'"),
        sqlite_where=sa.text("status = 'PENDING'"),
    ),
)

# A Firecrawl crawl's or batch scrape's webhook (migration 0012): where its events go, and
# which of its pages were announced (``firecrawl_hook_pages``: a page is announced once per
# finish, whatever order the transactions that finished them commit in).
firecrawl_hooks = sa.Table(
    "firecrawl_hooks",
    metadata,
    sa.Column("id", sa.Uuid(), primary_key=True),
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    sa.Column("kind", sa.String(16), nullable=False),  # crawl | batch_scrape
    sa.Column("target_id", sa.Uuid(), nullable=False),  # the crawl's or the batch's id
    sa.Column("url", sa.Text(), nullable=False),
    sa.Column("headers", JSONType),  # the receiver's own headers
    sa.Column("metadata", JSONType),  # sent back in every event
    sa.Column("events", JSONType, nullable=False),  # of started, page, completed, failed
    sa.Column("api_url", sa.Text(), nullable=False),  # where the documents' screenshots are
    sa.Column("started", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("finished_at", UTCDateTime()),
    sa.Column("reading_until", UTCDateTime()),  # the lease of the worker announcing it
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Index(
        "ix_firecrawl_hooks_open",
        "created_at",
        postgresql_where=sa.text("finished_at IS NULL"),
        sqlite_where=sa.text("finished_at IS NULL"),
    ),
)

firecrawl_hook_pages = sa.Table(
    "firecrawl_hook_pages",
    metadata,
    sa.Column(
        "hook_id",
        sa.Uuid(),
        sa.ForeignKey("firecrawl_hooks.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("job_id", sa.Uuid(), primary_key=True),
    sa.Column("seq", sa.BigInteger(), primary_key=True),  # the job's export_seq when announced
)

# --- chunks: a page's main content in pieces, embedded, for search ----------------------------

chunks = sa.Table(
    "chunks",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    # The crawl the page belongs to, for searches within one crawl (set by crawls when they are).
    sa.Column("crawl_id", sa.Uuid()),
    sa.Column("chunk_index", sa.Integer(), nullable=False),
    sa.Column("text", sa.Text(), nullable=False),
    sa.Column("heading_path", JSONType, nullable=False),
    sa.Column("token_count", sa.Integer(), nullable=False),
    # The page's title and the chunk's headings, embedded and indexed with its text (migration
    # 0012); NULL for chunks made before, until `taskcrawler reindex` or the page's next fetch.
    sa.Column("context", sa.Text()),
    # The characters of the page's Markdown the chunk spans, for a reader to cite.
    sa.Column("start_offset", sa.Integer()),
    sa.Column("end_offset", sa.Integer()),
    # The vector's space: a search compares only vectors of the model it embeds the query with.
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("dim", sa.Integer(), nullable=False),
    # sha256 of what the chunks were made from (the Markdown, the chunking, the model): a page
    # whose hash is unchanged is not embedded again.
    sa.Column("source_hash", sa.String(64), nullable=False),
    # float32, little-endian: SQLite's vectors. PostgreSQL keeps them in ``embedding_vector``
    # (pgvector), a column only the migration knows, as it exists only where pgvector does.
    sa.Column("embedding", sa.LargeBinary()),
    sa.UniqueConstraint("job_id", "chunk_index"),
    sa.Index("ix_chunks_owner_model", "owner", "model"),
    sa.Index("ix_chunks_crawl", "crawl_id"),
    # Ids never reused: SQLite's in-memory vector matrices tell a changed set by its ids.
    sqlite_autoincrement=True,
)

#: What the migrations create beyond these tables, on one backend only: full-text indexes
#: (PostgreSQL's term statistics, ``chunk_terms`` and each chunk's ``search_length``; SQLite's
#: FTS5 table and its triggers) and pgvector's column and HNSW index. A schema comparison leaves
#: them out.
BACKEND_ONLY_COLUMNS = frozenset({("chunks", "search_length"), ("chunks", "embedding_vector")})
BACKEND_ONLY_TABLE_PREFIXES = ("chunks_fts", "chunk_terms", "chunks_version")
# --- monitors (pages re-scraped on a schedule, their run history and changes) -----------------

monitors = sa.Table(
    "monitors",
    metadata,
    sa.Column("id", sa.Uuid(), primary_key=True),
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    sa.Column("spec", JSONType, nullable=False),  # MonitorSpec.to_dict()
    sa.Column("interval_seconds", sa.Float(), nullable=False),
    sa.Column("paused", sa.Boolean(), nullable=False, server_default=sa.false()),
    # Slots are anchor + k * interval; the last one fired, and when the next one is due.
    sa.Column("anchor_at", UTCDateTime(), nullable=False),
    sa.Column("last_slot_at", UTCDateTime()),
    sa.Column("next_due_at", UTCDateTime(), nullable=False),
    sa.Column("rounds", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("callback_url", sa.Text()),
    sa.Column("created_at", UTCDateTime(), nullable=False),
    sa.Column("updated_at", UTCDateTime(), nullable=False),
    sa.Index("ix_monitors_owner_created", "owner", "created_at", "id"),
    sa.Index(
        "ix_monitors_due",
        "next_due_at",
        postgresql_where=sa.text("NOT paused"),
        sqlite_where=sa.text("NOT paused"),
    ),
)

# The pages a monitor watches: each an ordinary job of its own (its runs are the monitor's
# rounds), and how far change detection has read that job's runs.
monitor_pages = sa.Table(
    "monitor_pages",
    metadata,
    sa.Column(
        "monitor_id", sa.Uuid(), sa.ForeignKey("monitors.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("url", sa.Text(), nullable=False),
    sa.Column("evaluated_run", sa.Integer()),  # the job's last run change detection read
    sa.Column("baseline_run", sa.Integer()),  # the run the next one is compared with
    # A run started (or found) that change detection has yet to read: the partial index keeps
    # the readers' poll to the pages in flight, not every page watched.
    sa.Column("awaiting_read", sa.Boolean(), nullable=False, server_default=sa.true()),
    sa.Column("reading_until", UTCDateTime()),  # the lease of the worker reading it
    # Its monitor fired while its run was unread: it runs again once that run is recorded.
    sa.Column("run_due", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Index("ix_monitor_pages_job", "job_id"),
    sa.Index(
        "ix_monitor_pages_awaiting",
        "job_id",
        postgresql_where=sa.text("awaiting_read"),
        sqlite_where=sa.text("awaiting_read"),
    ),
)

# One row per slot fired: the unique key makes a slot fire at most once.
monitor_rounds = sa.Table(
    "monitor_rounds",
    metadata,
    sa.Column(
        "monitor_id", sa.Uuid(), sa.ForeignKey("monitors.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("slot_at", UTCDateTime(), primary_key=True),
    sa.Column("fired_at", UTCDateTime(), nullable=False),
    sa.Column("missed", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("started", sa.Integer(), nullable=False, server_default="0"),  # jobs run again
)

# A crawl monitor's round: the crawl it started, and once read, the pages it found (migration
# 0009): {crawl key: [url, job id]}, what the next round is compared with.
monitor_crawls = sa.Table(
    "monitor_crawls",
    metadata,
    sa.Column(
        "monitor_id", sa.Uuid(), sa.ForeignKey("monitors.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("slot_at", UTCDateTime(), primary_key=True),
    sa.Column(
        "crawl_id", sa.Uuid(), sa.ForeignKey("crawls.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("read_at", UTCDateTime()),
    sa.Column("complete", sa.Boolean()),
    sa.Column("pages", JSONType),
    sa.Column("reading_until", UTCDateTime()),  # the lease of the worker reading the round
    sa.Index("ix_monitor_crawls_crawl", "crawl_id"),
    sa.Index(
        "ix_monitor_crawls_unread",
        "monitor_id",
        postgresql_where=sa.text("read_at IS NULL"),
        sqlite_where=sa.text("read_at IS NULL"),
    ),
)

monitor_changes = sa.Table(
    "monitor_changes",
    metadata,
    sa.Column("id", sa.Uuid(), primary_key=True),
    sa.Column(
        "monitor_id", sa.Uuid(), sa.ForeignKey("monitors.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("owner", sa.String(64), nullable=False, server_default=""),
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("url", sa.Text(), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),  # changed | added | removed
    sa.Column("run", sa.Integer()),
    sa.Column("previous_run", sa.Integer()),
    # The job of ``previous_run``: a crawl monitor's rounds each have jobs of their own.
    sa.Column("previous_job_id", sa.Uuid()),
    sa.Column("detected_at", UTCDateTime(), nullable=False),
    sa.Column("diff", sa.Text()),
    sa.Column("diff_complete", sa.Boolean()),
    sa.Column("diff_coarse", sa.Boolean()),
    sa.Column("metadata", JSONType),  # {field: {"old", "new"}}
    sa.Index("ix_monitor_changes_monitor", "monitor_id", "detected_at", "id"),
    sa.Index("ix_monitor_changes_detected", "detected_at"),  # age retention (migration 0014)
)

# What each run of a watched page read (through its monitor's ignore selectors): its Markdown
# and text in one compressed blob, stored only when they differ from the run before.
run_contents = sa.Table(
    "run_contents",
    metadata,
    sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("run", sa.Integer(), primary_key=True),
    sa.Column("fetched_at", UTCDateTime(), nullable=False),
    sa.Column("http_status", sa.Integer()),
    sa.Column("status", sa.String(16), nullable=False),  # the job's status after the run
    sa.Column("fingerprint", sa.String(80)),
    sa.Column("digest", sa.String(80)),
    sa.Column("content_run", sa.Integer()),  # the run whose blob holds this one's content
    sa.Column("metadata", JSONType),
    sa.Column("blob", sa.LargeBinary()),
)
