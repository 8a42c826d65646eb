"""Issue 31's forged cursors, export positions and id spellings, on both databases: each is a
422 (Firecrawl's 400 body on its routes; a tool error over MCP) that shows nothing of the
inside, on every list that takes one."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.e2e.harness import Service, fast_settings, running
from tests.support.cursors import EXPLICIT_EXPORT_POSITIONS, EXPLICIT_LIST_CURSORS
from tests.support.leaks import assert_no_leak

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Host": "127.0.0.1:8000"}


async def _seeded(service: Service) -> tuple[dict[str, str], dict[str, str]]:
    """An admin's headers, and the ids of a job, a crawl and a monitor of theirs."""
    admin, _ = await service.services.keys.create("lists", is_admin=True)
    auth = {"Authorization": f"Bearer {admin.token}"}
    job = await service.client.post("/api/v1/jobs", json={"url": "http://a.example/"}, headers=auth)
    crawl = await service.client.post(
        "/api/v1/crawls", json={"url": "http://a.example/site"}, headers=auth
    )
    monitor = await service.client.post(
        "/api/v1/monitors",
        json={"url": "http://a.example/watched", "interval_seconds": 3600},
        headers=auth,
    )
    for created in (job, crawl, monitor):
        assert created.status_code == 201, created.text
    ids = {"job": job.json()["id"], "crawl": crawl.json()["id"], "monitor": monitor.json()["id"]}
    return auth, ids


def _lists(ids: dict[str, str]) -> list[str]:
    return [
        "/api/v1/jobs",
        "/api/v1/crawls",
        f"/api/v1/crawls/{ids['crawl']}/jobs",
        "/api/v1/monitors",
        f"/api/v1/monitors/{ids['monitor']}/changes",
        f"/v1/crawl/{ids['crawl']}",
        f"/v2/crawl/{ids['crawl']}",
    ]


def _refused(response: httpx.Response, path: str, cursor: str) -> None:
    where = f"GET {path}?cursor={cursor!r}"
    assert_no_leak(response.content, where, echoed=[cursor])
    if path.startswith(("/v1/", "/v2/")):
        assert response.status_code == 400, f"{where}: {response.status_code} {response.text}"
        body = response.json()
        assert body["success"] is False and "cursor" in body["error"], body
    else:
        assert response.status_code == 422, f"{where}: {response.status_code} {response.text}"
        [error] = response.json()["detail"]
        assert error["loc"] == ["query", "cursor"], error


async def test_forged_cursors_and_positions_are_refused_on_every_list(database_url: str) -> None:
    async with running("api", fast_settings(database_url=database_url)) as service:
        auth, ids = await _seeded(service)
        for path in _lists(ids):
            for cursor in EXPLICIT_LIST_CURSORS + EXPLICIT_EXPORT_POSITIONS:
                response = await service.client.get(path, params={"cursor": cursor}, headers=auth)
                _refused(response, path, cursor)
            # The list's own cursor still works.
            assert (await service.client.get(path, headers=auth)).status_code == 200
        for since in EXPLICIT_EXPORT_POSITIONS + EXPLICIT_LIST_CURSORS:
            exported = await service.client.get(
                "/api/v1/export", params={"since": since, "format": "jsonl"}, headers=auth
            )
            assert exported.status_code == 422, f"since={since!r}: {exported.text}"
            assert exported.json()["detail"][0]["loc"] == ["query", "since"]
            assert_no_leak(exported.content, f"export since={since!r}", echoed=[since])
        # Over /mcp, the same forgery in crawl_status is a tool error saying what is wrong.
        for cursor in EXPLICIT_LIST_CURSORS[:3]:
            called = await _tool(
                service, auth, "crawl_status", crawl_id=ids["crawl"], cursor=cursor
            )
            assert called["isError"] is True, called
            text = called["content"][0]["text"]
            assert text.startswith("422") and "cursor" in text, text
            assert_no_leak(text, "crawl_status over /mcp", echoed=[cursor])


async def _tool(service: Service, auth: dict[str, str], name: str, **arguments: Any) -> Any:
    response = await service.client.post(
        "/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        },
        headers={**MCP_HEADERS, **auth},
    )
    assert response.status_code == 200, response.text
    return response.json()["result"]


async def test_an_id_has_one_spelling(database_url: str) -> None:
    async with running("api", fast_settings(database_url=database_url)) as service:
        auth, ids = await _seeded(service)
        job = uuid.UUID(ids["job"])
        assert (await service.client.get(f"/api/v1/jobs/{job}", headers=auth)).status_code == 200
        upper = await service.client.get(f"/api/v1/jobs/{str(job).upper()}", headers=auth)
        assert upper.status_code == 200  # hex digits are case-insensitive (RFC 9562)
        for spelling in ("{" + str(job) + "}", f"urn:uuid:{job}", job.hex):
            for path in (f"/api/v1/jobs/{spelling}", f"/api/v1/jobs/{spelling}/runs"):
                refused = await service.client.get(path, headers=auth)
                assert refused.status_code == 422, f"{path}: {refused.text}"
                assert refused.json()["detail"][0]["type"] == "uuid_spelling"
            firecrawl = await service.client.get(f"/v1/crawl/{spelling}", headers=auth)
            assert firecrawl.status_code == 400 and firecrawl.json()["success"] is False
            tool = await _tool(service, auth, "get_job", job_id=spelling)
            assert tool["isError"] is True and "job_id" in tool["content"][0]["text"], tool


async def test_escapes_of_unreserved_characters_name_one_job(database_url: str) -> None:
    async with running("api", fast_settings(database_url=database_url)) as service:
        auth, _ = await _seeded(service)
        ids = set()
        for url in ("http://a.example/page/%64d", "http://a.example/page/dd"):
            created = await service.client.post("/api/v1/jobs", json={"url": url}, headers=auth)
            assert created.status_code in (200, 201), created.text
            ids.add(created.json()["id"])
        assert len(ids) == 1
        # A reserved character escaped is another resource: another job.
        other = await service.client.post(
            "/api/v1/jobs", json={"url": "http://a.example/page%2Fdd"}, headers=auth
        )
        assert other.json()["id"] not in ids


async def test_firecrawl_refusals_have_its_shape(database_url: str) -> None:
    async with running("api", fast_settings(database_url=database_url)) as service:
        auth, ids = await _seeded(service)
        both = await service.client.post(
            "/v1/map",
            json={"url": "http://a.example/", "ignoreSitemap": True, "sitemapOnly": True},
            headers=auth,
        )
        assert both.status_code == 400, both.text
        assert both.json()["success"] is False
        assert "ignoreSitemap" in both.json()["error"] and "sitemapOnly" in both.json()["error"]
        for version in ("v1", "v2"):
            nul = await service.client.get(
                f"/{version}/crawl/{ids['crawl']}?cursor=a%00b", headers=auth
            )
            assert nul.status_code == 400, nul.text
            assert nul.json()["success"] is False and "NUL" in nul.json()["error"]
        # The rest of the API keeps FastAPI's 422 for it.
        plain = await service.client.get("/api/v1/jobs?cursor=a%00b", headers=auth)
        assert plain.status_code == 422 and plain.json()["detail"][0]["loc"] == ["query", "cursor"]
