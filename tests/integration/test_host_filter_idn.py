"""One host form for every job, on both databases: an IDN site's jobs submitted as the client
spelled them and its crawl pages (whose URL is their key, IDNA-encoded) are found by a ``host``
filter spelled either way; migration 0018 rewrites the rows stored in another form."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from taskcrawler.domain.crawls import CrawlSpec
from taskcrawler.domain.jobs import JobQuery
from taskcrawler.storage import Database, JobStore, NewJob, upgrade_database
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.crawls import CrawlStore
from taskcrawler.storage.migrate import downgrade_database
from taskcrawler.storage.tables import jobs

OWNER = "tenant"


async def hosts_found(db: Database, host: str) -> list[str]:
    found, _ = await JobStore(db).list_jobs(JobQuery(owner=OWNER, host=host, limit=10))
    return sorted(job.url for job in found)


@pytest.mark.parametrize("spelled", ["b\u00fccher.de", "B\u00dcCHER.de", "xn--bcher-kva.de"])
async def test_a_host_filter_finds_an_idn_sites_jobs_and_crawl_pages(
    database_url: str, spelled: str
) -> None:
    db = open_database(database_url)
    try:
        await JobStore(db).create_jobs(
            [NewJob("http://B\u00fccher.de./job", owner=OWNER)], redispatch_after=30
        )
        spec = CrawlSpec(url="http://b\u00fccher.de/crawl")
        await CrawlStore(db).create(OWNER, spec, callback_url=None, redispatch_after=30)
        assert await hosts_found(db, spelled) == [
            "http://B\u00fccher.de./job",
            "http://xn--bcher-kva.de/crawl",
        ]
    finally:
        await db.close()


async def test_the_migration_puts_stored_hosts_in_the_one_form(database_url: str) -> None:
    await downgrade_database(database_url, "0017")
    db = open_database(database_url)
    try:
        rows = [
            ("http://B\u00fccher.de/a", "b\u00fccher.de", "xn--bcher-kva.de"),
            ("http://example.com./b", "example.com.", "example.com"),
            ("http://plain.example/c", "plain.example", "plain.example"),
        ]
        async with db.write() as conn:
            for url, stored, _ in rows:
                await conn.execute(
                    jobs.insert().values(
                        id=uuid.uuid4(),
                        owner=OWNER,
                        url=url,
                        url_key=uuid.uuid4().hex,
                        host=stored,
                        status="PENDING",
                        retry_count=0,
                        created_at=sa.func.now(),
                    )
                )
    finally:
        await db.close()
    await upgrade_database(database_url, "head")
    db = open_database(database_url)
    try:
        async with db.read() as conn:
            found = dict((await conn.execute(sa.select(jobs.c.url, jobs.c.host))).all())
        assert found == {url: host for url, _, host in rows}
    finally:
        await db.close()
