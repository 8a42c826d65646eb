from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, status
from fastapi.responses import Response

from taskcrawler.api.deps import Call, CallDep, CallerDep, ServicesDep, get_call
from taskcrawler.api.idempotency import MAX_IDEMPOTENCY_KEY, IdempotencyKey, answer_once
from taskcrawler.api.lean import lean_json_route
from taskcrawler.api.params import PageLimit, RowLimit
from taskcrawler.contract.base import ErrorOut, Id, Instant
from taskcrawler.contract.jobs import (
    BatchCreate,
    BatchItem,
    BatchOut,
    CancelFilter,
    CancelOut,
    JobCreate,
    JobOut,
    JobPage,
    RetryFilter,
    RetryOut,
    RunOut,
)
from taskcrawler.domain import JobStatus
from taskcrawler.domain.jobs import JobQuery

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])

COMMON: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "Missing or unknown API key."},
    429: {"model": ErrorOut, "description": "Rate or pending-jobs limit; see Retry-After."},
    503: {"model": ErrorOut, "description": "The database is unavailable."},
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorOut}, **COMMON}
CONFLICT: dict[int | str, dict[str, Any]] = {409: {"model": ErrorOut}, **NOT_FOUND}


async def create_job(
    request: Request,
    body: JobCreate,
    call: CallDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    return await _submit(request, call, body, idempotency_key)


async def _create_job_lean(request: Request, body: JobCreate) -> Response | None:
    """:func:`create_job` without FastAPI's parameter solving (:mod:`taskcrawler.api.lean`):
    the hottest route of the API."""
    idempotency_key = request.headers.get("idempotency-key")
    if idempotency_key is not None and len(idempotency_key) > MAX_IDEMPOTENCY_KEY:
        return None  # FastAPI's handler refuses it, in its words
    return await _submit(request, await get_call(request), body, idempotency_key)


async def _submit(
    request: Request, call: Call, body: JobCreate, idempotency_key: str | None
) -> Response:
    services, caller = call.services, call.caller

    async def produce() -> tuple[int, JobOut]:
        created = await services.jobs.submit(caller, body.url, body.job_options())
        code = status.HTTP_201_CREATED if created.created else status.HTTP_200_OK
        return code, JobOut.of(created.job)

    return await answer_once(services, caller, idempotency_key, request, body, produce)


router.add_api_route(
    "",
    create_job,
    methods=["POST"],
    response_model=JobOut,
    status_code=status.HTTP_201_CREATED,
    responses={200: {"model": JobOut, "description": "The URL already has a job."}, **COMMON},
    summary="Submit a URL",
    route_class_override=lean_json_route(JobCreate, _create_job_lean),
)


@router.post(
    "/batch",
    response_model=BatchOut,
    responses={409: {"model": ErrorOut, "description": "Idempotency-Key reused."}, **COMMON},
    summary="Submit up to 1,000 URLs in one request",
)
async def create_batch(
    request: Request,
    body: BatchCreate,
    services: ServicesDep,
    caller: CallerDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    async def produce() -> tuple[int, BatchOut]:
        results = await services.jobs.submit_batch(caller, body.urls, body.job_options())
        items = [BatchItem.of_created(r) for r in results]
        created = sum(r.created for r in results)
        out = BatchOut(jobs=items, created=created, existing=len(results) - created)
        return status.HTTP_200_OK, out

    return await answer_once(services, caller, idempotency_key, request, body, produce)


@router.get("", response_model=JobPage, responses=COMMON, summary="List jobs, newest first")
async def list_jobs(
    services: ServicesDep,
    caller: CallerDep,
    status_: Annotated[list[JobStatus] | None, Query(alias="status")] = None,
    host: Annotated[str | None, Query(max_length=255)] = None,
    created_after: Instant | None = None,
    created_before: Instant | None = None,
    limit: PageLimit = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    id_prefix: Annotated[
        str | None,
        Query(
            max_length=36,
            description="Only jobs whose id starts with these hex digits (4 or more; a short "
            "id as the command line shows it).",
        ),
    ] = None,
) -> JobPage:
    query = JobQuery(
        id_prefix=id_prefix,
        statuses=tuple(status_ or ()),
        host=host,
        created_after=created_after,
        created_before=created_before,
        limit=limit,
        cursor=cursor,
    )
    jobs, next_cursor = await services.jobs.list_jobs(caller, query)
    return JobPage(jobs=[JobOut.of(job) for job in jobs], next_cursor=next_cursor)


@router.post(
    "/retry",
    response_model=RetryOut,
    responses=COMMON,
    summary="Re-run every finished job that matches (default: all FAILED)",
)
async def retry_matching(body: RetryFilter, services: ServicesDep, caller: CallerDep) -> RetryOut:
    query = JobQuery(
        statuses=tuple(JobStatus(s) for s in body.status),
        host=body.host,
        error_code=body.error_code,
        created_after=body.created_after,
        created_before=body.created_before,
    )
    restarted = await services.jobs.retry_matching(caller, query)
    return RetryOut(restarted=len(restarted), ids=[job.id for job in restarted])


@router.post(
    "/cancel",
    response_model=CancelOut,
    responses={404: {"model": ErrorOut, "description": "No such batch."}, **COMMON},
    summary="Cancel every unfinished job that matches (PENDING and PROCESSING)",
)
async def cancel_matching(
    body: CancelFilter, services: ServicesDep, caller: CallerDep
) -> CancelOut:
    query = JobQuery(
        ids=tuple(body.ids),
        batch_id=body.batch_id,
        crawl_id=body.crawl_id,
        statuses=tuple(JobStatus(s) for s in body.status),
        host=body.host,
        created_after=body.created_after,
        created_before=body.created_before,
    )
    cancelled = await services.jobs.cancel_matching(caller, query)
    return CancelOut(cancelled=len(cancelled.ids), ids=cancelled.ids, more=cancelled.more)


@router.get("/{job_id}", response_model=JobOut, responses=NOT_FOUND, summary="Get a job")
async def get_job(job_id: Id, services: ServicesDep, caller: CallerDep) -> JobOut:
    return JobOut.of(await services.jobs.get(caller, job_id))


@router.delete(
    "/{job_id}",
    response_model=JobOut,
    responses=CONFLICT,
    summary="Cancel a job not finished yet (PENDING or PROCESSING)",
)
async def cancel_job(job_id: Id, services: ServicesDep, caller: CallerDep) -> JobOut:
    return JobOut.of(await services.jobs.cancel(caller, job_id))


@router.post(
    "/{job_id}/retry",
    response_model=JobOut,
    responses=CONFLICT,
    summary="Re-run a finished job (same id, a new run)",
)
async def retry_job(job_id: Id, services: ServicesDep, caller: CallerDep) -> JobOut:
    return JobOut.of(await services.jobs.retry(caller, job_id))


@router.get(
    "/{job_id}/runs",
    response_model=list[RunOut],
    responses=NOT_FOUND,
    summary="A job's last earlier runs, oldest first",
)
async def job_runs(
    job_id: Id,
    services: ServicesDep,
    caller: CallerDep,
    limit: RowLimit = 100,
) -> list[RunOut]:
    found = await services.jobs.runs(caller, job_id, limit=limit)
    return [RunOut.model_validate(run) for run in found]
