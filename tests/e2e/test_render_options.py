"""The render options of a job at the API's edge, and a worker without a browser: ``always``
fails as render_unavailable, ``auto`` falls back to the fetched HTML and says so."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.harness import ServiceFactory
from tests.support.render_site import RenderSite

OPTIONS = {
    "wait_until": "load",
    "wait_for": "#root main",
    "wait_seconds": 5,
    "block": ["image", "font", "image"],
    "viewport": {"width": 1024, "height": 700},
    "full_page": False,
}


@pytest.fixture
async def site() -> AsyncIterator[RenderSite]:
    server = await RenderSite("127.0.0.1").start()
    yield server
    await server.stop()


def no_browser() -> dict[str, Any]:
    return {"browser": "/nonexistent/chromium"}


async def test_render_options_are_stored_and_shown(
    service_factory: ServiceFactory, site: RenderSite
) -> None:
    async with service_factory(**no_browser()) as service:
        url = site.url("/static", host="127.0.0.1")
        response = await service.client.post(
            "/api/v1/jobs", json={"url": url, "render": "auto", "render_options": OPTIONS}
        )
        assert response.status_code == 201, response.text
        job = response.json()
        expected = {**OPTIONS, "block": ["image", "font"]}
        assert job["render"] == "auto" and job["render_options"] == expected
        shown = (await service.client.get(f"/api/v1/jobs/{job['id']}")).json()
        assert shown["render"] == "auto" and shown["render_options"] == expected

        batch = await service.client.post(
            "/api/v1/jobs/batch",
            json={"urls": [site.url("/late", host="127.0.0.1")], "formats": ["screenshot"]},
        )
        assert batch.status_code == 200, batch.text
        # A screenshot needs a browser: render defaults to always for it.
        assert batch.json()["jobs"][0]["render"] == "always"
        assert batch.json()["jobs"][0]["render_options"] is None

        plain = await service.submit(site.url("/images", host="127.0.0.1"))
        assert plain["render"] == "never" and plain["render_options"] is None


@pytest.mark.parametrize(
    "body",
    [
        {"render": "sometimes"},
        {"render": "never", "formats": ["screenshot"]},
        {"render": "auto", "render_options": {"wait_for": "div[["}},
        {"render": "auto", "render_options": {"wait_for": ""}},
        {"render": "auto", "render_options": {"wait_seconds": 61}},
        {"render": "auto", "render_options": {"wait_until": "domcontentloaded"}},
        {"render": "auto", "render_options": {"block": ["script"]}},
        {"render": "auto", "render_options": {"viewport": {"width": 10, "height": 800}}},
        {"render": "auto", "render_options": {"viewport": {"width": 1280, "height": 5000}}},
        {"render": "auto", "render_options": {"javascript": "alert(1)"}},
    ],
)
async def test_bad_render_options_are_refused(
    service_factory: ServiceFactory, body: dict[str, Any]
) -> None:
    """Refused alike for a job and for a crawl (whose pages render as it asks)."""
    async with service_factory(**no_browser()) as service:
        for path, items in (("/api/v1/jobs", "jobs"), ("/api/v1/crawls", "crawls")):
            response = await service.client.post(
                path, json={"url": "http://example.invalid/", **body}
            )
            assert response.status_code == 422, (path, response.text)
            listed = (await service.client.get(path)).json()[items]
            assert listed == []


async def test_without_a_browser_always_fails_and_auto_falls_back(
    service_factory: ServiceFactory, site: RenderSite
) -> None:
    async with service_factory(**no_browser()) as service:
        post = service.client.post
        always = await post(
            "/api/v1/jobs", json={"url": site.url("/spa", host="127.0.0.1"), "render": "always"}
        )
        shell = await post(
            "/api/v1/jobs",
            json={"url": site.url("/spa?auto", host="127.0.0.1"), "render": "auto"},
        )
        static = await post(
            "/api/v1/jobs", json={"url": site.url("/static", host="127.0.0.1"), "render": "auto"}
        )
        failed = await service.wait_for(always.json()["id"])
        assert failed["status"] == "FAILED" and failed["error_code"] == "render_unavailable"
        assert failed["retry_count"] == 0  # permanent: no browser will appear on a retry

        fell_back = await service.wait_for(shell.json()["id"])
        assert fell_back["status"] == "COMPLETED"
        render = fell_back["result"]["render"]
        assert render["rendered"] is False and render["mode"] == "auto"
        assert "not available" in render["fallback"]
        assert "empty mount point" in render["reason"]

        taken = await service.wait_for(static.json()["id"])
        assert taken["status"] == "COMPLETED" and taken["scraped_title"] == "About us"
        assert taken["result"]["render"]["rendered"] is False
        assert "fallback" not in taken["result"]["render"]  # not a shell: no browser needed

        # No screenshot was taken, and an unknown job has none either.
        for job_id in (fell_back["id"], str(uuid.uuid4())):
            missing = await service.client.get(f"/api/v1/jobs/{job_id}/screenshot")
            assert missing.status_code == 404
