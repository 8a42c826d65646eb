"""Scale-out across hosts: PostgreSQL and Redis, the API, two worker hosts and a site, each in a
network namespace of its own with its own addresses on one private bridge (tests/support/netns.py).

The site answers every page after a delay from 20 addresses (20 hosts to the crawler), so the
work is bound by waiting, not by this machine's two cores. The scenarios run in order on one
deployment, the last one cutting a worker host's link and killing its worker:

- the work splits over both worker hosts, nothing fetched twice, and the per-host limit holds
  across them (the site never sees more requests at once than the limit, though both fetch from
  each host);
- a crawl splits over both worker hosts with exact counts;
- a worker host's cable is pulled and its worker killed: nothing is lost, and a page is fetched
  twice only if that host was fetching it.

Needs root (network namespaces); where they cannot be made the module says why, and
docs/how-to/scaling-workers.md says how to run it.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from tests.support import netns
from tests.support.multihost import (
    SITE_DOMAIN,
    SITE_HOSTS,
    SITE_PORT,
    MultiHost,
    deployed,
    make_lab,
)

pytestmark = pytest.mark.slow

_why_not = netns.unavailable()
if _why_not is not None:
    pytest.skip(
        f"{_why_not}: the multi-host test needs root to make network namespaces "
        "(docs/how-to/scaling-workers.md, 'Proving it')",
        allow_module_level=True,
    )

HOST_LIMIT = 2  # TASKCRAWLER_HOST_CONCURRENCY: low, so that it binds
WORKER_CONCURRENCY = 20


@pytest.fixture(scope="module")
async def deployment(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[MultiHost]:
    lab = make_lab(["w1", "w2"])
    try:
        async with deployed(
            lab,
            tmp_path_factory.mktemp("multihost"),
            ["w1", "w2"],
            host_concurrency=HOST_LIMIT,
            host_wait_seconds=30,
            worker_concurrency=WORKER_CONCURRENCY,
            fetch_timeout_seconds=5,
            # A killed worker's jobs (and its politeness slots) come back after 3 s, not a minute.
            lease_seconds=3,
            sweep_interval_seconds=0.2,
            redispatch_seconds=1,
        ) as made:
            yield made
    finally:
        lab.close()


async def test_the_work_splits_over_both_hosts_and_each_site_host_s_limit_holds(
    deployment: MultiHost,
) -> None:
    await deployment.reset_site()
    # 200 pages over 20 site hosts, each answering after 0.5 s: 2 at once per site host is 40,
    # what the two workers hold together, so neither can do the work alone.
    urls = [f"{deployment.site[n % SITE_HOSTS]}/p/split-{n}?delay=0.5" for n in range(200)]
    await deployment.submit(urls)
    counts = await deployment.wait_final("%/p/split-%", len(urls), within=90)

    assert counts == Counter({"COMPLETED": len(urls)})
    stats = await deployment.site_stats()
    fetches: dict[str, list[str]] = stats["fetches"]
    assert len(fetches) == len(urls)
    assert all(len(clients) == 1 for clients in fetches.values()), "a page fetched twice"
    by_worker = Counter(clients[0] for clients in fetches.values())
    w1, w2 = (deployment.address(host) for host in ("w1", "w2"))
    assert set(by_worker) == {w1, w2}
    assert min(by_worker.values()) >= len(urls) // 4, by_worker
    # Both worker hosts fetched from every site host, and still the site never saw more than the
    # limit at once: the limit is one for all worker hosts, not one per worker.
    shared = [
        base
        for base in deployment.site
        if {c[0] for key, c in fetches.items() if key.startswith(base.removeprefix("http://"))}
        == {w1, w2}
    ]
    print(f"fetched by both worker hosts: {len(shared)} site hosts of 20; by worker {by_worker}")
    assert len(shared) >= SITE_HOSTS // 2, shared
    assert max(stats["most_in_flight"].values()) <= HOST_LIMIT, stats["most_in_flight"]


async def test_a_crawl_splits_over_both_hosts_with_exact_counts(deployment: MultiHost) -> None:
    await deployment.reset_site()
    # 60 pages over 20 subdomains, 0.5 s each: more than one worker can take at once.
    pages = 60
    start = f"http://{SITE_DOMAIN}:{SITE_PORT}/crawl/0?pages={pages}&delay=0.5"
    crawl = await deployment.post("/api/v1/crawls", {"url": start, "allow_subdomains": True})
    deadline = time.monotonic() + 90
    while crawl["status"] == "RUNNING":
        assert time.monotonic() < deadline, crawl
        await asyncio.sleep(0.2)
        crawl = await deployment.get(f"/api/v1/crawls/{crawl['id']}")

    assert crawl["status"] == "COMPLETED"
    assert (crawl["discovered"], crawl["completed"], crawl["failed"]) == (pages + 1, pages + 1, 0)
    fetches: dict[str, list[str]] = (await deployment.site_stats())["fetches"]
    assert len(fetches) == pages + 1
    assert all(len(clients) == 1 for clients in fetches.values()), "a page fetched twice"
    assert {clients[0] for clients in fetches.values()} == {
        deployment.address("w1"),
        deployment.address("w2"),
    }


async def test_a_worker_host_cut_off_and_killed_loses_nothing(deployment: MultiHost) -> None:
    await deployment.reset_site()
    urls = [f"{deployment.site[n % SITE_HOSTS]}/p/cut-{n}?delay=1" for n in range(120)]
    await deployment.submit(urls)
    w1, w2 = (deployment.address(host) for host in ("w1", "w2"))

    # Once w2 is busy fetching, pull its cable, then kill its worker: a machine lost mid-work.
    deadline = time.monotonic() + 30
    while sum(client == w2 for client in (await deployment.site_stats())["fetching"].values()) < 5:
        assert time.monotonic() < deadline, "w2 never got busy"
        await asyncio.sleep(0.05)
    deployment.lab.cut("w2")
    deployment.workers["w2"].kill()
    try:
        counts = await deployment.wait_final("%/p/cut-%", len(urls), within=120)
    finally:
        deployment.lab.mend("w2")

    assert counts == Counter({"COMPLETED": len(urls)}), "a job was lost or failed"
    fetches: dict[str, list[str]] = (await deployment.site_stats())["fetches"]
    assert len(fetches) == len(urls)
    twice = {key: clients for key, clients in fetches.items() if len(clients) > 1}
    # Fetched again: only what w2 was fetching when it went (at most its concurrency), each page
    # first by w2, then once by w1. The cut came while w2 had pages in flight: some were.
    print(f"fetched twice: {len(twice)}")
    assert 0 < len(twice) <= WORKER_CONCURRENCY, twice
    assert all(clients == [w2, w1] for clients in twice.values()), twice
