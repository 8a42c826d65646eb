from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter, HTTPException, Response, status

from taskcrawler.api.deps import ServicesDep
from taskcrawler.api.schemas import ErrorOut, JobCreate, JobOut

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"])

UNAVAILABLE: dict[int | str, dict[str, Any]] = {
    503: {"model": ErrorOut, "description": "The database is unavailable."}
}


@router.post(
    "",
    response_model=JobOut,
    status_code=status.HTTP_201_CREATED,
    responses={200: {"model": JobOut, "description": "The URL already has a job."}, **UNAVAILABLE},
    summary="Submit a URL",
)
async def create_job(body: JobCreate, response: Response, services: ServicesDep) -> JobOut:
    created = await services.submitter.submit(body.url)
    if not created.created:
        response.status_code = status.HTTP_200_OK
    return JobOut.of(created.job)


@router.get(
    "/{job_id}",
    response_model=JobOut,
    responses={404: {"model": ErrorOut}, **UNAVAILABLE},
    summary="Get a job",
)
async def get_job(job_id: UUID, services: ServicesDep) -> JobOut:
    job = await services.jobs.get_job(job_id)
    if job is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no job with this id")
    return JobOut.of(job)
