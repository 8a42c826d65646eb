"""``taskcrawler.client.AsyncTaskCrawler`` against the real app, in both modes."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from taskcrawler.client import AsyncTaskCrawler, JobStatus, TaskCrawlerError
from tests.e2e.harness import Service, ServiceFactory
from tests.support.target import TargetServer


def client_of(service: Service, key: dict[str, str] | None = None) -> AsyncTaskCrawler:
    token = key["Authorization"].removeprefix("Bearer ") if key else None
    return AsyncTaskCrawler(
        "http://taskcrawler", token, transport=httpx.ASGITransport(app=service.app)
    )


async def test_submit_wait_read_list_retry_and_map(service: Service, target: TargetServer) -> None:
    url = target.url("/title/Typed")
    async with client_of(service) as tc:
        submitted = await tc.submit(url, formats=["metadata", "markdown", "links"])
        assert submitted.created
        again = await tc.submit(url)
        assert not again.created and again.job.id == submitted.job.id

        async with asyncio.timeout(20):
            job = await tc.wait(submitted.job.id, interval=0.02)
        assert job.status is JobStatus.COMPLETED and job.scraped_title == "Typed"
        assert "Typed" in await tc.content(job.id)
        links = await tc.links(job.id)
        assert all(link.job_id == job.id for link in links.links)

        batch = await tc.submit_batch([url, target.url("/page/1")])
        assert (batch.created, batch.existing) == (1, 1)
        assert [item.created for item in batch.jobs] == [False, True]

        page = await tc.list_jobs(limit=1)
        assert len(page.jobs) == 1 and page.next_cursor
        every = [found.id async for found in tc.iter_jobs()]
        assert sorted(every) == sorted({job.id, batch.jobs[1].id})

        rerun = await tc.retry(job.id)
        assert rerun.status is JobStatus.PENDING
        async with asyncio.timeout(20):
            await tc.wait(job.id, interval=0.02)
        assert [run.status for run in await tc.runs(job.id)] == ["COMPLETED"]

        site = await tc.map(target.url("/page/1"), sitemap="skip")
        assert target.url("/page/2") in site.links


async def test_jobs_take_render_and_render_options(
    service_factory: ServiceFactory, target: TargetServer
) -> None:
    """Sent as given, stored with the jobs, refused alike; no browser is needed to see them."""
    options = {"wait_until": "load", "viewport": {"width": 640, "height": 480}, "full_page": False}
    async with (
        service_factory(browser="/nonexistent/chromium") as service,
        client_of(service) as tc,
    ):
        one = await tc.submit(target.url("/page/60"), render="auto", render_options=options)
        assert one.job.render == "auto" and one.job.render_options is not None
        assert one.job.render_options["viewport"] == options["viewport"]
        assert one.job.render_options["full_page"] is False
        many = await tc.submit_batch(
            [target.url("/page/61"), target.url("/page/62")],
            formats=["screenshot"],
            render_options={"block": ["image"]},
        )
        shown = [(job.render, (job.render_options or {}).get("block")) for job in many.jobs]
        assert shown == [("always", ["image"]), ("always", ["image"])]
        with pytest.raises(TaskCrawlerError) as refused:
            await tc.submit(target.url("/page/63"), render="never", formats=["screenshot"])
        assert refused.value.status == 422 and "needs a browser" in str(refused.value)


async def test_refusals_are_errors_with_status_and_detail(
    service: Service, target: TargetServer
) -> None:
    async with client_of(service) as tc:
        with pytest.raises(TaskCrawlerError) as missing:
            await tc.get_job(uuid.uuid4())
        assert missing.value.status == 404 and missing.value.detail
        assert str(missing.value).startswith("404 Not Found: ")

        with pytest.raises(TaskCrawlerError) as bad:
            await tc.submit("ftp://example.com/")
        assert bad.value.status == 422 and bad.value.detail.startswith("url: ")
        assert not bad.value.transient

        job = (await tc.submit(target.url("/page/3"))).job
        async with asyncio.timeout(20):
            await tc.wait(job.id, interval=0.02)
        with pytest.raises(TaskCrawlerError) as conflict:
            await tc.cancel(job.id)
        assert conflict.value.status == 409
        with pytest.raises(TaskCrawlerError) as not_asked:
            await tc.content(job.id, "html")  # formats did not ask for it
        assert not_asked.value.status == 409


async def test_a_key_is_sent_and_a_wrong_one_refused(
    service_factory: ServiceFactory, target: TargetServer
) -> None:
    async with service_factory(auth_required=True) as service:
        key = await service.new_key("client")
        async with client_of(service, key) as tc:
            assert (await tc.submit(target.url("/page/4"))).created
            assert len((await tc.list_jobs()).jobs) == 1
        async with client_of(service, {"Authorization": "Bearer tc_nope_nope"}) as tc:
            with pytest.raises(TaskCrawlerError) as refused:
                await tc.list_jobs()
        assert refused.value.status == 401


async def test_no_server_is_an_error_without_status() -> None:
    async with AsyncTaskCrawler("http://127.0.0.1:9", timeout=5) as tc:
        with pytest.raises(TaskCrawlerError) as unreachable:
            await tc.list_jobs()
    assert unreachable.value.status is None and unreachable.value.transient
    assert "cannot connect to the API at http://127.0.0.1:9" in str(unreachable.value)


async def test_crawls_and_search(service: Service, target: TargetServer) -> None:
    vectors = service.mode == "embedded"
    async with client_of(service) as tc:
        crawl = await tc.start_crawl(
            target.url("/page/0"),
            max_depth=2,
            sitemap="skip",
            # PostgreSQL here has no pgvector, so chunks (which search reads) on SQLite only.
            formats=["metadata", "markdown", *(["chunks"] if vectors else [])],
        )
        assert crawl.status == "RUNNING" and crawl.max_depth == 2
        async with asyncio.timeout(60):
            while True:
                crawl = await tc.get_crawl(crawl.id)
                if crawl.status != "RUNNING":
                    break
                await asyncio.sleep(0.2)
        assert crawl.status == "COMPLETED" and (crawl.discovered, crawl.completed) == (3, 3)
        pages = await tc.crawl_jobs(crawl.id, statuses=["COMPLETED"], limit=2)
        assert len(pages.jobs) == 2 and pages.next_cursor
        rest = await tc.crawl_jobs(crawl.id, statuses=["COMPLETED"], cursor=pages.next_cursor)
        urls = {job.url for job in pages.jobs + rest.jobs}
        assert urls == {target.url(f"/page/{n}") for n in range(3)}
        assert crawl.id in {c.id for c in (await tc.list_crawls()).crawls}

        found = await tc.search("page 2 of the test target", k=3, mode="keyword", crawl_id=crawl.id)
        if vectors:
            assert found.results and found.results[0].url == target.url("/page/2")
        else:
            assert found.results == []
        elsewhere = await tc.search("page", mode="keyword", crawl_id=uuid.uuid4())
        assert elsewhere.results == []
        if vectors:
            [cited] = (
                await tc.search("page 2", k=1, mode="keyword", url_prefix=target.url("/page/"))
            ).results
            assert cited.fetched_at is not None and cited.heading_path is not None
            later = datetime.now(UTC) + timedelta(days=1)
            assert (await tc.search("page", fetched_after=later, rerank=False)).results == []
        with pytest.raises(TaskCrawlerError) as refused:
            await tc.search("page", k=0)
        assert refused.value.status == 422

        endless = await tc.start_crawl(target.url("/page/0"), sitemap="skip", limit=10_000)
        cancelled = await tc.cancel_crawl(endless.id)
        assert cancelled.status == "CANCELLED"
        with pytest.raises(TaskCrawlerError) as unknown:
            await tc.get_crawl(uuid.uuid4())
        assert unknown.value.status == 404
