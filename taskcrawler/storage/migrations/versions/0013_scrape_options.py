"""scrape options: what a job asks of its page beyond its formats; Firecrawl's webhooks

Request headers, TLS, languages, what the Markdown holds (main content or the whole page, CSS
selectors), PDFs (``domain.scrape_options.ScrapeOptions.to_json``; NULL: the defaults). A
crawl's pages copy them from its spec, as they copy its render options.

A Firecrawl crawl or batch scrape with a ``webhook`` has a ``firecrawl_hooks`` row: the worker
announces its events from it, each page once per finish (``firecrawl_hook_pages``), through the
webhook outbox, whose deliveries may now carry Firecrawl's signature (``style``) and the
receiver's own headers.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from taskcrawler.storage.tables import JSONType, UTCDateTime

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ALTER TABLE on both databases: a batch (copy and move) of ``jobs`` on SQLite would
    # drop its export_seq trigger (migration 0008).
    op.add_column("jobs", sa.Column("options", JSONType))
    op.add_column("webhook_deliveries", sa.Column("style", sa.String(16)))
    op.add_column("webhook_deliveries", sa.Column("headers", JSONType))
    op.create_table(
        "firecrawl_hooks",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("owner", sa.String(64), nullable=False, server_default=""),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("target_id", sa.Uuid(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("headers", JSONType),
        sa.Column("metadata", JSONType),
        sa.Column("events", JSONType, nullable=False),
        sa.Column("api_url", sa.Text(), nullable=False),
        sa.Column("started", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("finished_at", UTCDateTime()),
        sa.Column("reading_until", UTCDateTime()),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index(
        "ix_firecrawl_hooks_open",
        "firecrawl_hooks",
        ["created_at"],
        postgresql_where=sa.text("finished_at IS NULL"),
        sqlite_where=sa.text("finished_at IS NULL"),
    )
    op.create_table(
        "firecrawl_hook_pages",
        sa.Column(
            "hook_id",
            sa.Uuid(),
            sa.ForeignKey("firecrawl_hooks.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("job_id", sa.Uuid(), primary_key=True),
        sa.Column("seq", sa.BigInteger(), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("firecrawl_hook_pages")
    op.drop_index("ix_firecrawl_hooks_open", table_name="firecrawl_hooks")
    op.drop_table("firecrawl_hooks")
    # ALTER TABLE … DROP COLUMN: SQLite has it since 3.35; a batch would drop jobs' trigger.
    op.drop_column("webhook_deliveries", "headers")
    op.drop_column("webhook_deliveries", "style")
    op.drop_column("jobs", "options")
