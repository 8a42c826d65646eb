"""POST /api/v1/map and `taskcrawler map` end to end, in both modes, with the fetcher the app
builds for itself (so TASKCRAWLER_ALLOW_PRIVATE_NETWORKS and robots.txt are the real ones)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.e2e.harness import ServiceFactory
from tests.support.cli import run_cli
from tests.support.site import Site, SiteHosts, SiteServer

SITE_OPTIONS = {"pages": 600, "hosts": SiteHosts.loopback()}
#: The exact lists below need every page and sitemap read, and a loaded machine can take a while
#: to serve a big sitemap from the test's own site: the deadline is this test's own, whatever
#: the harness's is.
READ_ALL = {"fetch_timeout_seconds": 30.0}


async def test_map_answers_exactly_the_sites_urls(
    service_factory: ServiceFactory, site_server: SiteServer, site: Site
) -> None:
    async with service_factory(respect_robots=True, **READ_ALL) as service:
        response = await service.client.post(
            "/api/v1/map", json={"url": site.start_url, "limit": 100_000}
        )
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"links", "warnings"}
    assert set(body["links"]) == site.expected_map(), body["warnings"]
    assert len(body["links"]) == len(set(body["links"]))
    assert not any("/private/" in url for url in site_server.fetched)  # robots.txt obeyed


async def test_search_and_limit(service_factory: ServiceFactory, site: Site) -> None:
    async with service_factory(respect_robots=True, **READ_ALL) as service:
        response = await service.client.post(
            "/api/v1/map", json={"url": site.start_url, "search": "Archive 1", "limit": 5}
        )
    links = response.json()["links"]
    assert len(links) == 5
    assert set(links) <= site.expected_map(search="archive 1")


async def test_a_tenant_needs_its_key(service_factory: ServiceFactory, site: Site) -> None:
    async with service_factory(auth_required=True, **READ_ALL) as service:
        refused = await service.client.post("/api/v1/map", json={"url": site.start_url})
        headers = await service.new_key()
        answered = await service.client.post(
            "/api/v1/map", json={"url": site.start_url, "sitemap": "skip"}, headers=headers
        )
    assert refused.status_code == 401
    assert answered.status_code == 200
    assert set(answered.json()["links"]) == site.expected_map(sitemap="skip")


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"url": "ftp://example.com/"}, ["body", "url"]),
        ({"url": "https://example.com", "limit": 51}, ["body", "limit"]),
        ({"url": "https://example.com", "limit": 0}, ["body", "limit"]),
        (
            {"url": "https://example.com", "include_paths": ["ok", "(x"]},
            ["body", "include_paths", 1],
        ),
        ({"url": "https://example.com", "exclude_paths": ["\\1"]}, ["body", "exclude_paths", 0]),
        ({"url": "https://example.com", "sitemap": "maybe"}, ["body", "sitemap"]),
        ({"url": "https://example.com", "depth": 3}, ["body", "depth"]),
    ],
)
async def test_bad_input_is_a_422_naming_the_field(
    service_factory: ServiceFactory, body: dict[str, object], loc: list[object]
) -> None:
    async with service_factory(map_max_limit=50) as service:
        response = await service.client.post("/api/v1/map", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == loc


async def test_private_addresses_are_refused_unless_allowed(
    service_factory: ServiceFactory, site_server: SiteServer, site: Site
) -> None:
    async with service_factory(allow_private_networks=False) as service:
        response = await service.client.post("/api/v1/map", json={"url": site.start_url})
    assert response.status_code == 422
    assert "blocked_address" in response.json()["detail"]
    assert site_server.fetched == []


async def taskcrawler_map(cwd: Path, *args: str) -> tuple[int | None, bytes, bytes]:
    """``taskcrawler map ARGS`` in the test's process (tests/support/cli.py), in ``cwd``."""
    env = {"TASKCRAWLER_ALLOW_PRIVATE_NETWORKS": "true", "TASKCRAWLER_LOG_LEVEL": "ERROR"}
    result = await run_cli("map", *args, cwd=cwd, env=env)
    return result.code, result.out.encode(), result.err.encode()


async def test_the_command_line(site: Site, tmp_path: Path) -> None:
    code, out, err = await taskcrawler_map(
        tmp_path, site.start_url, "--search", "docs", "--limit", "100000", "--json"
    )
    assert code == 0, err.decode()
    assert set(orjson.loads(out)["links"]) == site.expected_map(search="docs")

    code, out, err = await taskcrawler_map(tmp_path, site.start_url, "--sitemap", "skip")
    assert code == 0, err.decode()
    assert set(out.decode().split()) == site.expected_map(sitemap="skip")

    code, _, err = await taskcrawler_map(tmp_path, site.start_url, "--limit", "0")
    assert code == 2 and b"limit" in err
