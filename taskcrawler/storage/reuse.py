"""Pages a crawl reuses instead of fetching (its ``max_age``): the stored copy of a page the same
tenant scraped recently, as a job or as a page of another of its crawls.

A page is found by its jobs' unique ``(owner, url_key)`` index, never by scanning: the key a
plain job of the URL would have, and the key the page has in each of the tenant's newest crawls
(a crawl page's key is per crawl: see :func:`taskcrawler.storage.rows.frontier_key`). The copy
is the page's raw archive, so the reusing crawl extracts it as if just fetched: its own formats,
and its links for the frontier.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
from datetime import timedelta
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from taskcrawler.domain.jobs import JobStatus
from taskcrawler.domain.pages import FetchedPage
from taskcrawler.storage.backend import Backend
from taskcrawler.storage.rows import frontier_key, url_key, utcnow
from taskcrawler.storage.tables import crawls, jobs, page_archive

#: The tenant's crawls (the newest) whose pages are looked at: one index probe each.
MAX_SOURCE_CRAWLS = 50
#: Archived bodies bigger than this are decompressed off the event loop.
INLINE_INFLATE_BYTES = 2 * 1024 * 1024


async def reusable_page(
    conn: AsyncConnection,
    backend: Backend,
    *,
    crawl_id: UUID,
    owner: str,
    url: str,
    max_age: float,
    render: str,
) -> FetchedPage | None:
    """The newest copy of ``url`` (a page's crawl key) that ``owner`` scraped within
    ``max_age`` seconds with the same render mode, or None."""
    since = utcnow() - timedelta(seconds=max_age)
    # The newest crawls, whatever their state: a bounded walk of ix_crawls_owner_created (a
    # filter on when they finished could walk every crawl the tenant ever ran).
    sources = await conn.execute(
        sa.select(crawls.c.id)
        .where(crawls.c.owner == owner, crawls.c.id != crawl_id)
        .order_by(crawls.c.created_at.desc())
        .limit(MAX_SOURCE_CRAWLS)
    )
    keys = [frontier_key(source, url) for source in sources.scalars()]
    with contextlib.suppress(ValueError):  # a URL no plain job can have
        keys.append(url_key(url))
    if not keys:
        return None
    # A result made later from a stored copy is no fresher than that copy: the page's own fetch
    # time counts (finished_at for rows from before jobs kept it).
    fetched_at = sa.func.coalesce(jobs.c.fetched_at, jobs.c.finished_at)
    # A page rendered in a browser was archived as rendered: only the same mode may reuse it.
    same_render = jobs.c.render.is_(None) if render == "never" else jobs.c.render == render
    row = (
        await conn.execute(
            sa.select(
                fetched_at.label("fetched_at"),
                page_archive.c.final_url,
                page_archive.c.http_status,
                page_archive.c.headers,
                page_archive.c.content_type,
                page_archive.c.charset,
                page_archive.c.size,
                page_archive.c.body_gz,
            )
            .join(jobs, jobs.c.id == page_archive.c.job_id)
            .where(
                jobs.c.owner == owner,
                backend.any_of(jobs.c.url_key, keys),
                jobs.c.status == JobStatus.COMPLETED.value,
                fetched_at >= since,
                same_render,
            )
            .order_by(fetched_at.desc())
            .limit(1)
        )
    ).first()
    if row is None:
        return None
    body_gz = bytes(row.body_gz)
    if row.size > INLINE_INFLATE_BYTES:
        body = await asyncio.to_thread(gzip.decompress, body_gz)
    else:
        body = gzip.decompress(body_gz)
    return FetchedPage(
        url=url,
        final_url=row.final_url,
        status=row.http_status,
        headers=dict(row.headers),
        content_type=row.content_type,
        charset=row.charset,
        body=body,
        fetched_at=row.fetched_at,
    )


__all__ = ["MAX_SOURCE_CRAWLS", "reusable_page"]
