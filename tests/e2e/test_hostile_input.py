"""Each class of bad input that once got a 5xx (or was accepted and never usable), pinned on both
databases: a 422 that names the field, a body that is strict JSON, and nothing changed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from tests.e2e.harness import Service, fast_settings, running

JSON = {"content-type": "application/json"}


@pytest.fixture
async def api(database_url: str) -> AsyncIterator[Service]:
    """The API alone (no worker: nothing submitted here may be fetched) on each database."""
    async with running("api", fast_settings(database_url=database_url)) as service:
        yield service


def refused(response: httpx.Response, *loc: str | int) -> dict[str, Any]:
    """The one 422 error of ``response``, checked to be strict JSON and to point at ``loc``."""
    assert response.status_code == 422, response.text
    body = orjson.loads(response.content)  # stricter than json: no NaN, no lone surrogates
    errors = body["detail"]
    assert [tuple(error["loc"]) for error in errors] == [loc], errors
    error: dict[str, Any] = errors[0]
    return error


async def counts(service: Service) -> tuple[int, int]:
    jobs = await service.services.jobs.jobs.count_unfinished("")
    keys = len(await service.services.keys.list_keys())
    return jobs, keys


# --- naive and out-of-range instants -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("2024-01-01T00:00:00", "timezone"),
        ("2024-01-01", "timezone"),
        ("0001-01-01T00:00:00+14:00", "out of range once converted to UTC"),
        ("9999-12-31T23:59:59-14:00", "out of range once converted to UTC"),
    ],
)
async def test_instants_need_a_time_zone_and_a_utc_date(
    api: Service, value: str, says: str
) -> None:
    for field in ("created_after", "created_before"):
        listed = await api.client.get("/api/v1/jobs", params={field: value})
        assert says in refused(listed, "query", field)["msg"]
        retried = await api.client.post("/api/v1/jobs/retry", json={field: value})
        assert says in refused(retried, "body", field)["msg"]


async def test_aware_instants_are_accepted(api: Service) -> None:
    for value in ("2024-01-01T00:00:00Z", "2024-01-01T00:00:00+14:00", "9999-12-31T23:59:59Z"):
        listed = await api.client.get("/api/v1/jobs", params={"created_before": value})
        assert listed.status_code == 200, listed.text
        retried = await api.client.post("/api/v1/jobs/retry", json={"created_after": value})
        assert retried.status_code == 200, retried.text


# --- numbers that are not numbers, text that is not text ---------------------------------------


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
async def test_non_finite_numbers_are_refused_and_echoed_as_strict_json(
    api: Service, constant: str
) -> None:
    before = await counts(api)
    for path, body, loc in [
        ("/api/v1/jobs", '{"url": "http://a.example/", "max_age": %s}', ("body", "max_age")),
        ("/api/v1/jobs", '{"url": %s}', ("body", "url")),
        (
            "/api/v1/jobs/batch",
            '{"urls": ["http://a.example/"], "max_age": %s}',
            ("body", "max_age"),
        ),
        ("/api/v1/jobs/retry", '{"host": %s}', ("body", "host")),
    ]:
        response = await api.client.post(path, content=body % constant, headers=JSON)
        assert refused(response, *loc)["input"] == constant
    assert await counts(api) == before


@pytest.mark.parametrize(
    "text", ["\x00", chr(0xD800), chr(0xDFFF)], ids=["nul", "high-surrogate", "low-surrogate"]
)
async def test_unstorable_text_in_any_body_field_is_refused_naming_the_field(
    api: Service, text: str
) -> None:
    admin = await api.new_key("root", is_admin=True)
    before = await counts(api)
    escape = f"\\u{ord(text):04x}"  # as a client's JSON spells it
    for path, template, loc in [
        ("/api/v1/jobs", '{"url": "http://a.example/@@"}', ("body", "url")),
        (
            "/api/v1/jobs",
            '{"url": "http://a.example/", "callback_url": "http://b/@@"}',
            ("body", "callback_url"),
        ),
        ("/api/v1/jobs/batch", '{"urls": ["http://a.example/", "http://c/@@"]}', ("body", "urls")),
        ("/api/v1/jobs/retry", '{"host": "h@@"}', ("body", "host")),
        ("/api/v1/jobs/retry", '{"error_code": "e@@"}', ("body", "error_code")),
        ("/api/v1/keys", '{"name": "n@@"}', ("body", "name")),
        ("/api/v1/keys", '{"name": "k", "callback_url": "http://b/@@"}', ("body", "callback_url")),
    ]:
        content = template.replace("@@", escape)
        response = await api.client.post(path, content=content, headers={**JSON, **admin})
        refused(response, *loc)
    assert await counts(api) == before


async def test_the_message_names_the_field_and_the_character(api: Service) -> None:
    admin = await api.new_key("root", is_admin=True)
    response = await api.client.post(
        "/api/v1/keys", content='{"name": "a\\u0000b"}', headers={**JSON, **admin}
    )
    error = refused(response, "body", "name")
    assert error["type"] == "unstorable_text"
    assert error["msg"] == "name holds a NUL character (U+0000), which cannot be stored"
    batch = await api.client.post(
        "/api/v1/jobs/batch", content='{"urls": ["http://a.example/", "\\ud834"]}', headers=JSON
    )
    assert "urls[1] holds a lone surrogate (U+D834)" in refused(batch, "body", "urls")["msg"]


@pytest.mark.parametrize(
    ("method", "path", "options", "loc"),
    [
        ("GET", "/api/v1/jobs", {"params": {"host": "a\x00b"}}, ("query", "host")),
        ("GET", "/api/v1/jobs", {"params": {"cursor": "\x00"}}, ("query", "cursor")),
        ("GET", "/api/v1/links", {"params": {"target": "http://a\x00/"}}, ("query", "target")),
        ("DELETE", "/api/v1/keys/ab%00cd", {}, ("path",)),
        ("POST", "/api/v1/keys/ab%00cd/webhook-secret", {}, ("path",)),
        ("GET", "/static/app%00.js", {}, ("path",)),
        (
            "POST",
            "/api/v1/jobs",
            {"json": {"url": "http://a.example/"}, "headers": {"Idempotency-Key": "k\x00"}},
            ("header", "idempotency-key"),
        ),
        (
            "GET",
            "/api/v1/jobs",
            {"headers": {"Authorization": "Bearer tc_ab\x00_cd"}},
            ("header", "authorization"),
        ),
    ],
)
async def test_a_nul_in_the_path_query_or_headers_is_refused_before_any_route(
    api: Service, method: str, path: str, options: dict[str, Any], loc: tuple[str, ...]
) -> None:
    before = await counts(api)
    error = refused(await api.client.request(method, path, **options), *loc)
    assert "holds a NUL character (U+0000)" in error["msg"]
    assert await counts(api) == before


async def test_a_static_name_too_long_for_the_file_system_is_not_found(api: Service) -> None:
    response = await api.client.get("/static/" + "x" * 5000)
    assert response.status_code == 404, response.text


async def test_malformed_tokens_never_reach_a_query(api: Service) -> None:
    for token in ("tc_\u00e9\u00e9_secret", "tc_" + "a" * 40 + "_s", "tc_abc_sec ret", "tc_abc_"):
        response = await api.client.get(
            "/api/v1/jobs", headers={"Authorization": f"Bearer {token}".encode("latin-1")}
        )
        assert response.status_code == 401, (token, response.text)
        assert response.json()["detail"].startswith("malformed Authorization header")


# --- hosts the worker could never use ---------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://\u2488.example/", "empty label"),
        ("http://a\u200bb.example/", "cannot contain"),
        ("http://example.com:0/", "port 0"),
        ("http://a..example/", "empty label"),
        ("http://" + "b" * 64 + ".example/", "longer than 63"),
    ],
)
async def test_unusable_hosts_are_refused_wherever_a_url_is_taken(
    api: Service, url: str, says: str
) -> None:
    admin = await api.new_key("root", is_admin=True)
    before = await counts(api)
    fine = "http://fine.example/"
    for path, body, loc in [
        ("/api/v1/jobs", {"url": url}, ("body", "url")),
        ("/api/v1/jobs", {"url": fine, "callback_url": url}, ("body", "callback_url")),
        ("/api/v1/jobs/batch", {"urls": [fine, url]}, ("body", "urls")),
        ("/api/v1/keys", {"name": "k", "callback_url": url}, ("body", "callback_url")),
    ]:
        response = await api.client.post(path, json=body, headers=admin)
        assert says in refused(response, *loc)["msg"]
    assert await counts(api) == before


# --- formats ---------------------------------------------------------------------------------


async def test_formats_are_kept_once_each_in_the_order_given(api: Service) -> None:
    formats = ["links", "text", "links", "metadata", "text", "links"]
    created = await api.client.post(
        "/api/v1/jobs", json={"url": "http://formats.example/", "formats": formats}
    )
    assert created.status_code == 201, created.text
    assert created.json()["formats"] == ["links", "text", "metadata"]
    stored = await api.client.get(f"/api/v1/jobs/{created.json()['id']}")
    assert stored.json()["formats"] == ["links", "text", "metadata"]
    batch = await api.client.post(
        "/api/v1/jobs/batch", json={"urls": ["http://formats.example/b"], "formats": formats}
    )
    assert batch.json()["jobs"][0]["formats"] == ["links", "text", "metadata"]


async def test_unknown_or_too_many_formats_are_refused(api: Service) -> None:
    before = await counts(api)
    unknown = await api.client.post(
        "/api/v1/jobs", json={"url": "http://formats.example/", "formats": ["text", "pdf"]}
    )
    assert refused(unknown, "body", "formats", 1)["type"] == "literal_error"
    flood = await api.client.post(
        "/api/v1/jobs", json={"url": "http://formats.example/", "formats": ["text"] * 100_000}
    )
    assert refused(flood, "body", "formats")["type"] == "too_long"
    assert await counts(api) == before
