"""The raw archive lets `taskcrawler reextract` rebuild results without fetching again."""

import gzip
import hashlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa

from taskcrawler.extract.page import Extraction
from taskcrawler.service.reextract import reextract_all
from taskcrawler.storage.tables import jobs, page_archive
from taskcrawler.worker.parsing import PageParser
from tests.e2e.harness import Service


@pytest.fixture
async def parser() -> AsyncIterator[PageParser]:
    parser = PageParser(processes=1)
    yield parser
    await parser.aclose()


class FailingFor(PageParser):
    """The worker's parser, but for the pages of ``url``, whose parse crashes its process."""

    def __init__(self, url: str) -> None:
        super().__init__(processes=1)
        self.url = url

    async def extract(self, body: bytes, *, url: str, **options: Any) -> Extraction:
        if url == self.url:
            raise RuntimeError("parsing killed its process")
        return await super().extract(body, url=url, **options)


async def _markdown(service: Service, job_id: str) -> str:
    response = await service.client.get(f"/api/v1/jobs/{job_id}/content")
    assert response.status_code == 200, response.text
    return response.text


async def test_reextract_rebuilds_results_from_the_archive(
    service: Service, target, parser: PageParser
) -> None:
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
    assert (await reextract_all(service.storage.content, parser)).pages == 1
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


async def test_reextract_extracts_with_the_jobs_options(
    service: Service, target, parser: PageParser
) -> None:
    asked = {"url": target.url("/page/11"), "options": {"include_tags": ["h1"]}}
    submitted = (await service.client.post("/api/v1/jobs", json=asked)).json()
    await service.wait_for(submitted["id"])
    kept = await _markdown(service, submitted["id"])
    assert kept.strip() == "# Page 11"  # the heading alone, as the job asked
    assert (await reextract_all(service.storage.content, parser)).pages == 1
    assert await _markdown(service, submitted["id"]) == kept


async def test_a_page_that_cannot_be_extracted_again_keeps_its_result(
    service: Service, target
) -> None:
    failing, fine = target.url("/page/12"), target.url("/page/13")
    first, second = await service.scrape(failing), await service.scrape(fine)
    db = service.storage.db
    async with db.write() as conn:
        await conn.execute(jobs.update().values(scraped_title="stale"))
    parser = FailingFor(failing)
    try:
        assert (await reextract_all(service.storage.content, parser)).pages == 1
    finally:
        await parser.aclose()
    assert (await service.wait_for(first["id"]))["scraped_title"] == "stale"
    assert (await service.wait_for(second["id"]))["scraped_title"] == "Page 13"
