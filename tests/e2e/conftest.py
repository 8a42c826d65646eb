"""An in-process TaskCrawler for end-to-end tests, in either mode.

embedded:   SQLite + in-process queue, the worker inside the API process (``taskcrawler serve``)
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
import pytest

from taskcrawler.api import create_app
from taskcrawler.settings import Settings
from taskcrawler.worker.runner import run_worker

FINAL = {"COMPLETED", "FAILED", "CANCELLED"}


@dataclass
class Service:
    mode: str
    settings: Settings
    client: httpx.AsyncClient

    async def submit(self, url: str) -> dict[str, Any]:
        response = await self.client.post("/api/v1/jobs", json={"url": url})
        assert response.status_code in (200, 201), response.text
        body: dict[str, Any] = response.json()
        return body

    async def wait_for(self, job_id: str, *, timeout: float = 15.0) -> dict[str, Any]:
        """Poll until the job is final (the way a client would)."""
        deadline = time.monotonic() + timeout
        while True:
            response = await self.client.get(f"/api/v1/jobs/{job_id}")
            assert response.status_code == 200, response.text
            job: dict[str, Any] = response.json()
            if job["status"] in FINAL:
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job not final after {timeout}s: {job}")
            await asyncio.sleep(0.02)

    async def scrape(self, url: str, *, timeout: float = 15.0) -> dict[str, Any]:
        job = await self.submit(url)
        return await self.wait_for(job["id"], timeout=timeout)


def test_settings(**overrides: Any) -> Settings:
    """Settings for fast tests: tiny backoff, quick sweeps, local targets allowed."""
    values: dict[str, Any] = {
        "allow_private_networks": True,
        "respect_robots": False,
        "retry_base_seconds": 0.01,
        "retry_max_seconds": 0.05,
        "sweep_interval_seconds": 0.05,
        "fetch_timeout_seconds": 2.0,
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
                yield Service(mode, settings, client)
            finally:
                stop.set()
                if worker is not None:
                    await worker


ServiceFactory = Callable[..., contextlib.AbstractAsyncContextManager[Service]]


@pytest.fixture(params=["embedded", "production"])
def service_factory(request: pytest.FixtureRequest) -> ServiceFactory:
    """``async with service_factory(**settings) as service`` in the parametrized mode."""
    mode = request.param
    if mode == "embedded":
        base: dict[str, Any] = {"database_url": request.getfixturevalue("sqlite_url")}
    else:
        base = {
            "database_url": request.getfixturevalue("pg_url"),
            "redis_url": request.getfixturevalue("redis_url"),
            "redis_prefix": request.getfixturevalue("redis_prefix"),
        }

    def factory(**overrides: Any) -> contextlib.AbstractAsyncContextManager[Service]:
        return running(mode, test_settings(**base, **overrides))

    return factory


@pytest.fixture
async def service(service_factory: ServiceFactory) -> AsyncIterator[Service]:
    async with service_factory() as running_service:
        yield running_service
