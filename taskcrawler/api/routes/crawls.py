"""Crawls: ``/api/v1/crawls``. Every page of a crawl is an ordinary job."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, status

from taskcrawler.api.deps import CallerDep, ServicesDep
from taskcrawler.api.params import PageLimit
from taskcrawler.api.routes.jobs import COMMON, NOT_FOUND
from taskcrawler.contract.base import Id
from taskcrawler.contract.crawls import CrawlIn, CrawlList, CrawlOut
from taskcrawler.contract.jobs import JobOut, JobPage
from taskcrawler.domain import JobStatus
from taskcrawler.domain.jobs import JobQuery

#: The statuses whose pages are listed in the order they finished (each has a place in it).
_FINISHED = {JobStatus.COMPLETED, JobStatus.FAILED}

router = APIRouter(prefix="/api/v1/crawls", tags=["crawls"])


@router.post(
    "",
    response_model=CrawlOut,
    status_code=status.HTTP_201_CREATED,
    responses=COMMON,
    summary="Start a crawl of a site",
)
async def start_crawl(body: CrawlIn, services: ServicesDep, caller: CallerDep) -> CrawlOut:
    crawls = services.crawls
    spec = crawls.spec(**body.spec_fields())  # InvalidCrawlSpec: 422 naming the field
    return CrawlOut.of(await crawls.start(caller, spec))


@router.get("", response_model=CrawlList, responses=COMMON, summary="List crawls, newest first")
async def list_crawls(
    services: ServicesDep,
    caller: CallerDep,
    limit: PageLimit = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    state: Annotated[
        Literal["RUNNING"] | None,
        Query(alias="status", description="RUNNING: the running crawls only."),
    ] = None,
) -> CrawlList:
    found, next_cursor = await services.crawls.list_crawls(
        caller, limit=limit, cursor=cursor, running=state == "RUNNING"
    )
    return CrawlList(crawls=[CrawlOut.of(crawl) for crawl in found], next_cursor=next_cursor)


@router.get(
    "/{crawl_id}", response_model=CrawlOut, responses=NOT_FOUND, summary="A crawl, live counts"
)
async def get_crawl(crawl_id: Id, services: ServicesDep, caller: CallerDep) -> CrawlOut:
    return CrawlOut.of(await services.crawls.get(caller, crawl_id))


@router.get(
    "/{crawl_id}/jobs",
    response_model=JobPage,
    responses=NOT_FOUND,
    summary="A crawl's pages (jobs): newest first; in finish order for finished ones",
    description=(
        "With `status` limited to COMPLETED and/or FAILED, the pages come in the order they "
        "finished (first finished first), and `next_cursor` reads on from the last shown: "
        "following it while the crawl runs shows every page that finishes exactly once (while it "
        "runs there is one even past the last page finished, leading to those finishing later). "
        "Otherwise the pages come newest first."
    ),
)
async def crawl_jobs(
    crawl_id: Id,
    services: ServicesDep,
    caller: CallerDep,
    status_: Annotated[list[JobStatus] | None, Query(alias="status")] = None,
    limit: PageLimit = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> JobPage:
    statuses = tuple(status_ or ())
    if statuses and set(statuses) <= _FINISHED:
        pages, next_cursor = await services.crawls.finished_pages(
            caller, crawl_id, statuses=statuses, limit=limit, cursor=cursor, while_running=True
        )
        return JobPage(jobs=[JobOut.of(job) for job, _ in pages], next_cursor=next_cursor)
    query = JobQuery(statuses=statuses, limit=limit, cursor=cursor)
    jobs, next_cursor = await services.crawls.pages(caller, crawl_id, query)
    return JobPage(jobs=[JobOut.of(job) for job in jobs], next_cursor=next_cursor)


@router.delete(
    "/{crawl_id}",
    response_model=CrawlOut,
    responses=NOT_FOUND,
    summary="Cancel a crawl: its pending pages are cancelled, nothing new is scheduled",
)
async def cancel_crawl(crawl_id: Id, services: ServicesDep, caller: CallerDep) -> CrawlOut:
    return CrawlOut.of(await services.crawls.cancel(caller, crawl_id))


__all__ = ["router"]
