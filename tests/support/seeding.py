"""Rows written straight to storage, for tests that need a lot of history without the work of
making it: finished jobs with their text, chunks, and a monitor's changes."""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import sqlalchemy as sa

from taskcrawler.domain.chunks import Chunk, EmbeddedChunk, PageChunks
from taskcrawler.domain.jobs import DEFAULT_FORMATS, NewJob
from taskcrawler.domain.monitors import ChangeKind
from taskcrawler.storage import Storage
from taskcrawler.storage.tables import job_contents, jobs, monitor_changes


async def finished_jobs(
    storage: Storage,
    count: int,
    markdown: str,
    *,
    owner: str = "",
    formats: Sequence[str] = DEFAULT_FORMATS,
) -> list[UUID]:
    """``count`` COMPLETED jobs of ``owner``, each with ``markdown`` as its Markdown."""
    ids: list[UUID] = []
    for start in range(0, count, 1000):
        requests = [
            NewJob(f"http://seeded.test/{n}", owner=owner, formats=tuple(formats))
            for n in range(start, min(count, start + 1000))
        ]
        created = await storage.jobs.create_jobs(requests, redispatch_after=3600)
        batch = [c.job.id for c in created]
        async with storage.db.write() as conn:
            await conn.execute(
                job_contents.insert(),
                [{"job_id": i, "format": "markdown", "body": markdown} for i in batch],
            )
            await conn.execute(
                jobs.update()
                .where(jobs.c.id.in_(batch))
                .values(status="COMPLETED", finished_at=sa.func.now())
            )
        ids += batch
    return ids


async def chunks_of(
    storage: Storage, job_ids: Sequence[UUID], texts: Sequence[str], *, model: str, dim: int
) -> None:
    """Each job gets ``texts`` as its chunks, with random unit vectors of ``model``."""
    rng = random.Random(7)
    await storage.chunks.enable_vectors(dim)
    for job_id in job_ids:
        embedded = []
        for index, text in enumerate(texts):
            vector = [rng.gauss(0, 1) for _ in range(dim)]
            norm = sum(x * x for x in vector) ** 0.5
            chunk = Chunk(index, text, ("Seeded",), len(text.split()))
            embedded.append(EmbeddedChunk(chunk, [x / norm for x in vector]))
        page = PageChunks(job_id, "", None, model, dim, embedded)
        await storage.chunks.replace(page, source_hash=job_id.hex)


async def changes(
    storage: Storage,
    monitor_id: UUID,
    diffs: Sequence[str],
    *,
    start: datetime,
    owner: str = "o",
) -> list[UUID]:
    """Changes of the monitor's first page, one a minute from ``start``; their ids, oldest
    first."""
    monitor = await storage.monitors.get(monitor_id, owner=owner)
    assert monitor is not None and monitor.pages, "a monitor of URLs"
    job_id = monitor.pages[0].job_id
    rows: list[dict[str, Any]] = [
        {
            "id": uuid.uuid4(),
            "monitor_id": monitor_id,
            "owner": owner,
            "job_id": job_id,
            "url": monitor.pages[0].url,
            "kind": ChangeKind.CHANGED.value,
            "run": n + 1,
            "previous_run": n,
            "detected_at": start + timedelta(minutes=n),
            "diff": diff,
            "diff_complete": True,
            "diff_coarse": False,
            "metadata": {},
        }
        for n, diff in enumerate(diffs)
    ]
    for first in range(0, len(rows), 100):
        async with storage.db.write() as conn:
            await conn.execute(monitor_changes.insert(), rows[first : first + 100])
    return [row["id"] for row in rows]
