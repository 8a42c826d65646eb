"""A worker's memory after the hostile corpus: `taskcrawler worker` as a process of its own
(PostgreSQL, Redis), its resident size read from /proc before and after.

Before pages were bounded, one page of 200,000 links cost the worker 300-400 MB. The bound
asserted here is generous (a busy allocator keeps what it freed); what it catches is memory
that grows with what a page sends.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from taskcrawler.settings import Settings
from tests.e2e.harness import running
from tests.e2e.test_hostile_pages import assert_unharmed, final, submit
from tests.support.processes import ManagedProcess, ProcessManager
from tests.support.target import TargetServer

#: What the worker process may grow by, and its parser processes weigh at most, each.
MAX_WORKER_GROWTH_MB = 250
MAX_PARSER_MB = 300  # a process holding over 200 MB after a parse is replaced
LINK_PAGES = 4
FORMATS = ["metadata", "markdown", "text", "html", "links"]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def children(pid: int) -> list[int]:
    """Every child of ``pid``, whichever of its threads started it (Linux lists a child under
    the thread that forked it)."""
    return [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]


def env_of(settings: dict[str, Any]) -> dict[str, str]:
    return {f"TASKCRAWLER_{key.upper()}": str(value) for key, value in settings.items()}


# About 15 s of CPU in three processes: 10 s on a quiet machine, 37 s beside four busy ones, and
# more than the default 120 s in a full suite's busiest minutes.
@pytest.mark.timeout(300)
async def test_the_hostile_corpus_leaves_the_worker_memory_bounded(
    processes: ProcessManager,
    target: TargetServer,
    pg_url: str,
    redis_url: str,
    redis_prefix: str,
) -> None:
    values: dict[str, Any] = {
        "database_url": pg_url,
        "redis_url": redis_url,
        "redis_prefix": redis_prefix,
        "allow_private_networks": True,
        "respect_robots": False,
        "fetch_timeout_seconds": 30.0,
        "parse_timeout_seconds": 300.0,
        "worker_concurrency": 20,
        "worker_processes": 1,  # the memory measured is this process's
        "worker_metrics_port": 0,
        "log_format": "text",
    }
    worker: ManagedProcess = processes.start(["worker"], env_of(values), name="worker")
    await worker.wait_for_output("worker started", within=60)
    async with running("api", Settings(_env_file=None, **values)) as service:
        tenant = await service.new_key("tenant")

        async def run(urls: list[str]) -> list[dict[str, Any]]:
            jobs = [await submit(service, url, FORMATS, tenant) for url in urls]
            return [await final(service, job, tenant) for job in jobs]

        # Warm: the worker's pools and caches, and one parser process per lane's first use.
        for job in await run(
            [target.url(f"/page/{n}") for n in range(30)] + [target.url("/big?bytes=600000")]
        ):
            assert_unharmed(job, target)
        before = rss_mb(worker.pid)

        hostile = [target.url(f"/hostile/links?copy={n}") for n in range(LINK_PAGES)]
        hostile += [target.url(f"/hostile/{name}") for name in ("deep", "giant", "json-ld", "head")]
        clean = [target.url(f"/page/{n}") for n in range(100, 130)]
        # Small pages parse in the worker itself; a page over the thread lane's limit goes to the
        # parser processes.
        clean += [target.url(f"/big?bytes=600000&copy={n}") for n in range(2)]
        # The clean pages go after the hostile ones: a parser process that held too much after a
        # hostile page is ended and only replaced by the next parse in a process, so the processes
        # read below are the ones that parsed after the hostile corpus (at least one is alive).
        done = await run(hostile)
        done += await run(clean)
        await asyncio.sleep(0)
        after = rss_mb(worker.pid)
        parsers = [rss_mb(child) for child in children(worker.pid)]

    assert all(job["status"] == "COMPLETED" and job["retry_count"] == 0 for job in done), done
    assert target.hits["/hostile/links"] == LINK_PAGES
    print(f"worker RSS {before:.0f} MB -> {after:.0f} MB; parser processes {parsers} MB")
    assert after - before < MAX_WORKER_GROWTH_MB
    assert parsers and all(size < MAX_PARSER_MB for size in parsers)
