"""What a page says beyond its metadata: main content as Markdown/text, raw HTML, links."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, HTTPException, Query, status
from fastapi.responses import Response
from pydantic import BaseModel

from taskcrawler.api.deps import CallerDep, Services, ServicesDep
from taskcrawler.api.schemas import ErrorOut
from taskcrawler.domain import Job, JobStatus
from taskcrawler.domain.pages import StoredLink
from taskcrawler.service.jobs import Caller

router = APIRouter(tags=["content"])

MEDIA_TYPES = {
    "markdown": "text/markdown; charset=utf-8",
    "text": "text/plain; charset=utf-8",
    "html": "text/html; charset=utf-8",
}
#: Cursors are link row ids (BIGINT); a bigger one would overflow the driver, not just miss.
MAX_ROW_ID = 2**63 - 1
ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "Unknown job (or another key's)."},
    409: {"model": ErrorOut, "description": "Not asked for in `formats`, or not completed."},
}


class LinkOut(BaseModel):
    id: int
    job_id: UUID
    url: str
    text: str | None
    rel: list[str]
    internal: bool
    nofollow: bool
    source_url: str | None = None

    @classmethod
    def of(cls, link: StoredLink) -> LinkOut:
        return cls(
            id=link.id,
            job_id=link.job_id,
            url=link.url,
            text=link.text,
            rel=list(link.rel),
            internal=link.internal,
            nofollow=link.nofollow,
            source_url=link.source_url,
        )


class LinkPage(BaseModel):
    links: list[LinkOut]
    next_cursor: int | None


def _page(links: list[StoredLink], limit: int) -> LinkPage:
    more = len(links) == limit
    return LinkPage(
        links=[LinkOut.of(link) for link in links], next_cursor=links[-1].id if more else None
    )


async def _completed_job(services: Services, caller: Caller, job_id: UUID, fmt: str) -> Job:
    job = await services.jobs.get(caller, job_id)
    if job is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no job with this id")
    if fmt not in job.formats:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"this job did not ask for {fmt!r}: submit it with formats including it",
        )
    if job.status is not JobStatus.COMPLETED:
        raise HTTPException(status.HTTP_409_CONFLICT, f"the job is {job.status}, not COMPLETED")
    return job


@router.get(
    "/api/v1/jobs/{job_id}/content",
    response_class=Response,
    responses={200: {"content": {t: {} for t in MEDIA_TYPES.values()}}, **ERRORS},
    summary="Main content as Markdown or text, or the page's HTML",
)
async def job_content(
    job_id: UUID,
    services: ServicesDep,
    caller: CallerDep,
    format: Literal["markdown", "text", "html"] = "markdown",
) -> Response:
    await _completed_job(services, caller, job_id, format)
    body = await services.content.text(job_id, format)
    if body is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no {format} stored for this job")
    return Response(body, media_type=MEDIA_TYPES[format])


@router.get(
    "/api/v1/jobs/{job_id}/links",
    response_model=LinkPage,
    responses=ERRORS,
    summary="Outgoing links of a page (asked for with formats: links)",
)
async def job_links(
    job_id: UUID,
    services: ServicesDep,
    caller: CallerDep,
    cursor: Annotated[int, Query(ge=0, le=MAX_ROW_ID)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> LinkPage:
    await _completed_job(services, caller, job_id, "links")
    return _page(await services.content.links_of(job_id, after=cursor, limit=limit), limit)


@router.get(
    "/api/v1/links",
    response_model=LinkPage,
    summary="Backlinks: which of your scraped pages link to a URL",
)
async def backlinks(
    services: ServicesDep,
    caller: CallerDep,
    target: Annotated[str, Query(min_length=1, max_length=2048)],
    cursor: Annotated[int, Query(ge=0, le=MAX_ROW_ID)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> LinkPage:
    found = await services.content.backlinks(caller.owner, target, after=cursor, limit=limit)
    return _page(found, limit)
