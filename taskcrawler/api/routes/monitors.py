"""Monitors, their changes, and the run history of their pages."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response, status

from taskcrawler.api.deps import CallerDep, ServicesDep
from taskcrawler.api.params import PageLimit
from taskcrawler.contract.base import ErrorOut, Id
from taskcrawler.contract.monitors import (
    ChangeList,
    ChangeOut,
    MonitorCreate,
    MonitorList,
    MonitorOut,
    MonitorPatch,
    RunContentOut,
    RunDiffOut,
)
from taskcrawler.service.monitors import MonitorRequest

router = APIRouter(prefix="/api/v1/monitors", tags=["monitors"])
runs_router = APIRouter(prefix="/api/v1/jobs", tags=["monitors"])

COMMON: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "Missing or unknown API key."},
    503: {"model": ErrorOut, "description": "The database is unavailable."},
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorOut}, **COMMON}
Cursor = Annotated[str | None, Query(max_length=200)]


@router.post(
    "",
    response_model=MonitorOut,
    status_code=status.HTTP_201_CREATED,
    responses=COMMON,
    summary="Watch pages: re-scrape them on a schedule and report what changed",
)
async def create_monitor(
    body: MonitorCreate, services: ServicesDep, caller: CallerDep
) -> MonitorOut:
    request = MonitorRequest(
        interval_seconds=body.interval_seconds,
        url=body.url,
        urls=body.urls,
        crawl=body.crawl,
        formats=body.formats,
        ignore_selectors=body.ignore_selectors,
        callback_url=body.callback_url,
    )
    return MonitorOut.of(await services.monitors.create(caller, request))


@router.get("", response_model=MonitorList, responses=COMMON, summary="List monitors, newest first")
async def list_monitors(
    services: ServicesDep, caller: CallerDep, limit: PageLimit = 50, cursor: Cursor = None
) -> MonitorList:
    found, next_cursor = await services.monitors.list_monitors(caller, limit=limit, cursor=cursor)
    return MonitorList(monitors=[MonitorOut.of(m) for m in found], next_cursor=next_cursor)


@router.get(
    "/{monitor_id}", response_model=MonitorOut, responses=NOT_FOUND, summary="Get a monitor"
)
async def get_monitor(monitor_id: Id, services: ServicesDep, caller: CallerDep) -> MonitorOut:
    return MonitorOut.of(await services.monitors.get(caller, monitor_id))


@router.patch(
    "/{monitor_id}",
    response_model=MonitorOut,
    responses=NOT_FOUND,
    summary="Pause, resume, set a new interval, or add formats",
)
async def update_monitor(
    monitor_id: Id, body: MonitorPatch, services: ServicesDep, caller: CallerDep
) -> MonitorOut:
    monitor = await services.monitors.update(
        caller,
        monitor_id,
        paused=body.paused,
        interval_seconds=body.interval_seconds,
        formats=body.formats or (),
    )
    return MonitorOut.of(monitor)


@router.delete(
    "/{monitor_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=NOT_FOUND,
    summary="Stop watching: the monitor, its jobs, their runs and its changes go",
)
async def delete_monitor(monitor_id: Id, services: ServicesDep, caller: CallerDep) -> Response:
    await services.monitors.delete(caller, monitor_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/{monitor_id}/changes",
    response_model=ChangeList,
    responses=NOT_FOUND,
    summary="A monitor's changes, newest first, each with its diff",
    description="A page holds `limit` changes, or fewer when their diffs pass "
    "TASKCRAWLER_CHANGES_PAGE_MAX_BYTES together (never none): follow `next_cursor`. "
    "`GET …/changes/{change_id}` returns one change alone.",
)
async def monitor_changes(
    monitor_id: Id,
    services: ServicesDep,
    caller: CallerDep,
    limit: PageLimit = 50,
    cursor: Cursor = None,
) -> ChangeList:
    found, next_cursor = await services.monitors.changes(
        caller, monitor_id, limit=limit, cursor=cursor
    )
    return ChangeList(changes=[ChangeOut.of(c) for c in found], next_cursor=next_cursor)


@router.get(
    "/{monitor_id}/changes/{change_id}",
    response_model=ChangeOut,
    responses=NOT_FOUND,
    summary="One change of a monitor, with its whole diff",
)
async def monitor_change(
    monitor_id: Id, change_id: Id, services: ServicesDep, caller: CallerDep
) -> ChangeOut:
    return ChangeOut.of(await services.monitors.change(caller, monitor_id, change_id))


@runs_router.get(
    "/{job_id}/runs/{run}",
    response_model=RunContentOut,
    responses=NOT_FOUND,
    summary="An old run of a watched page, with the Markdown and text it read",
)
async def job_run(
    job_id: Id,
    run: Annotated[int, Path(ge=0, le=2**31 - 1)],
    services: ServicesDep,
    caller: CallerDep,
) -> RunContentOut:
    return RunContentOut.of(await services.monitors.run(caller, job_id, run))


@runs_router.get(
    "/{job_id}/diff",
    response_model=RunDiffOut,
    responses=NOT_FOUND,
    summary="The unified Markdown diff between two runs, and the metadata that changed",
)
async def job_diff(
    job_id: Id,
    services: ServicesDep,
    caller: CallerDep,
    from_run: Annotated[int, Query(alias="from", ge=0, le=2**31 - 1)],
    to_run: Annotated[int, Query(alias="to", ge=0, le=2**31 - 1)],
) -> RunDiffOut:
    diff = await services.monitors.diff(caller, job_id, from_run, to_run)
    text = diff.markdown
    return RunDiffOut(
        job_id=job_id,
        from_run=from_run,
        to_run=to_run,
        diff=text.text,
        complete=text.complete,
        coarse=text.coarse,
        added_lines=text.added,
        removed_lines=text.removed,
        metadata=diff.metadata,
    )
