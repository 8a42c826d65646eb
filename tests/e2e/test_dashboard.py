"""The dashboard's pages and static files over HTTP (no browser: see tests/browser for that)."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from taskcrawler.api.routes import dashboard
from tests.e2e.harness import Service, fast_settings, running


@pytest.fixture
async def api(sqlite_url: str) -> AsyncIterator[Service]:
    async with running("api", fast_settings(database_url=sqlite_url)) as service:
        yield service


async def test_dashboard_is_html_that_loads_only_our_own_files(api: Service) -> None:
    response = await api.client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    assert 'data-page="jobs"' in page
    assert 'id="submit-form"' in page and 'id="jobs-table"' in page
    assert "{{" not in page  # every placeholder filled
    # Nothing from elsewhere: every src and href is local, and the policy says so.
    for link in re.findall(r'(?:src|href)="([^"]+)"', page):
        assert link.startswith("/") or link.startswith("#"), link
    assert "default-src 'self'" in response.headers["content-security-policy"]
    for asset in re.findall(r'(?:src|href)="(/static/[^"]+)"', page):
        fetched = await api.client.get(asset)
        assert fetched.status_code == 200, asset
        assert fetched.content


async def test_static_files_have_their_types(api: Service) -> None:
    for name, kind in (
        ("dashboard.js", "javascript"),
        ("dashboard/common.js", "javascript"),  # a module: browsers load it only as JavaScript
        ("dashboard.css", "text/css"),
        ("favicon.svg", "image/svg+xml"),
    ):
        response = await api.client.get(f"/static/{name}")
        assert response.status_code == 200
        assert kind in response.headers["content-type"]
        assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "path",
    ["/static/../routes/dashboard.py", "/static/%2e%2e/app.py", "/static/..%2fapp.py",
     "/static/", "/static/nope.js", "/static//etc/passwd"],
)  # fmt: skip
async def test_nothing_outside_the_static_folder_is_served(api: Service, path: str) -> None:
    response = await api.client.get(path)
    assert response.status_code == 404


async def test_job_page_for_an_id_and_404_for_anything_else(api: Service) -> None:
    job_id = str(uuid.uuid4())
    page = await api.client.get(f"/jobs/{job_id}")
    assert page.status_code == 200
    assert f'data-job-id="{job_id}"' in page.text
    assert 'data-page="job"' in page.text
    missing = await api.client.get("/jobs/<script>alert(1)</script>")
    assert missing.status_code == 404
    assert "<script>alert" not in missing.text
    # The API's one spelling of an id, here too: another is not a second URL of the page.
    for spelling in ("{" + job_id + "}", f"urn:uuid:{job_id}", job_id.replace("-", "")):
        assert (await api.client.get(f"/jobs/{spelling}")).status_code == 404


async def test_api_docs_and_schema_are_unchanged(api: Service) -> None:
    assert (await api.client.get("/docs")).status_code == 200
    schema = (await api.client.get("/openapi.json")).json()
    # The pages are not part of the API's contract.
    assert "/" not in schema["paths"]
    assert not any(path.startswith(("/static", "/jobs/")) for path in schema["paths"])


async def test_pages_need_no_key_but_the_api_still_does(sqlite_url: str) -> None:
    settings = fast_settings(database_url=sqlite_url, auth_required=True)
    async with running("api", settings) as service:
        assert (await service.client.get("/")).status_code == 200
        assert (await service.client.get("/static/dashboard.js")).status_code == 200
        assert (await service.client.get("/api/v1/jobs")).status_code == 401


def test_every_static_and_template_file_is_package_data() -> None:
    """pyproject ships ``api/static/**/*`` and ``api/templates/**/*``: nested files included."""
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    patterns = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-data"]
    package = dashboard.PACKAGE_DIR.parent
    shipped = {p for pattern in patterns["taskcrawler"] for p in package.glob(pattern)}
    for folder in (dashboard.STATIC_DIR, dashboard.TEMPLATE_DIR):
        files = [p for p in folder.rglob("*") if p.is_file()]
        assert files
        assert set(files) <= shipped, set(files) - shipped


async def test_search_page_holds_its_form_and_no_data(api: Service) -> None:
    page = await api.client.get("/search")
    assert page.status_code == 200
    assert 'data-page="search"' in page.text
    assert 'id="search-form"' in page.text and 'id="search-results"' in page.text
    assert "{{" not in page.text
    assert '<a href="/search">Search</a>' in (await api.client.get("/")).text
