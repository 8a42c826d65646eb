"""The routes that share a query parameter's alias (taskcrawler/api/params.py) declare the same
bounds for it: a page of links, a job's last runs and deliveries hold at most 1,000 rows;
a page of a listing at most 500 items."""

from __future__ import annotations

from typing import Any

import pytest

from taskcrawler.api import create_app
from taskcrawler.settings import Settings

ROWS = [
    "/api/v1/jobs/{job_id}/links",
    "/api/v1/links",
    "/api/v1/jobs/{job_id}/runs",
    "/api/v1/jobs/{job_id}/deliveries",
]
PAGES = ["/api/v1/jobs", "/api/v1/crawls", "/api/v1/monitors"]


@pytest.fixture(scope="module")
def paths() -> dict[str, Any]:
    schema: dict[str, Any] = create_app(Settings()).openapi()["paths"]
    return schema


def limit_of(paths: dict[str, Any], path: str) -> dict[str, Any]:
    [limit] = [p for p in paths[path]["get"]["parameters"] if p["name"] == "limit"]
    schema: dict[str, Any] = limit["schema"]
    return schema


@pytest.mark.parametrize("path", ROWS)
def test_routes_of_rows_take_up_to_a_thousand(paths: dict[str, Any], path: str) -> None:
    limit = limit_of(paths, path)
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 1000, 100)


@pytest.mark.parametrize("path", PAGES)
def test_listings_take_up_to_five_hundred_a_page(paths: dict[str, Any], path: str) -> None:
    limit = limit_of(paths, path)
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 500, 50)
