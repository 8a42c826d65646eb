"""The dashboard's monitors pages over HTTP (a browser runs them in tests/browser)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from tests.e2e.harness import Service, fast_settings, running


@pytest.fixture
async def api(sqlite_url: str) -> AsyncIterator[Service]:
    async with running("api", fast_settings(database_url=sqlite_url)) as service:
        yield service


async def test_the_monitors_pages_are_served_filled_in(api: Service) -> None:
    listing = await api.client.get("/monitors")
    assert listing.status_code == 200
    assert 'data-page="monitors"' in listing.text and 'id="monitors-table"' in listing.text
    monitor_id = uuid.uuid4()
    one = await api.client.get(f"/monitors/{monitor_id}")
    assert one.status_code == 200
    assert f'data-monitor-id="{monitor_id}"' in one.text and 'id="changes"' in one.text
    for page in (listing, one):
        assert "{{" not in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
    # The other pages still fill every placeholder.
    assert "{{" not in (await api.client.get("/")).text
    assert (await api.client.get("/monitors/not-a-uuid")).status_code == 404
