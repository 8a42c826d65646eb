"""Tools for fault tests: a target that counts hits per job, a deployment of real processes, and
the accounting every fault scenario ends with (completed, failed, lost, repeated fetches).

Shared by tests/faults (small sizes, assertions) and bench/faults.py (larger sizes, a table).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import sqlalchemy as sa
from aiohttp import web
from sqlalchemy.ext.asyncio import create_async_engine

from taskcrawler.settings import Settings
from tests.support.firecrawl_clients import served_app
from tests.support.processes import ManagedProcess, ProcessManager, free_port
from tests.support.target import TargetServer, page_html

FINAL = ("COMPLETED", "FAILED", "CANCELLED")


class FaultTarget(TargetServer):
    """The test target plus ``/job/{key}?delay=S``: a page per job, so hits count per job (the
    stock ``/slow`` counts every job on one path)."""

    def _routes(self) -> list[web.RouteDef]:
        return [*super()._routes(), web.get("/job/{key}", self._job)]

    async def _job(self, request: web.Request) -> web.Response:
        delay = float(request.query.get("delay", "0"))
        if delay:
            await asyncio.sleep(delay)
        key = request.match_info["key"]
        return web.Response(text=page_html(f"Job {key}"), content_type="text/html", charset="utf-8")

    def job_url(self, key: str, delay: float = 0.0) -> str:
        return self.url(f"/job/{key}?delay={delay:g}")


def start_fault_target() -> FaultTarget:
    server = FaultTarget()
    server.start()
    return server


@dataclass
class Outcome:
    """How a scenario ended, job by job, as the database and the target saw it."""

    fault: str
    jobs: int
    completed: int
    failed: int
    lost: int
    #: fetches beyond one per job
    repeated: int
    #: repeats the database accounts for: an attempt counted when a lease was recovered
    explained: int
    failures: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def unexplained(self) -> int:
        return self.repeated - self.explained

    def row(self) -> tuple[Any, ...]:
        return (
            self.fault,
            self.jobs,
            self.completed,
            self.failed,
            self.lost,
            self.repeated,
            self.explained,
            f"{self.seconds:.1f}",
        )


class Deployment:
    """``taskcrawler api`` / ``worker`` / ``serve`` processes sharing one database and queue.

    ``api_in_process``: the API is served from this process's event loop instead of a
    ``taskcrawler api`` process of its own. The tests ask for it: they kill and restart workers,
    Redis and PostgreSQL, never the API, whose process start would cost each test about two
    seconds of CPU that prove nothing. ``bench/faults.py`` keeps the process, as deployed."""

    def __init__(
        self,
        processes: ProcessManager,
        target: FaultTarget,
        database_url: str,
        *,
        redis_url: str | None = None,
        redis_prefix: str = "taskcrawler",
        settings: Mapping[str, Any] | None = None,
        api_in_process: bool = False,
    ) -> None:
        self.processes = processes
        self.target = target
        self.database_url = database_url
        self.redis_url = redis_url
        self.redis_prefix = redis_prefix
        self.settings: dict[str, Any] = {
            "allow_private_networks": True,
            "respect_robots": False,
            # Every job is on one host: politeness must not be what limits the run.
            "host_concurrency": 1000,
            "host_wait_seconds": 30,
            # One event loop per `worker` command unless a scenario asks for more.
            "worker_processes": 1,
            "fetch_timeout_seconds": 10,
            "retry_base_seconds": 0.05,
            "retry_max_seconds": 0.2,
            "sweep_interval_seconds": 0.2,
            "redispatch_seconds": 1,
            "lease_seconds": 2,
            "shutdown_grace_seconds": 10,
            "log_format": "text",
            **(settings or {}),
        }
        self.api_url = ""
        self.api_in_process = api_in_process
        self._engine = create_async_engine(database_url)
        self._served = contextlib.AsyncExitStack()

    def values(self, **overrides: Any) -> dict[str, Any]:
        """The settings of a process of this deployment: ``overrides`` on top of its own."""
        values = {**self.settings, **overrides, "database_url": self.database_url}
        if self.redis_url:
            values |= {"redis_url": self.redis_url, "redis_prefix": self.redis_prefix}
        return values

    def env(self, **overrides: Any) -> dict[str, str]:
        values = self.values(**overrides)
        return {f"TASKCRAWLER_{k.upper()}": _env_value(v) for k, v in values.items()}

    def worker(self, name: str = "worker", **settings: Any) -> ManagedProcess:
        return self.processes.start(["worker"], self.env(**settings), name=name)

    async def started_worker(self, name: str = "worker", **settings: Any) -> ManagedProcess:
        process = self.worker(name, **settings)
        await process.wait_for_output("worker started")
        return process

    async def api(self, **settings: Any) -> None:
        """Start the API (see ``api_in_process``) and wait until it answers."""
        if not self.api_in_process:
            await self._answering("api", settings)
            return
        served = served_app("api", Settings(**self.values(**settings)))
        self.api_url = (await self._served.enter_async_context(served)).base_url

    async def serve(self, **settings: Any) -> ManagedProcess:
        """Start ``taskcrawler serve`` (embedded mode) and wait until it answers."""
        return await self._answering("serve", settings)

    async def _answering(self, command: str, settings: Mapping[str, Any]) -> ManagedProcess:
        port = free_port()
        env = self.env(port=port, **settings)
        process = self.processes.start([command], env, name=command)
        self.api_url = f"http://127.0.0.1:{port}"
        await process.wait_for_http(f"{self.api_url}/healthz")
        return process

    async def submit(self, urls: list[str]) -> list[str]:
        """Through the API's batch endpoint; returns the job ids in order."""
        ids: list[str] = []
        async with aiohttp.ClientSession() as session:
            for start in range(0, len(urls), 1000):
                chunk = urls[start : start + 1000]
                async with session.post(
                    f"{self.api_url}/api/v1/jobs/batch", json={"urls": chunk}
                ) as response:
                    assert response.status == 200, await response.text()
                    body = await response.json()
                ids += [job["id"] for job in body["jobs"]]
        return ids

    async def request(
        self, method: str, path: str, json: Any = None
    ) -> tuple[int, dict[str, Any] | None]:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15)) as session,
            session.request(method, f"{self.api_url}{path}", json=json) as response,
        ):
            try:
                body = await response.json(content_type=None)
            except ValueError:
                body = None
            return response.status, body

    # --- the database's view --------------------------------------------------------------

    async def counts(self) -> Counter[str]:
        async with self._engine.connect() as conn:
            rows = await conn.execute(sa.text("SELECT status, count(*) FROM jobs GROUP BY status"))
            return Counter({status: int(n) for status, n in rows})

    async def jobs(self) -> list[Mapping[str, Any]]:
        async with self._engine.connect() as conn:
            rows = await conn.execute(
                sa.text("SELECT id, url, status, retry_count, error_code, error_log FROM jobs")
            )
            return [dict(row._mapping) for row in rows]

    async def wait_until(self, predicate: Any, *, within: float, what: str) -> None:
        """Poll the status counts until ``predicate(counts)`` holds (bounded)."""
        deadline = time.monotonic() + within
        while True:
            try:
                counts = await self.counts()
            except (OSError, sa.exc.DBAPIError):
                counts = Counter()  # our own PostgreSQL may be stopped right now
            if predicate(counts):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"not {what} after {within} s: {dict(counts)}")
            await asyncio.sleep(0.1)

    async def wait_final(self, total: int, *, within: float) -> None:
        await self.wait_until(
            lambda c: sum(c[s] for s in FINAL) >= total, within=within, what="all final"
        )

    async def outcome(self, fault: str, *, started: float, total: int | None = None) -> Outcome:
        jobs = await self.jobs()
        statuses = Counter(str(job["status"]) for job in jobs)
        repeated = explained = 0
        failures: Counter[str] = Counter()
        for job in jobs:
            hits = self.target.hits_for(str(job["url"]))
            extra = max(0, hits - 1)
            repeated += extra
            # A recovered lease counts an attempt: its re-fetch is accounted for.
            explained += min(extra, int(job["retry_count"]))
            if job["status"] == "FAILED":
                failures[str(job["error_code"])] += 1
        count = total if total is not None else len(jobs)
        return Outcome(
            fault=fault,
            jobs=count,
            completed=statuses["COMPLETED"],
            failed=statuses["FAILED"],
            lost=count - sum(statuses[s] for s in FINAL),
            repeated=repeated,
            explained=explained,
            failures=failures,
            seconds=time.monotonic() - started,
        )

    async def close(self) -> None:
        await self._served.aclose()
        await self._engine.dispose()


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def urls_for(target: FaultTarget, keys: Iterable[str], delay: float) -> list[str]:
    return [target.job_url(key, delay) for key in keys]
