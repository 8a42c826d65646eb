"""A job cancelled while a worker holds it keeps none of that worker's chunks, on both
databases: the chunks are written only while the job is still held under the worker's lease."""

from __future__ import annotations

from taskcrawler.domain.jobs import JobQuery, JobStatus
from taskcrawler.storage import Storage
from tests.integration.test_chunk_store import _job, _page, _unit, storage  # noqa: F401


async def test_a_cancelled_jobs_chunks_are_not_written(storage: Storage) -> None:  # noqa: F811
    kept = await _job(storage, "http://a.test/kept")
    dropped = await _job(storage, "http://a.test/dropped")
    claimed = await storage.work.claim([kept, dropped], lease_seconds=60, redispatch_after=30)
    tokens = {job.id: job.lease_token for job in claimed}
    assert set(tokens) == {kept, dropped}

    query = JobQuery(ids=(dropped,), statuses=(JobStatus.PENDING, JobStatus.PROCESSING))
    cancelled = await storage.jobs.cancel_matching(query, limit=10)
    assert cancelled is not None and cancelled.ids == [dropped]

    for job_id in (kept, dropped):
        page = _page(job_id, [("text", _unit(1, 0, 0, 0))])
        await storage.chunks.replace(page, "h", lease_token=tokens[job_id])
    assert [c.text for c in await storage.chunks.list_for_job(kept, owner="")] == ["text"]
    assert await storage.chunks.list_for_job(dropped, owner="") == []
    # The worker's outcome finds no lease either: the job stays CANCELLED.
    job = await storage.jobs.get_job(dropped)
    assert job is not None and job.status is JobStatus.CANCELLED
