"""A deployment over hosts of its own (tests/support/netns.py): PostgreSQL and Redis on ``db``, the
API on ``api``, one ``taskcrawler worker`` on each worker host, and the multi-host site
(tests/support/multihost_site.py) on ``site``, answering from ``SITE_HOSTS`` addresses and as
``site.test`` and its subdomains ``h0``… ``h19``.

Used by tests/multihost/ and by ``python -m bench.multihost``. Needs root (see netns.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

from taskcrawler.storage import upgrade_database
from tests.support import netns
from tests.support.databases import admin_execute
from tests.support.postgres import start_postgres, with_database
from tests.support.processes import ManagedProcess, ProcessManager
from tests.support.redis import start_redis

SITE_HOSTS = 20
SITE_PORT = 8080
SITE_DOMAIN = "site.test"
API_PORT = 8000
FINAL = ("COMPLETED", "FAILED", "CANCELLED")
_PYTHON = [sys.executable, "-m", "taskcrawler"]


def settings_env(**values: Any) -> dict[str, str]:
    """``TASKCRAWLER_*`` variables of ``values``, with what every multi-host run needs."""
    values = {
        "allow_private_networks": True,  # the site's hosts are on a private subnet
        "respect_robots": False,
        "worker_processes": 1,
        "worker_metrics_port": 0,
        "log_format": "text",
        **values,
    }
    return {
        f"TASKCRAWLER_{key.upper()}": str(value).lower() if isinstance(value, bool) else str(value)
        for key, value in values.items()
    }


@dataclass
class MultiHost:
    lab: netns.Lab
    processes: ProcessManager
    env: dict[str, str]
    workers: dict[str, ManagedProcess]
    db: asyncpg.Pool
    api: str
    site: list[str]  # base URLs, one per site address

    def address(self, host: str) -> str:
        return self.lab.address(host)

    async def start_worker(self, host: str) -> ManagedProcess:
        worker = self.processes.start_command(
            [*self.lab.launcher(host), *_PYTHON, "worker"], self.env, name=f"worker-{host}"
        )
        self.workers[host] = worker
        await worker.wait_for_output("worker started", within=60)
        return worker

    async def site_stats(self) -> dict[str, Any]:
        async with aiohttp.ClientSession() as session, session.get(f"{self.site[0]}/_stats") as r:
            return dict(await r.json())

    async def reset_site(self) -> None:
        async with aiohttp.ClientSession() as session, session.post(f"{self.site[0]}/_reset"):
            pass

    async def post(self, path: str, body: Any) -> dict[str, Any]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.api}{path}", json=body) as response,
        ):
            assert response.status < 300, await response.text()
            return dict(await response.json())

    async def get(self, path: str) -> dict[str, Any]:
        async with aiohttp.ClientSession() as session, session.get(f"{self.api}{path}") as r:
            assert r.status == 200, await r.text()
            return dict(await r.json())

    async def submit(self, urls: Sequence[str]) -> None:
        for start in range(0, len(urls), 1000):
            await self.post("/api/v1/jobs/batch", {"urls": list(urls[start : start + 1000])})

    async def statuses(self, like: str) -> Counter[str]:
        """Jobs whose URL is ``LIKE like``, counted by status."""
        rows = await self.db.fetch(
            "SELECT status::text AS status, count(*) AS n FROM jobs WHERE url LIKE $1 GROUP BY 1",
            like,
        )
        return Counter({row["status"]: row["n"] for row in rows})

    async def wait_final(self, like: str, total: int, within: float) -> Counter[str]:
        deadline = time.monotonic() + within
        while True:
            counts = await self.statuses(like)
            if sum(counts[s] for s in FINAL) >= total:
                return counts
            assert time.monotonic() < deadline, f"not all final after {within} s: {counts}"
            await asyncio.sleep(0.1)


def make_lab(worker_hosts: Sequence[str]) -> netns.Lab:
    """The hosts: db, api, the worker hosts, and the site with its names resolved everywhere."""
    lab = netns.Lab()
    try:
        for host in ("db", "api", *worker_hosts):
            lab.add(host)
        site = lab.add("site", SITE_HOSTS)
        lab.name_hosts(
            {SITE_DOMAIN: site[0]} | {f"h{n}.{SITE_DOMAIN}": site[n] for n in range(SITE_HOSTS)}
        )
    except BaseException:
        lab.close()
        raise
    return lab


@contextlib.asynccontextmanager
async def deployed(
    lab: netns.Lab, workdir: Path, worker_hosts: Sequence[str], **settings: Any
) -> AsyncIterator[MultiHost]:
    """Everything started on ``lab``'s hosts (a worker on each of ``worker_hosts``), stopped and
    removed on the way out whatever happens."""
    db_host = lab.address("db")
    postgres = start_postgres(5432, host=db_host, launcher=lab.launcher("db"))
    processes = ProcessManager(workdir)
    pool: asyncpg.Pool | None = None
    try:
        redis = start_redis(6379, host=db_host, launcher=lab.launcher("db"))
        try:
            await admin_execute(postgres.admin_url, "CREATE DATABASE tc")
            database_url = postgres.url("tc")
            await upgrade_database(database_url)
            api_host = lab.address("api")
            env = settings_env(database_url=database_url, redis_url=redis.url, **settings)
            # On the lab's private subnet only: no keys needed.
            api = processes.start_command(
                [*lab.launcher("api"), *_PYTHON, "api", "--insecure"],
                env | settings_env(host=api_host, port=API_PORT),
                name="api",
            )
            addresses = lab.addresses["site"]
            site = processes.start_command(
                [*lab.launcher("site"), sys.executable, "-m", "tests.support.multihost_site",
                 "--port", str(SITE_PORT), "--domain", SITE_DOMAIN, *addresses],
                name="site",
            )  # fmt: skip
            pool = await asyncpg.create_pool(
                with_database(postgres.admin_url, "tc"), min_size=1, max_size=2
            )
            deployment = MultiHost(
                lab, processes, env, {}, pool, f"http://{api_host}:{API_PORT}",
                [f"http://{address}:{SITE_PORT}" for address in addresses],
            )  # fmt: skip
            await asyncio.gather(*(deployment.start_worker(host) for host in worker_hosts))
            await api.wait_for_http(f"{deployment.api}/healthz", within=60)
            await site.wait_for_port(SITE_PORT, addresses[0], within=30)
            yield deployment
        finally:
            if pool is not None:
                await pool.close()
            await processes.close(grace=10)
            redis.close()
    finally:
        postgres.close()
