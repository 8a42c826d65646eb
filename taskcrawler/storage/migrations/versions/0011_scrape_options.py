"""scrape options: what a job asks of its page beyond its formats

Request headers, TLS, languages, what the Markdown holds (main content or the whole page, CSS
selectors), PDFs (``domain.scrape_options.ScrapeOptions.to_json``; NULL: the defaults). A
crawl's pages copy them from its spec, as they copy its render options.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from taskcrawler.storage.tables import JSONType

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("options", JSONType))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("options")
