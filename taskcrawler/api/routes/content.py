"""What a page says beyond its metadata: main content as Markdown/text, raw HTML, links,
screenshots, the files of its actions."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response

from taskcrawler.api.deps import CallerDep, ServicesDep
from taskcrawler.api.params import RowLimit
from taskcrawler.contract.base import ErrorOut, Id
from taskcrawler.contract.links import LinkPage
from taskcrawler.domain.actions import MAX_CAPTURES

router = APIRouter(tags=["content"])

MEDIA_TYPES = {
    "markdown": "text/markdown; charset=utf-8",
    "text": "text/plain; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "clean_html": "text/html; charset=utf-8",
    "images": "text/plain; charset=utf-8",
}
#: Cursors are link row ids (BIGINT); a bigger one would overflow the driver, not just miss.
MAX_ROW_ID = 2**63 - 1
ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "Unknown job (or another key's)."},
    409: {"model": ErrorOut, "description": "Not asked for in `formats`, or not completed."},
}


@router.get(
    "/api/v1/jobs/{job_id}/content",
    response_class=Response,
    responses={200: {"content": {t: {} for t in MEDIA_TYPES.values()}}, **ERRORS},
    summary="Main content as Markdown, text or cleaned HTML; the page's images; its HTML",
)
async def job_content(
    job_id: Id,
    services: ServicesDep,
    caller: CallerDep,
    format: Literal["markdown", "text", "html", "clean_html", "images"] = "markdown",
) -> Response:
    body = await services.content.text(caller, job_id, format)
    return Response(body, media_type=MEDIA_TYPES[format])


@router.get(
    "/api/v1/jobs/{job_id}/screenshot",
    response_class=Response,
    responses={
        200: {"content": {"image/png": {}}, "description": "A PNG of the rendered page."},
        404: {"model": ErrorOut, "description": "No screenshot, or an unknown job."},
    },
    summary="A PNG of the rendered page (asked for with formats: screenshot)",
)
async def job_screenshot(job_id: Id, services: ServicesDep, caller: CallerDep) -> Response:
    shot = await services.content.screenshot(caller, job_id)
    headers = {"X-Screenshot-Cut": "true" if shot.cut else "false"}
    return Response(shot.png, media_type="image/png", headers=headers)


#: The files of a job's actions, by the list of Firecrawl's ``actions`` object they are in.
CAPTURE_KINDS = {"screenshots": ("screenshot", "image/png"), "pdfs": ("pdf", "application/pdf")}


@router.get(
    "/api/v1/jobs/{job_id}/actions/{kind}/{index}",
    response_class=Response,
    responses={
        200: {
            "content": {"image/png": {}, "application/pdf": {}},
            "description": "A screenshot action's PNG, or a pdf action's PDF.",
        },
        404: {"model": ErrorOut, "description": "No such file, or an unknown job."},
    },
    summary="A file of the page's actions: the index-th screenshot or pdf action's (0 first)",
)
async def job_action_file(
    job_id: Id,
    kind: Literal["screenshots", "pdfs"],
    index: Annotated[int, Path(ge=0, le=MAX_CAPTURES - 1)],
    services: ServicesDep,
    caller: CallerDep,
) -> Response:
    action, media_type = CAPTURE_KINDS[kind]
    data = await services.content.capture(caller, job_id, action, index)
    return Response(data, media_type=media_type)


@router.get(
    "/api/v1/jobs/{job_id}/links",
    response_model=LinkPage,
    responses=ERRORS,
    summary="Outgoing links of a page (asked for with formats: links)",
)
async def job_links(
    job_id: Id,
    services: ServicesDep,
    caller: CallerDep,
    cursor: Annotated[int, Query(ge=0, le=MAX_ROW_ID)] = 0,
    limit: RowLimit = 100,
) -> LinkPage:
    found = await services.content.links_of(caller, job_id, after=cursor, limit=limit)
    return LinkPage.of(found, limit)


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
    limit: RowLimit = 100,
) -> LinkPage:
    found = await services.content.backlinks(caller, target, after=cursor, limit=limit)
    return LinkPage.of(found, limit)
