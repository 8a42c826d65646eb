"""jobs.host in one form: the host of the job's URL key (lower case, IDNA, no trailing dot)

A crawl's pages stored the host as their key has it (``xn--bcher-kva.de``), other jobs as the
client spelled it (``bücher.de``, ``example.com.``), so a ``host`` filter on an IDN site found
one kind but not the other. Every job now stores the key's form and a filter is put in that
form (either spelling finds both); the rows stored in another form are rewritten here, a
thousand at a time. Only a host with a character outside ``[a-z0-9._:-]`` or a trailing dot
can differ: the others are read no further than by the condition.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from taskcrawler.domain.errors import InvalidURL
from taskcrawler.domain.urls import host_key

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 1000


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        odd = "(host ~ '[^a-z0-9._:-]' OR host LIKE '%.')"
    else:
        odd = "(host GLOB '*[^a-z0-9._:-]*' OR host LIKE '%.')"
    after = ""
    while True:
        rows = conn.execute(
            sa.text(
                f"SELECT id, url, host FROM jobs WHERE {odd} AND CAST(id AS TEXT) > :after "
                "ORDER BY CAST(id AS TEXT) LIMIT :batch"
            ),
            {"after": after, "batch": BATCH},
        ).all()
        if not rows:
            return
        changed = []
        for row in rows:
            try:
                host = host_key(row.url)
            except InvalidURL:
                continue  # no job is made of such a URL: left as it is
            if host != row.host:
                changed.append({"id": row.id, "host": host})
        if changed:
            conn.execute(sa.text("UPDATE jobs SET host = :host WHERE id = :id"), changed)
        after = str(rows[-1].id)


def downgrade() -> None:
    pass  # the key's form is a spelling of the same host: nothing to undo
