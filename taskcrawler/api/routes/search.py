"""A page's chunks, and search over the caller's chunks."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from taskcrawler.api.deps import CallerDep, ServicesDep
from taskcrawler.contract.base import ErrorOut, Id
from taskcrawler.contract.search import ChunkList, ChunkOut, SearchIn, SearchResult, SearchResults

router = APIRouter(tags=["search"])

ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "Unknown job (or another key's)."},
    409: {"model": ErrorOut, "description": "Not asked for in `formats`, or not completed."},
}


@router.get(
    "/api/v1/jobs/{job_id}/chunks",
    response_model=ChunkList,
    responses=ERRORS,
    summary="A page's chunks (asked for with formats: chunks)",
)
async def job_chunks(job_id: Id, services: ServicesDep, caller: CallerDep) -> ChunkList:
    chunks = await services.search.chunks_of(caller, job_id)
    return ChunkList(
        chunks=[ChunkOut.of(chunk) for chunk in chunks],
        model=chunks[0].model if chunks else None,
    )


@router.get(
    "/api/v1/search",
    response_model=SearchResults,
    responses={
        409: {"model": ErrorOut, "description": "Semantic search without vectors (pgvector)."},
        503: {"model": ErrorOut, "description": "The database or the embedder is unavailable."},
    },
    summary="Search your pages' chunks: semantic, keyword or hybrid",
)
async def search(
    services: ServicesDep, caller: CallerDep, params: Annotated[SearchIn, Query()]
) -> SearchResults:
    found = await services.search.answer(params.query(caller.owner))
    return SearchResults(
        results=[SearchResult.of(hit) for hit in found.hits],
        legs=list(found.legs),
    )
