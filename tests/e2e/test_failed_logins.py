"""A flood of requests with keys that do not exist is throttled per client address before it
reaches the database: beyond ``TASKCRAWLER_AUTH_FAILURES_PER_MINUTE`` failures an address's
unknown keys are answered ``429`` with ``Retry-After`` and no lookup. Valid keys keep working:
from other addresses always, and from the flooding address while they are in use."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest

from taskcrawler.api import create_app
from taskcrawler.domain.keys import ApiKey
from taskcrawler.service.keys import KeyService
from tests.e2e.harness import fast_settings

LIMIT = 5
FLOOD = 60


@dataclass
class Edge:
    flooding: httpx.AsyncClient
    elsewhere: httpx.AsyncClient
    keys: KeyService
    #: Keys looked up in the database.
    lookups: int = 0


@pytest.fixture
async def served(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Edge]:
    settings = fast_settings(
        database_url=sqlite_url, auth_required=True, auth_failures_per_minute=LIMIT
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        keys: KeyService = app.state.services.keys
        find_active = keys.keys.find_active

        async def counted(key_id: str) -> tuple[ApiKey, str] | None:
            edge.lookups += 1
            return await find_active(key_id)

        monkeypatch.setattr(keys.keys, "find_active", counted)
        flooder = httpx.ASGITransport(app=app, client=("203.0.113.7", 4000))
        other = httpx.ASGITransport(app=app, client=("198.51.100.2", 4000))
        async with (
            httpx.AsyncClient(transport=flooder, base_url="http://tc") as flooding,
            httpx.AsyncClient(transport=other, base_url="http://tc") as elsewhere,
        ):
            edge = Edge(flooding, elsewhere, keys)
            yield edge


def _unknown_token() -> str:
    return f"tc_{secrets.token_hex(8)}_{secrets.token_urlsafe(24)}"


async def test_a_flood_of_unknown_keys_costs_a_bounded_number_of_lookups(
    served: Edge,
) -> None:
    flooding, elsewhere, keys = served.flooding, served.elsewhere, served.keys
    statuses = []
    for path in ["/api/v1/jobs", "/v2/scrape"] * (FLOOD // 2):
        headers = {"Authorization": f"Bearer {_unknown_token()}"}
        if path == "/v2/scrape":
            answer = await flooding.post(path, json={"url": "http://x.invalid/"}, headers=headers)
        else:
            answer = await flooding.get(path, headers=headers)
        statuses.append(answer.status_code)
        if answer.status_code == 429:
            assert int(answer.headers["Retry-After"]) >= 1
            assert "failed authentications" in answer.text
    assert served.lookups <= LIMIT, served.lookups
    mcp = await flooding.post(
        "/mcp", json={}, headers={"Authorization": f"Bearer {_unknown_token()}"}
    )
    assert mcp.status_code == 429 and int(mcp.headers["Retry-After"]) >= 1, mcp.text
    assert served.lookups <= LIMIT, served.lookups
    assert statuses.count(401) == LIMIT and statuses.count(429) == FLOOD - LIMIT, statuses

    # Another address is not held back by this one's flood.
    new, _ = await keys.create("elsewhere")
    answer = await elsewhere.get("/api/v1/jobs", headers={"Authorization": f"Bearer {new.token}"})
    assert answer.status_code == 200, answer.text
    answer = await elsewhere.get("/api/v1/jobs", headers={"Authorization": "Bearer tc_x_y"})
    assert answer.status_code == 401


async def test_a_key_in_use_keeps_working_through_a_flood_from_its_address(
    served: Edge,
) -> None:
    flooding, keys = served.flooding, served.keys
    new, _ = await keys.create("behind-the-same-proxy")
    mine = {"Authorization": f"Bearer {new.token}"}
    assert (await flooding.get("/api/v1/jobs", headers=mine)).status_code == 200
    for _ in range(LIMIT + 5):
        await flooding.get("/api/v1/jobs", headers={"Authorization": f"Bearer {_unknown_token()}"})
    assert (await flooding.get("/api/v1/jobs", headers=mine)).status_code == 200


async def test_a_key_created_after_a_miss_works_at_once(
    served: Edge,
) -> None:
    flooding, keys = served.flooding, served.keys
    bad = await flooding.get(
        "/api/v1/jobs", headers={"Authorization": f"Bearer {_unknown_token()}"}
    )
    assert bad.status_code == 401
    new, _ = await keys.create("after-a-miss")
    answer = await flooding.get("/api/v1/jobs", headers={"Authorization": f"Bearer {new.token}"})
    assert answer.status_code == 200, answer.text


async def test_a_flood_sent_at_once_costs_a_bounded_number_of_lookups(served: Edge) -> None:
    """Unknown keys sent together, as a flood's are: each lookup under way counts against its
    address, else every request sent before the first failure was known was looked up."""
    bad = [{"Authorization": f"Bearer {_unknown_token()}"} for _ in range(FLOOD)]
    answers = await asyncio.gather(
        *(served.flooding.get("/api/v1/jobs", headers=headers) for headers in bad)
    )
    assert served.lookups <= LIMIT, served.lookups
    statuses = [answer.status_code for answer in answers]
    assert statuses.count(401) == LIMIT and statuses.count(429) == FLOOD - LIMIT, statuses


async def test_a_made_up_key_sent_many_times_at_once_is_looked_up_once(served: Edge) -> None:
    """Requests sent together with one key share its lookup: repeating one made-up key at
    once costs the database one lookup, as a client's first requests with its key do."""
    headers = {"Authorization": f"Bearer {_unknown_token()}"}
    answers = await asyncio.gather(
        *(served.flooding.get("/api/v1/jobs", headers=headers) for _ in range(FLOOD))
    )
    assert served.lookups == 1
    assert {answer.status_code for answer in answers} == {401}
