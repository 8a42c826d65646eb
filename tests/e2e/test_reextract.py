"""The raw archive lets `taskcrawler reextract` rebuild results without fetching again."""

import gzip
import hashlib

import sqlalchemy as sa

from taskcrawler.service.reextract import reextract_all
from taskcrawler.storage.tables import jobs, page_archive
from taskcrawler.worker.parsing import PageParser
from tests.e2e.harness import Service


async def test_reextract_rebuilds_results_from_the_archive(service: Service, target) -> None:
    job = await service.scrape(target.url("/page/9"))
    db = service.storage.db
    async with db.read() as conn:
        archived = (await conn.execute(sa.select(page_archive))).one()
    body = gzip.decompress(archived.body_gz)
    assert hashlib.sha256(body).hexdigest() == archived.sha256
    assert archived.size == len(body)
    assert archived.headers["content-type"].startswith("text/html")
    # Damage the stored result, as an old extractor might have left it; what extraction does not
    # make (how the page was rendered) must survive.
    render = {"mode": "auto", "rendered": False, "reason": "no script could build the page"}
    stale = {"metadata": {}, "render": render}
    async with db.write() as conn:
        await conn.execute(jobs.update().values(scraped_title="stale", result=stale))
    hits = target.hits_for("/page/9")
    parser = PageParser()
    try:
        assert await reextract_all(service.storage.content, parser) == 1
    finally:
        await parser.aclose()
    fixed = await service.wait_for(job["id"])
    assert fixed["scraped_title"] == "Page 9"
    assert fixed["result"]["metadata"]["title"] == "Page 9"
    assert fixed["result"]["render"] == render
    assert target.hits_for("/page/9") == hits  # nothing fetched


async def test_archive_can_be_turned_off(service_factory, target) -> None:
    async with service_factory(archive_pages=False) as service:
        await service.scrape(target.url("/page/10"))
        async with service.storage.db.read() as conn:
            count = await conn.scalar(sa.select(sa.func.count()).select_from(page_archive))
    assert count == 0
