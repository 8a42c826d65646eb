"""Schemathesis against our own OpenAPI schema, in process: no request may get a 5xx, and every
response must match the schema.

The embedded mode's API (a migrated temp SQLite, the app's own lifespan) without its worker:
fuzzed job URLs must not become real fetches. Requests carry an admin key, so the key
endpoints are exercised past their 403 too.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fastapi import FastAPI
from hypothesis import given
from hypothesis.errors import Unsatisfiable

from taskcrawler.api import create_app
from taskcrawler.settings import Settings
from taskcrawler.storage import KeyStore, upgrade_database
from taskcrawler.storage.adapters import open_database
from tests.e2e.harness import Service
from tests.support.fuzzing import fuzz_settings

# Schemathesis is imported by the tests that use it, not here: every test process collects
# this module, and importing it there cost each about two seconds of CPU.
if TYPE_CHECKING:
    import schemathesis
    from schemathesis import GenerationMode

#: Examples per operation and mode (valid, invalid input): this bounds the run to well under a
#: minute.
#: TASKCRAWLER_SCHEMATHESIS_EXAMPLES=500 for a longer hunt.
EXAMPLES = int(os.environ.get("TASKCRAWLER_SCHEMATHESIS_EXAMPLES", "25"))


def checks() -> list[Callable[..., Any]]:
    """What every response is checked for: no 5xx, and the schema's shape."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import response_schema_conformance

    return [not_a_server_error, response_schema_conformance]


@pytest.fixture(scope="module")
async def embedded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path: Path = tmp_path_factory.mktemp("schemathesis") / "tc.db"
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_database(url)
    db = open_database(url)
    try:
        new, _ = await KeyStore(db).create("fuzzer", is_admin=True)
    finally:
        await db.close()
    return {
        "app": create_app(Settings(database_url=url, rate_limit_per_minute=None)),
        "headers": {"Authorization": f"Bearer {new.token}"},
    }


@pytest.fixture(scope="module")
def api_schema(embedded: dict[str, Any]) -> Iterator[schemathesis.BaseSchema]:
    import schemathesis
    from schemathesis.python import asgi

    app: FastAPI = embedded["app"]
    # The app's lifespan starts with the first request and runs until shutdown_lifespans().
    yield schemathesis.openapi.from_asgi("/openapi.json", app)
    asgi.shutdown_lifespans()


def fuzz(
    operation: Any, mode: GenerationMode, headers: dict[str, str], cases: Counter[str]
) -> None:
    """One Hypothesis run over ``operation``'s generated requests; raises on the first failure
    (shrunk to a minimal example)."""
    label = f"{operation.label} ({mode.value})"
    checked = checks()

    @given(case=operation.as_strategy(generation_mode=mode))
    @fuzz_settings(EXAMPLES)
    def run(case: schemathesis.Case) -> None:
        cases[label] += 1
        case.call_and_validate(headers=headers, checks=checked)

    run()


#: The operations are fuzzed in this many parts, each a work unit of its own that the suite's
#: processes share (tests/support/scheduling.py: a ``shard`` is a work unit).
SHARDS = 3


# Every operation, valid and invalid: its time grows with the API (about a second an operation
# on a quiet host), so it has a deadline of its own.
@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "shard", range(SHARDS), ids=[f"shard-{n + 1}-of-{SHARDS}" for n in range(SHARDS)]
)
def test_the_api_answers_every_request_without_a_5xx_and_as_documented(
    api_schema: schemathesis.BaseSchema, embedded: dict[str, Any], shard: int
) -> None:
    from schemathesis import GenerationMode

    # Valid and invalid input for every operation. (The lazy schemathesis.pytest loader does not
    # work with pytest 9: it writes node._nodeid.) Failures are collected, then shown together.
    cases: Counter[str] = Counter()
    failures: list[str] = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 15
    part = sorted(operations, key=lambda operation: operation.label)[shard::SHARDS]
    for operation in part:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                fuzz(operation, mode, embedded["headers"], cases)
            except Unsatisfiable:
                pass  # nothing to make invalid (no parameters, no body)
            except (Exception, BaseExceptionGroup) as exc:  # schemathesis' FailureGroup
                failures.append(f"{operation.label} ({mode.value}): {exc}")
    print(
        f"schemathesis part {shard + 1} of {SHARDS}: {sum(cases.values())} requests, "
        f"{len(part)} of {len(operations)} operations"
    )
    assert not failures, "\n\n".join(failures)


# --- regressions: what schemathesis found, pinned on both modes ---------------------------


async def test_huge_key_limits_are_refused_not_overflowed(service: Service) -> None:
    admin = await service.new_key("root", is_admin=True)
    for field in ("requests_per_minute", "max_pending_jobs"):
        response = await service.client.post(
            "/api/v1/keys", json={"name": "x", field: 2**63}, headers=admin
        )
        assert response.status_code == 422, response.text


async def test_a_malformed_cursor_gets_the_documented_validation_error(service: Service) -> None:
    response = await service.client.get("/api/v1/jobs", params={"cursor": "not-a-cursor"})
    assert response.status_code == 422
    [error] = response.json()["detail"]  # a list of errors, as for every other 422
    assert error["loc"] == ["query", "cursor"]
    assert error["msg"].startswith("invalid cursor: ")


async def test_huge_link_cursors_are_refused_not_overflowed(service: Service) -> None:
    job = await service.submit("http://cursor.invalid/")
    for path, params in [
        (f"/api/v1/jobs/{job['id']}/links", {"cursor": str(2**64)}),
        ("/api/v1/links", {"target": "http://a.test/", "cursor": str(2**64)}),
    ]:
        response = await service.client.get(path, params=params)
        assert response.status_code == 422, (path, response.text)


async def test_a_max_age_beyond_any_date_is_refused_not_overflowed(
    service: Service, target
) -> None:
    url = target.url("/page/11")
    first = await service.scrape(url)
    assert first["status"] == "COMPLETED"
    too_big = await service.client.post("/api/v1/jobs", json={"url": url, "max_age": 1e12})
    assert too_big.status_code == 422, too_big.text
    century = await service.client.post("/api/v1/jobs", json={"url": url, "max_age": 3e9})
    assert century.status_code == 200
    assert century.json()["id"] == first["id"]
