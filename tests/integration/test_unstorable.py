"""A value the database refuses harms only its own job, on SQLite and on PostgreSQL.

The sanitizer (taskcrawler.domain.storable) runs on every outcome; these tests bypass it to put
a row the database refuses in a batch of clean ones, as a sanitizer bug or a new kind of hostile
value would, and check that the batch falls back to writing each transition alone.
"""

import math
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings

from taskcrawler import bootstrap
from taskcrawler.domain import (
    ClaimedJob,
    ErrorCode,
    JobStatus,
    Outcome,
    StorageUnavailable,
    UnstorableData,
)
from taskcrawler.domain.pages import FetchedPage, Link, PageContent
from taskcrawler.domain.storable import storable_outcome
from taskcrawler.domain.transitions import Transition
from taskcrawler.queue.memory import MemoryQueue
from taskcrawler.settings import Settings
from taskcrawler.storage import NewJob, WorkStore
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.ports import WorkRepository
from taskcrawler.storage.tables import job_contents, job_links, jobs, page_archive
from taskcrawler.storage.tables import webhook_deliveries as deliveries
from taskcrawler.worker.worker import Worker
from tests.support.hostile_values import hostile_json, hostile_text
from tests.support.leaks import assert_no_leak
from tests.support.stores import Stores
from tests.support.transitions import decided

NUL_IN_JSON = {"metadata": {"json_ld": [{"name": "a\x00b"}]}}  # JSONB refuses it
SURROGATE = "caf\udce9"  # a header byte that was not UTF-8; no driver encodes it


async def claimed(store: Stores, count: int, owner: str) -> list[ClaimedJob]:
    created = await store.jobs.create_jobs(
        [
            NewJob(
                f"http://{owner}.test/{uuid.uuid4()}", owner=owner, callback_url="http://h.test/"
            )
            for _ in range(count)
        ],
        redispatch_after=30,
    )
    return await store.work.claim(
        [c.job.id for c in created], lease_seconds=30, redispatch_after=30
    )


def page(job: ClaimedJob, title: str = "Clean", **fields: Any) -> Outcome:
    archive = FetchedPage(
        job.url, job.url, 200, {"etag": '"v1"'}, "text/html", "utf-8", b"<title>x</title>"
    )
    values: dict[str, Any] = {
        "job": job,
        "http_status": 200,
        "final_url": job.url,
        "scraped_title": title,
        "result": {"metadata": {"title": title}},
        "content": PageContent(
            texts={"text": title},
            links=(Link("http://x.test/", title, (), False, False),),
            archive=archive,
        ),
    }
    return Outcome(**(values | fields))


def refused_by(database_url: str) -> list[dict[str, Any]]:
    """Outcome fields that this database refuses (NUL is refused by PostgreSQL alone)."""
    refused: list[dict[str, Any]] = [{"etag": SURROGATE}, {"scraped_title": SURROGATE}]
    if database_url.startswith("postgresql"):
        refused += [{"result": NUL_IN_JSON}, {"error_message": "a\x00b", "error_code": "x"}]
    return refused


async def rows(store: Stores, table: sa.Table, *columns: str) -> list[Any]:
    async with store.db.engine.connect() as conn:
        return list(await conn.execute(sa.select(*(table.c[c] for c in columns))))


def same_json(stored: Any, written: Any) -> bool:
    """Equal, numbers by value: JSONB keeps numbers as numerics, so a float with an integral
    value (1e16) comes back as an integer; what orjson writes as null is null."""
    if isinstance(written, dict):
        return (
            isinstance(stored, dict)
            and stored.keys() == written.keys()
            and all(same_json(stored[k], v) for k, v in written.items())
        )
    if isinstance(written, list):
        return (
            isinstance(stored, list)
            and len(stored) == len(written)
            and all(same_json(a, b) for a, b in zip(stored, written, strict=True))
        )
    if isinstance(written, float) and not math.isfinite(written):
        return stored is None  # orjson writes NaN and infinities as null, for either database
    if isinstance(written, float) and not isinstance(stored, bool):
        return isinstance(stored, int | float) and float(stored) == written
    return bool(stored == written and type(stored) is type(written))


def settings_for(database_url: str) -> Settings:
    return Settings(_env_file=None, database_url=database_url, max_retries=3)


@asynccontextmanager
async def worker_on(store: WorkRepository, database_url: str) -> AsyncIterator[Worker]:
    """A worker over ``store``, built as the composition root builds one."""
    settings = settings_for(database_url)
    fetcher = bootstrap.fetcher(settings)
    parser = bootstrap.page_parser(settings)
    try:
        yield Worker(bootstrap.worker_config(settings), store, MemoryQueue(), fetcher, parser)
    finally:
        await fetcher.close()
        await parser.aclose()


@pytest.fixture
async def worker(store: Stores, database_url: str) -> AsyncIterator[Worker]:
    async with worker_on(store.work, database_url) as built:
        yield built


async def test_a_refused_value_writes_nothing_of_its_batch(
    store: Stores, database_url: str
) -> None:
    for fields in refused_by(database_url):
        clean, bad = await claimed(store, 2, "tenant")
        with pytest.raises(UnstorableData):
            await store.work.record_transitions(decided([page(clean), page(bad, **fields)]))
        for job in (clean, bad):
            stored = await store.jobs.get_job(job.id, owner="tenant")
            assert stored is not None and stored.status is JobStatus.PROCESSING, fields


