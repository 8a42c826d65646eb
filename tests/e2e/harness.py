"""An in-process TaskCrawler for end-to-end tests, in either mode.

embedded:   SQLite + in-process queue, the worker inside the API process (``taskcrawler serve``
            runs it in a child process instead: tests/e2e/test_serve_signals.py)
production: PostgreSQL + Redis, the worker beside the API with its own connections (as a
            separate ``taskcrawler worker`` process would have)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI

from taskcrawler.api import create_app
from taskcrawler.running import run_worker
from taskcrawler.service import Services
from taskcrawler.settings import Settings
from taskcrawler.storage import Storage

FINAL = {"COMPLETED", "FAILED", "CANCELLED"}


@dataclass
class Service:
    mode: str
    settings: Settings
    client: httpx.AsyncClient
    app: FastAPI

    @property
    def services(self) -> Services:
        services: Services = self.app.state.services
        return services

    @property
    def storage(self) -> Storage:
        storage: Storage = self.app.state.runtime.storage
        return storage

    async def new_key(self, name: str = "tenant", **options: Any) -> dict[str, str]:
        """Authorization headers of a fresh API key."""
        new, _ = await self.services.keys.create(name, **options)
        return {"Authorization": f"Bearer {new.token}"}

    async def submit(self, url: str) -> dict[str, Any]:
        response = await self.client.post("/api/v1/jobs", json={"url": url})
        assert response.status_code in (200, 201), response.text
        body: dict[str, Any] = response.json()
        return body

    async def wait_for(self, job_id: str, *, within: float = 15.0) -> dict[str, Any]:
        """Poll until the job is final (the way a client would)."""
        deadline = time.monotonic() + within
        while True:
            response = await self.client.get(f"/api/v1/jobs/{job_id}")
            assert response.status_code == 200, response.text
            job: dict[str, Any] = response.json()
            if job["status"] in FINAL:
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job not final after {within}s: {job}")
            await asyncio.sleep(0.02)

    async def scrape_until_pending_retry(self, url: str, *, within: float = 10.0) -> dict[str, Any]:
        """Submit ``url`` and wait until its first attempt failed and a retry is scheduled."""
        job = await self.submit(url)
        deadline = time.monotonic() + within
        while True:
            current: dict[str, Any] = (await self.client.get(f"/api/v1/jobs/{job['id']}")).json()
            if current["status"] == "PENDING" and current["retry_count"] >= 1:
                return current
            if time.monotonic() > deadline:
                raise AssertionError(f"no retry scheduled after {within}s: {current}")
            await asyncio.sleep(0.02)

    async def scrape(self, url: str, *, within: float = 15.0) -> dict[str, Any]:
        job = await self.submit(url)
        return await self.wait_for(job["id"], within=within)


def fast_settings(**overrides: Any) -> Settings:
    """Settings for fast tests: tiny backoff, quick sweeps, local targets allowed."""
    values: dict[str, Any] = {
        "allow_private_networks": True,
        "respect_robots": False,
        "retry_base_seconds": 0.01,
        "retry_max_seconds": 0.05,
        "sweep_interval_seconds": 0.05,
        # Far past any local page's answer: a loaded CI host stalls a process's loop for 2.5 s
        # (bench/results/2026-12-07-flaky-write-backlog-test.md), and a fetch cut short there
        # is retried, which breaks a test counting hits or retries. A test that needs a
        # timeout, or a slow page cut short, sets its own deadline.
        "fetch_timeout_seconds": 30.0,
        "worker_concurrency": 20,
        "shutdown_grace_seconds": 2.0,
    }
    values.update(overrides)
    return Settings(**values)


@contextlib.asynccontextmanager
async def running(mode: str, settings: Settings) -> AsyncIterator[Service]:
    """``mode``: embedded, production, or api (no worker at all)."""
    app = create_app(settings, run_worker=mode == "embedded")
    stop = asyncio.Event()
    async with app.router.lifespan_context(app):
        worker = (
            asyncio.create_task(run_worker(settings, stop=stop)) if mode == "production" else None
        )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://taskcrawler") as client:
            try:
                yield Service(mode, settings, client, app)
            finally:
                stop.set()
                if worker is not None:
                    await worker


ServiceFactory = Callable[..., contextlib.AbstractAsyncContextManager[Service]]
