"""The export stream on both databases: positions given at finish, in commit order, so that an
export resumed with its cursor hands out every finish exactly once while jobs keep finishing."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Sequence

import orjson
import pytest
import sqlalchemy as sa

from taskcrawler.domain import JobStatus, Outcome
from taskcrawler.domain.errors import InvalidCursor
from taskcrawler.domain.exports import START
from taskcrawler.domain.keys import Caller
from taskcrawler.service.exports import EXPORT_GROUP, ExportService
from taskcrawler.storage import Database, JobStore, NewJob, WorkStore
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.exports import ExportStore
from taskcrawler.storage.tables import jobs
from tests.support.transitions import decided

OWNER = "tenant"
CALLER = Caller(owner=OWNER)


@pytest.fixture
async def db(database_url: str) -> Database:
    database = open_database(database_url)
    yield database  # type: ignore[misc]
    await database.close()


def service(db: Database) -> ExportService:
    return ExportService(ExportStore(db), request_headers={}, software="test")


async def new_jobs(db: Database, count: int, owner: str = OWNER) -> list[uuid.UUID]:
    requests = [NewJob(f"http://site.test/{uuid.uuid4()}", owner=owner) for _ in range(count)]
    created = await JobStore(db).create_jobs(requests, redispatch_after=30)
    return [c.job.id for c in created]


async def finish(db: Database, job_ids: list[uuid.UUID], status: str = "COMPLETED") -> None:
    async with db.write() as conn:
        await conn.execute(
            jobs.update()
            .where(jobs.c.id.in_(job_ids))
            .values(status=status, finished_at=sa.func.now())
        )


async def exported_ids(
    db: Database, since: str | None = None, *, expect: int = 0
) -> tuple[list[uuid.UUID], str]:
    """The ids an export after ``since`` holds, once it holds ``expect`` of them: on a shared
    PostgreSQL a finish is final once the transactions running when it committed have ended
    (other tests' and benchmarks' included), milliseconds later."""
    for _ in range(200):
        export = await service(db).export(CALLER, "jsonl", since=since)
        ids = [
            uuid.UUID(orjson.loads(line)["job"]["id"])
            async for chunk in export.chunks
            for line in chunk.splitlines()
        ]
        if len(ids) >= expect:
            return ids, export.next_since
        await asyncio.sleep(0.05)
    raise AssertionError(f"{len(ids)} exported, not {expect}")


async def test_the_worker_finishing_a_job_puts_it_in_the_export_once(db: Database) -> None:
    [job_id] = await new_jobs(db, 1)
    assert (await exported_ids(db))[0] == []
    work = WorkStore(db)
    [claimed] = await work.claim([job_id], lease_seconds=30, redispatch_after=30)
    assert (await exported_ids(db))[0] == []  # PROCESSING: not a result
    await work.record_transitions(decided([Outcome(job=claimed, http_status=200)]))
    ids, cursor = await exported_ids(db, expect=1)
    assert ids == [job_id]
    assert (await exported_ids(db, cursor)) == ([], cursor)  # nothing new: the same cursor back

    # A re-run is a new result: it comes again, after the cursor, once it has finished.
    [restarted] = await JobStore(db).restart([job_id], owner=OWNER, redispatch_after=30)
    assert restarted.status is JobStatus.PENDING
    assert (await exported_ids(db, cursor))[0] == []
    await finish(db, [job_id], "FAILED")
    again, _ = await exported_ids(db, cursor, expect=1)
    assert again == [job_id]


async def test_cancelled_jobs_and_other_tenants_are_not_exported(db: Database) -> None:
    mine = await new_jobs(db, 2)
    theirs = await new_jobs(db, 1, owner="other")
    await finish(db, [mine[0], *theirs])
    await finish(db, [mine[1]], "CANCELLED")
    assert (await exported_ids(db, expect=1))[0] == [mine[0]]


async def test_pages_limits_and_cursors_resume_where_they_stopped(db: Database) -> None:
    ids = await new_jobs(db, 1203)
    for start in range(0, len(ids), 400):  # several finishing transactions
        await finish(db, ids[start : start + 400])
    await exported_ids(db, expect=1203)  # every finish is final
    seen: list[uuid.UUID] = []
    cursor = None
    for _ in range(4):
        export = await service(db).export(CALLER, "jsonl", since=cursor, limit=500)
        before = len(seen)
        async for chunk in export.chunks:
            seen.extend(
                uuid.UUID(line.split(b'"id":"')[1][:36].decode()) for line in chunk.splitlines()
            )
        assert len(seen) - before == min(500, 1203 - before)
        cursor = export.next_since
    assert sorted(seen) == sorted(ids) and len(set(seen)) == len(seen)


async def test_texts_are_read_a_few_jobs_at_a_time(db: Database) -> None:
    # A job's texts may each be as large as the fetch limit allows: a page of 100 jobs' texts
    # read at once held GBs.
    ids = await new_jobs(db, 40)
    await finish(db, ids)
    await exported_ids(db, expect=40)
    store = ExportStore(db)
    read = store.texts
    asked: list[int] = []

    async def counted(job_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, dict[str, str]]:
        asked.append(len(job_ids))
        return await read(job_ids)

    store.texts = counted  # type: ignore[method-assign]
    export = await ExportService(store, request_headers={}, software="test").export(CALLER, "jsonl")
    lines = [line async for chunk in export.chunks for line in chunk.splitlines()]
    assert len(lines) == 40
    assert sum(asked) == 40 and max(asked) <= EXPORT_GROUP


@pytest.mark.parametrize(
    "cursor", ["nope", "djEuMS4y", "x" * 101, "djIuMS4wMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMA"]
)
async def test_a_cursor_it_did_not_make_is_refused(db: Database, cursor: str) -> None:
    with pytest.raises(InvalidCursor):
        await service(db).export(CALLER, "jsonl", since=cursor)


async def test_a_finish_committed_late_is_not_passed_over(pg_url: str) -> None:
    """Two transactions finish jobs; the one that started first commits last. An export read in
    between must not hand out the later one's job with a cursor that skips the earlier one's.
    (PostgreSQL only: SQLite runs one writer at a time, so no two finishing transactions
    overlap.)"""
    db = open_database(pg_url)
    try:
        await _late_commit(db)
    finally:
        await db.close()


async def _late_commit(db: Database) -> None:
    first, second = await new_jobs(db, 2)
    async with db.engine.connect() as slow:
        transaction = await slow.begin()
        await slow.execute(jobs.update().where(jobs.c.id == first).values(status="COMPLETED"))
        await finish(db, [second])  # commits while the first is still open
        ids, cursor = await exported_ids(db)
        assert ids == []  # held back: the open transaction might still add an earlier position
        await transaction.commit()
    ids, cursor = await exported_ids(db, cursor, expect=2)
    assert ids == [first, second]


async def test_exactly_once_while_jobs_keep_finishing(db: Database) -> None:
    ids = await new_jobs(db, 600)
    rng = random.Random(7)
    rng.shuffle(ids)
    batches = [ids[i : i + rng.randint(1, 12)] for i in range(0, len(ids), 12)]

    async def finishing() -> None:
        # Several writers at once (one at a time on SQLite), in batches of random size.
        async def writer(mine: list[list[uuid.UUID]]) -> None:
            for batch in mine:
                await finish(db, batch)
                await asyncio.sleep(0)

        await asyncio.gather(*(writer(batches[n::4]) for n in range(4)))

    seen: list[uuid.UUID] = []
    cursor: str | None = None
    writers = asyncio.create_task(finishing())
    while not writers.done():
        found, cursor = await exported_ids(db, cursor)
        seen.extend(found)
    await writers
    finished = {i for batch in batches for i in batch}
    for _ in range(50):  # the last transactions' positions become final
        found, cursor = await exported_ids(db, cursor)
        seen.extend(found)
        if len(seen) >= len(finished):
            break
        await asyncio.sleep(0.1)
    assert len(seen) == len(set(seen))  # none twice
    assert set(seen) == finished  # none lost


async def test_the_start_position_precedes_every_finish(db: Database) -> None:
    [job_id] = await new_jobs(db, 1)
    await finish(db, [job_id])
    await exported_ids(db, expect=1)
    end = await ExportStore(db).end(OWNER, START, None)
    assert end is not None and end > START and end.job_id == job_id
    assert (await JobStore(db).get_job(job_id, owner=OWNER)).status is JobStatus.COMPLETED  # type: ignore[union-attr]


async def test_one_crawls_export_resumes_with_its_cursor(db: Database) -> None:
    crawl_id = uuid.uuid4()
    crawled = await new_jobs(db, 5)
    others = await new_jobs(db, 3)
    async with db.write() as conn:
        await conn.execute(jobs.update().where(jobs.c.id.in_(crawled)).values(crawl_id=crawl_id))
    await finish(db, crawled[:3] + others)
    await exported_ids(db, expect=6)  # every finish is final

    async def of_crawl(since: str | None, limit: int | None = None) -> tuple[list[uuid.UUID], str]:
        export = await service(db).export(
            CALLER, "jsonl", since=since, limit=limit, crawl_id=crawl_id
        )
        ids = [
            uuid.UUID(orjson.loads(line)["job"]["id"])
            async for chunk in export.chunks
            for line in chunk.splitlines()
        ]
        return ids, export.next_since

    first, cursor = await of_crawl(None, limit=2)
    rest, cursor = await of_crawl(cursor)
    assert len(first) == 2 and sorted(first + rest) == sorted(crawled[:3])
    assert (await of_crawl(cursor))[0] == []
    await finish(db, crawled[3:])
    for _ in range(200):  # final once the transactions running at its commit have ended
        later, _ = await of_crawl(cursor)
        if len(later) == 2:
            break
        await asyncio.sleep(0.05)
    assert sorted(later) == sorted(crawled[3:])
    everything, _ = await of_crawl(None)
    assert sorted(everything) == sorted(crawled)
    unknown = await service(db).export(CALLER, "jsonl", crawl_id=uuid.uuid4())
    assert [chunk async for chunk in unknown.chunks] == []
