"""``GET /api/v1/export``: the caller's finished jobs, streamed as JSON Lines or WARC."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from taskcrawler.api.deps import CallerDep, ServicesDep
from taskcrawler.api.streamed import IdleLimitedStreamingResponse
from taskcrawler.contract.base import ErrorOut, Id
from taskcrawler.domain.exports import ExportFormat
from taskcrawler.export.cursor import MAX_CURSOR_CHARS

router = APIRouter(tags=["export"])

#: Name of the header with the cursor of what finishes after this export.
NEXT_SINCE = "X-TaskCrawler-Next-Since"


@router.get(
    "/api/v1/export",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"application/x-ndjson": {}, "application/warc": {}},
            "description": f"The stream; the {NEXT_SINCE} header is the cursor to pass as "
            "`since` next time.",
        },
        401: {"model": ErrorOut, "description": "Missing or unknown API key."},
        429: {"model": ErrorOut, "description": "Rate limit; see Retry-After."},
        503: {"model": ErrorOut, "description": "The database is unavailable."},
    },
    summary="Export finished jobs (JSONL) or their raw responses (WARC 1.1), resumably",
)
async def export(
    services: ServicesDep,
    caller: CallerDep,
    format: ExportFormat = "jsonl",
    since: Annotated[str | None, Query(max_length=MAX_CURSOR_CHARS)] = None,
    limit: Annotated[int | None, Query(ge=1, le=10_000_000)] = None,
    crawl_id: Annotated[Id | None, Query(description="Only this crawl's pages.")] = None,
) -> StreamingResponse:
    found = await services.exports.export(
        caller, format, since=since, limit=limit, crawl_id=crawl_id
    )
    # An export may run to gigabytes: a client that stops reading it is let go.
    return IdleLimitedStreamingResponse(
        found.chunks, media_type=found.media_type, headers={NEXT_SINCE: found.next_since}
    )


__all__ = ["NEXT_SINCE", "router"]
