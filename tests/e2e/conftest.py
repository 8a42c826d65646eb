"""Fixtures of the end-to-end tests: a running TaskCrawler in each mode (see harness.py)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Service, ServiceFactory, fast_settings, running
from tests.support.served import FIRECRAWL_ENV, Served, served_on_sqlite


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
        return running(mode, fast_settings(**base, **overrides))

    return factory


@pytest.fixture
async def service(service_factory: ServiceFactory) -> AsyncIterator[Service]:
    async with service_factory() as running_service:
        yield running_service


@pytest.fixture(scope="module")
async def firecrawl_served(
    tmp_path_factory: pytest.TempPathFactory, _sqlite_template: Path
) -> AsyncIterator[Served]:
    """``taskcrawler serve`` as the Firecrawl SDKs meet it: keys required, no retries. One per
    module: each test uses keys of its own (:meth:`Served.new_key`), and a key sees only its
    own scrapes, batches and crawls."""
    async with served_on_sqlite(tmp_path_factory, _sqlite_template, **FIRECRAWL_ENV) as served:
        yield served
