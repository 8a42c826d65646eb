"""Export throughput and memory: N finished jobs with a text each, streamed as JSON Lines by the
export service straight from the database, as the API streams them.

    .venv/bin/python -m bench.export_memory [--jobs 10000] [--text-kb 12] [--database-url URL]

Without --database-url it uses a fresh SQLite file in a temporary folder. Prints the exported
bytes, the time and rate, and how much the process's resident memory grew while streaming.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from taskcrawler.domain.keys import Caller
from taskcrawler.service.exports import ExportService
from taskcrawler.storage import Storage, upgrade_database
from taskcrawler.storage.adapters import open_database
from tests.support import seeding


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def measure(service: ExportService) -> tuple[int, int, float, int, int]:
    export = await service.export(Caller(), "jsonl")
    baseline = peak = rss()
    records = size = 0
    started = time.perf_counter()
    async for chunk in export.chunks:
        records += 1
        size += len(chunk)
        if records % 200 == 0:
            peak = max(peak, rss())
    return records, size, time.perf_counter() - started, baseline, peak


async def main(url: str, count: int, text_kb: int) -> None:
    await upgrade_database(url)
    storage = Storage.on(open_database(url))
    try:
        await seeding.finished_jobs(storage, count, "word " * (text_kb * 1024 // 5))
        service = ExportService(storage.exports, request_headers={}, software="bench")
        for _ in range(20):
            # On a shared PostgreSQL the last finishes are final once the write transactions
            # other sessions had open when they committed have ended: measure a full export.
            records, size, took, baseline, peak = await measure(service)
            if records == count:
                break
            await asyncio.sleep(0.5)
    finally:
        await storage.close()
    print(f"database      {url.split(':')[0]}")
    print(f"jobs          {records:,} ({text_kb} KB of Markdown each)")
    print(
        f"exported      {size / 1e6:,.1f} MB in {took:.2f} s: {records / took:,.0f} jobs/s, "
        f"{size / 1e6 / took:,.1f} MB/s"
    )
    print(
        f"memory        RSS {baseline / 1e6:,.0f} MB before, grew {(peak - baseline) / 1e6:,.1f} MB"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--text-kb", type=int, default=12)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        asyncio.run(main(url, args.jobs, args.text_kb))
