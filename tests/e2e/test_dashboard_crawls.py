"""The dashboard's crawls pages over HTTP (a browser runs them in tests/browser)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from tests.e2e.harness import Service, fast_settings, running


@pytest.fixture
async def api(sqlite_url: str) -> AsyncIterator[Service]:
    async with running("api", fast_settings(database_url=sqlite_url)) as service:
        yield service


async def test_the_crawls_pages_are_served_filled_in(api: Service) -> None:
    listing = await api.client.get("/crawls")
    assert listing.status_code == 200
    assert 'data-page="crawls"' in listing.text and 'id="crawl-form"' in listing.text
    crawl_id = uuid.uuid4()
    one = await api.client.get(f"/crawls/{crawl_id}")
    assert one.status_code == 200
    assert f'data-crawl-id="{crawl_id}"' in one.text and 'id="cancel-crawl"' in one.text
    # The crawl's jobs are paged through, not cut at the newest screenful.
    for control in ("crawl-newest", "crawl-newer", "crawl-older", "crawl-jobs-range"):
        assert f'id="{control}"' in one.text
    for page in (listing, one):
        assert "{{" not in page.text
        assert "<script>" not in page.text  # no inline script: the CSP allows none
        assert "script-src 'self'" in page.headers["content-security-policy"]
    assert 'href="/crawls"' in (await api.client.get("/")).text  # in the navigation
    assert (await api.client.get("/crawls/not-a-uuid")).status_code == 404