async def test_one_refused_outcome_fails_alone_and_its_batch_is_written(
    store: Stores, worker: Worker, database_url: str
) -> None:
    refused = refused_by(database_url)
    ours = await claimed(store, 40, "ours")
    theirs = await claimed(store, 40, "theirs")
    bad_jobs = ours[: len(refused)]
    batch = [page(job, **fields) for job, fields in zip(bad_jobs, refused, strict=True)]
    batch += [page(job, title=f"Clean {job.id}") for job in ours[len(refused) :] + theirs]

    written = await worker._persist(decided(batch))

    assert len(written) == len(batch)
    for job in ours + theirs:
        owner = "ours" if job in ours else "theirs"
        stored = await store.jobs.get_job(job.id, owner=owner)
        assert stored is not None
        assert stored.retry_count == 0
        if job in bad_jobs:
            assert stored.status is JobStatus.FAILED
            assert stored.error_code == ErrorCode.UNSTORABLE
            assert stored.error_log is not None
            assert stored.error_log.startswith("unstorable_result: the database refused")
            # Clients read error_log: the driver's class and message stay in the log.
            assert_no_leak(stored.error_log, f"error_log of {job.url}")
            assert stored.scraped_title is None and stored.result is None
        else:
            assert stored.status is JobStatus.COMPLETED
            assert stored.scraped_title == f"Clean {job.id}"
    clean_ids = {job.id for job in ours + theirs} - {job.id for job in bad_jobs}
    for table in (job_contents, job_links, page_archive):
        assert {row.job_id for row in await rows(store, table, "job_id")} == clean_ids
    # The outbox has one delivery per job, the unstorable ones announcing their failure.
    events = {row.job_id: row.event for row in await rows(store, deliveries, "job_id", "event")}
    assert events == {job.id: "job.completed" for job in ours + theirs if job.id in clean_ids} | {
        job.id: "job.failed" for job in bad_jobs
    }
    recorded = {t.job.id: t.error_code for t in written if isinstance(t, Transition)}
    assert recorded == {job.id: ErrorCode.UNSTORABLE for job in bad_jobs} | dict.fromkeys(clean_ids)


async def test_a_lone_refused_outcome_fails_without_a_second_try(
    store: Stores, worker: Worker
) -> None:
    [job] = await claimed(store, 1, "tenant")
    calls = 0
    record = store.work.record_transitions

    async def counting(transitions: Any, **options: Any) -> list[uuid.UUID]:
        nonlocal calls
        calls += 1
        return await record(transitions, **options)

    store.work.record_transitions = counting  # type: ignore[method-assign]
    [written] = await worker._persist(decided([page(job, scraped_title=SURROGATE)]))
    assert isinstance(written, Transition) and written.error_code == ErrorCode.UNSTORABLE
    assert written.status is JobStatus.FAILED
    assert calls == 2  # the refused write, then its failure: no row-by-row pass for one
    stored = await store.jobs.get_job(job.id, owner="tenant")
    assert stored is not None and stored.status is JobStatus.FAILED


async def test_a_lost_database_is_waited_out_not_blamed_on_the_data(sqlite_url: str) -> None:
    """An outage is not a refusal: the batch is neither split nor failed, but retried whole."""
    db = open_database("postgresql+asyncpg://nobody@127.0.0.1:1/none", pool_size=1)
    jobs_ = [ClaimedJob(uuid.uuid4(), "http://x.test/", 0, uuid.uuid4()) for _ in range(3)]
    try:
        async with worker_on(WorkStore(db), sqlite_url) as worker:
            with pytest.raises(StorageUnavailable):
                await worker._persist(decided([page(job, title=SURROGATE) for job in jobs_]))
    finally:
        await db.close()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=hostile_text, value=hostile_json)
async def test_both_databases_store_exactly_the_storable_outcome(
    store: Stores, text: str, value: Any
) -> None:
    [job] = await claimed(store, 1, "tenant")
    archive = FetchedPage(job.url, job.url + text, 200, {"x-" + text: text}, text, text, b"<html>")
    outcome = storable_outcome(
        page(
            job,
            title=text,
            final_url=job.url + text,
            result={"metadata": {"title": text, "json_ld": [value]}},
            etag=text,
            content=PageContent(
                texts={"markdown": text},
                links=(Link(job.url + text, text, (text,), True, False),),
                archive=archive,
            ),
        )
    )
    await store.work.record_transitions(decided([outcome]))

    stored = await store.jobs.get_job(job.id, owner="tenant")
    assert stored is not None and stored.status is JobStatus.COMPLETED
    assert (stored.scraped_title, stored.final_url) == (outcome.scraped_title, outcome.final_url)
    assert same_json(stored.result, outcome.result)
    content = outcome.content
    assert content is not None and content.archive is not None and content.links is not None
    async with store.db.engine.connect() as conn:
        body = await conn.scalar(
            sa.select(job_contents.c.body).where(job_contents.c.job_id == job.id)
        )
        link = (await conn.execute(sa.select(job_links).where(job_links.c.job_id == job.id))).one()
        kept = (
            await conn.execute(sa.select(page_archive).where(page_archive.c.job_id == job.id))
        ).one()
        etag = await conn.scalar(sa.select(jobs.c.etag).where(jobs.c.id == job.id))
    assert body == content.texts["markdown"]
    [out] = content.links
    assert (link.url, link.text or "", link.rel or "") == (out.url, out.text, " ".join(out.rel))
    assert (kept.final_url, kept.headers, kept.content_type, kept.charset) == (
        content.archive.final_url,
        content.archive.headers,
        content.archive.content_type,
        content.archive.charset,
    )
    assert etag == outcome.etag
