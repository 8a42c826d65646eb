"""Batches of jobs on both databases: read back in the order submitted, by their owner only."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from taskcrawler.storage import Database, JobStore, NewJob
from taskcrawler.storage.adapters import open_database
from taskcrawler.storage.batches import BatchStore


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = open_database(database_url)
    yield database
    await database.close()


async def test_a_batch_reads_back_its_jobs_in_order_for_its_owner_only(db: Database) -> None:
    created = await JobStore(db).create_jobs(
        [NewJob(f"http://batch.test/{n}", owner="o") for n in range(5)], redispatch_after=30
    )
    ids = [c.job.id for c in reversed(created)]
    batches = BatchStore(db)
    batch_id = await batches.create("o", ids)
    found = await batches.jobs_of("o", batch_id)
    assert found is not None and [job.id for job in found] == ids
    assert await batches.jobs_of("someone else", batch_id) is None
    assert await batches.jobs_of("o", uuid.uuid4()) is None
