"""What Firecrawl's self-hosted edition lacks, through firecrawl-py and the native API, in both
modes: the json and summary formats through a local fake model (which also misbehaves), a
selector schema without a model, extract, and search through a local fake SearXNG.

One served TaskCrawler per mode for the module, with the fakes beside it."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from aiohttp import web

from taskcrawler.client import AsyncTaskCrawler
from taskcrawler.storage import upgrade_database
from tests.e2e.harness import fast_settings, running
from tests.support.fake_services import FakeLLM, FakeSearxng, fake_llm, fake_searxng, serving
from tests.support.firecrawl_clients import ServedApp, served_app
from tests.support.firecrawl_sdk import v2_client, v2_scrape_options
from tests.support.services import DatabasePool, backing_store
from tests.support.target import TargetServer
from tests.unit.test_structured import PAGE, PRODUCTS

if TYPE_CHECKING:
    from firecrawl import Firecrawl

pytestmark = pytest.mark.timeout(120)
SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "words": {"type": "integer"}},
    "required": ["title"],
}


@pytest.fixture(scope="module")
async def model() -> AsyncIterator[tuple[FakeLLM, str]]:
    async with fake_llm() as running_model:
        yield running_model


@pytest.fixture(scope="module")
async def searx(_target_server: TargetServer) -> AsyncIterator[tuple[FakeSearxng, str]]:
    async with fake_searxng(_target_server.url("/")) as running_engine:
        yield running_engine


@pytest.fixture(scope="module")
async def shop() -> AsyncIterator[str]:
    async def page(_: web.Request) -> web.Response:
        return web.Response(body=PAGE, content_type="text/html")

    app = web.Application()
    app.router.add_get("/shop", page)
    async with serving(app) as url:
        yield f"{url}/shop"


@pytest.fixture(scope="module")
async def site() -> AsyncIterator[str]:
    """A few pages under /docs (and one beside it) whose titles the fake model answers with;
    under /broken, pages the model fails on."""
    pages = {
        "/docs/": ("llm-docsroot", ["/docs/a", "/docs/b", "/other"]),
        "/docs/a": ("llm-docsa", ["/docs/"]),
        "/docs/b": ("llm-docsb", []),
        "/other": ("llm-other", []),
        "/broken/": ("llm-5xx", ["/broken/x"]),
        "/broken/x": ("llm-5xx", []),
    }

    async def page(request: web.Request) -> web.Response:
        if request.path not in pages:
            raise web.HTTPNotFound
        title, links = pages[request.path]
        anchors = "".join(f'<p><a href="{link}">more</a></p>' for link in links)
        head = f"<head><title>{title}</title></head>"
        body = f"<html>{head}<body><h1>{title}</h1>{anchors}</body></html>"
        return web.Response(text=body, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)
    async with serving(app) as url:
        yield url


@pytest.fixture(scope="module", params=["embedded", "production"])
async def served(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    pg_pool: DatabasePool,
    redis_url: str,
    model: tuple[FakeLLM, str],
    searx: tuple[FakeSearxng, str],
) -> AsyncIterator[ServedApp]:
    mode: str = request.param
    directory = tmp_path_factory.mktemp("firecrawl-llm")
    async with backing_store(mode, directory, pg_pool, redis_url) as store:
        settings = fast_settings(
            **store,
            max_retries=0,
            llm_url=model[1],
            llm_model="fake",
            llm_timeout_seconds=1.5,
            llm_max_retries=0,
            llm_max_response_bytes=64 * 1024,
            searxng_url=searx[1],
        )
        async with served_app(mode, settings) as app:
            yield app


def _sdk(served: ServedApp) -> Firecrawl:
    return v2_client("fc-placeholder", served.base_url)


async def test_firecrawl_py_scrapes_json_and_summary(
    served: ServedApp, target: TargetServer
) -> None:
    url = target.url(f"/title/llm-ok{served.mode}")
    doc = await asyncio.to_thread(
        _sdk(served).scrape, url, formats=[{"type": "json", "schema": SCHEMA}, "summary"]
    )
    assert doc.json == {"title": f"llm-ok{served.mode}", "words": 2}
    assert doc.summary == f"A page about llm-ok{served.mode}."


async def test_v1_json_options_and_a_prompt_alone(served: ServedApp, target: TargetServer) -> None:
    url = target.url(f"/title/llm-v1{served.mode}")
    body = {"url": url, "formats": ["json"], "jsonOptions": {"prompt": "the title, please"}}
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        answer = await http.post("/v1/scrape", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["json"] == {"title": f"llm-v1{served.mode}", "words": 2}


@pytest.mark.parametrize(
    ("word", "code"),
    [
        ("llm-5xx", "llm_unavailable: the model's server answered 503"),
        ("llm-slow", "llm_unavailable: the model did not answer within 1.5 s"),
        ("llm-garbage", "llm_unavailable: the model's server did not answer JSON"),
        ("llm-endless", "llm_unavailable: the model's answer is over 65,536 bytes"),
        ("llm-prose", "llm_invalid_answer: after 2 answers, the answer is not JSON"),
        (
            "llm-breaks",
            "llm_invalid_answer: after 2 answers, the answer breaks the schema at title",
        ),
    ],
)
async def test_a_misbehaving_model_fails_the_scrape_with_a_named_error(
    served: ServedApp, target: TargetServer, word: str, code: str
) -> None:
    url = target.url(f"/title/{word}")
    body = {"url": url, "formats": [{"type": "json", "schema": SCHEMA}], "maxAge": 0}
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        answer = await http.post("/v2/scrape", json=body)
    assert answer.status_code == 500, answer.text
    error = answer.json()["error"]
    assert error.startswith(code) and "Fix:" in error
    assert "Traceback" not in error and "<html>" not in error


async def test_an_answer_that_breaks_the_schema_once_is_asked_again(
    served: ServedApp, target: TargetServer
) -> None:
    url = target.url(f"/title/llm-fixes{served.mode}")
    body = {"url": url, "formats": [{"type": "json", "schema": SCHEMA}]}
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        answer = await http.post("/v2/scrape", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["json"]["title"] == f"llm-fixes{served.mode}"


async def test_a_selector_schema_on_the_native_api(served: ServedApp, shop: str) -> None:
    body = {"url": shop, "formats": ["json"], "options": {"json_schema": PRODUCTS}}
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        created = await http.post("/api/v1/jobs", json=body)
        assert created.status_code in (200, 201), created.text
        job = created.json()
        while job["status"] not in ("COMPLETED", "FAILED"):
            await asyncio.sleep(0.05)
            job = (await http.get(f"/api/v1/jobs/{job['id']}")).json()
    assert job["status"] == "COMPLETED", job["error_log"]
    found = job["result"]["json"]
    assert found["shop"] == "The Shop" and [p["name"] for p in found["products"]] == [
        "Tea",
        "Coffee",
    ]


async def test_firecrawl_py_extracts_one_schema_from_several_pages(
    served: ServedApp, target: TargetServer
) -> None:
    urls = [target.url(f"/title/llm-ex{n}{served.mode}") for n in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the SDK's note on extract
        answer = await asyncio.to_thread(
            _sdk(served).extract, urls, schema=SCHEMA, poll_interval=1, timeout=60
        )
    assert answer.status == "completed", answer
    # Merged: the first page's title, its word count.
    assert answer.data == {"title": f"llm-ex0{served.mode}", "words": 2}
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        missing = await http.get("/v2/extract/00000000-0000-4000-8000-000000000000")
    assert missing.status_code == 404 and missing.json()["success"] is False


async def test_firecrawl_py_extracts_from_the_pages_under_a_wildcard(
    served: ServedApp, site: str
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the SDK's note on extract
        answer = await asyncio.to_thread(
            _sdk(served).extract,
            [f"{site}/docs/*", f"{site}/other"],
            schema=SCHEMA,
            show_sources=True,
            poll_interval=1,
            timeout=60,
        )
    assert answer.status == "completed", answer
    # The crawl's start page answers first (the crawl is listed first), and the crawl kept
    # to /docs: /other is read as the URL listed after it.
    assert answer.data == {"title": "llm-docsroot", "words": 2}
    assert answer.sources is not None
    crawled = [f"{site}/docs/", f"{site}/docs/a", f"{site}/docs/b"]
    assert sorted(answer.sources["urls"][:3]) == crawled
    assert answer.sources["urls"][3:] == [f"{site}/other"]


async def test_an_extracts_invalid_urls_are_those_it_could_not_read(
    served: ServedApp, site: str
) -> None:
    # A URL read under another spelling (the crawl's start normalised, a repeat) is not invalid.
    urls = [f"{site}/docs//*", f"{site}/docs/*", "http://example.com:0/", f"{site}/other"]
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        started = await http.post(
            "/v2/extract", json={"urls": urls, "schema": SCHEMA, "ignoreInvalidURLs": True}
        )
    assert started.status_code == 200, started.text
    assert started.json()["invalidURLs"] == ["http://example.com:0/"]


async def _extract_ended(http: httpx.AsyncClient, version: str, body: dict[str, Any]) -> Any:
    started = await http.post(f"/{version}/extract", json=body)
    assert started.status_code == 200, started.text
    status_url = f"/{version}/extract/{started.json()['id']}"
    status = (await http.get(status_url)).json()
    while status["status"] == "processing":
        await asyncio.sleep(0.1)
        status = (await http.get(status_url)).json()
    return status


async def test_an_extract_over_a_site_fails_when_no_page_answers(
    served: ServedApp, site: str
) -> None:
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        status = await _extract_ended(http, "v1", {"urls": [f"{site}/broken/*"], "schema": SCHEMA})
        gone = await _extract_ended(http, "v2", {"urls": [f"{site}/gone/*"], "prompt": "x"})
        too_many = await http.post(
            "/v2/extract", json={"urls": [f"{site}/s{n}/*" for n in range(6)], "prompt": "x"}
        )
    assert status["status"] == "failed", status
    assert status["error"].startswith("llm_unavailable: the model's server answered 503")
    # A crawl that finds no page: failed with its start page's error.
    assert gone["status"] == "failed" and gone["error"] == "http_404: HTTP 404 Not Found", gone
    assert too_many.status_code == 400 and "at most 5 URLs ending in /*" in too_many.json()["error"]


async def test_firecrawl_py_searches_through_searxng(
    served: ServedApp, searx: tuple[FakeSearxng, str], target: TargetServer
) -> None:
    fc = _sdk(served)
    found = await asyncio.to_thread(fc.search, "tea", limit=12, tbs="qdr:w")
    assert [r.url for r in found.web or []] == [target.url(f"/title/page-{n}") for n in range(12)]
    assert found.web and found.web[0].title == "Result 0" and found.web[0].position == 1
    assert searx[0].requests[-1]["time_range"] == "week"  # two pages read, javascript: dropped

    scraped = await asyncio.to_thread(
        fc.search, "tea", limit=2, scrape_options=v2_scrape_options(formats=["markdown"])
    )
    documents = scraped.web or []
    assert [d.metadata.title for d in documents] == ["page-0", "page-1"]  # type: ignore[union-attr]
    assert all("page-" in (d.markdown or "") for d in documents)  # type: ignore[union-attr]


async def test_search_v1_news_and_native_web_search(
    served: ServedApp, target: TargetServer
) -> None:
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        v1 = await http.post("/v1/search", json={"query": "tea", "limit": 3, "lang": "en"})
        news = await http.post("/v2/search", json={"query": "tea", "sources": ["news"], "limit": 1})
        async with AsyncTaskCrawler(served.base_url) as tc:  # the Python client's method
            native = await tc.web_search(
                "tea", limit=2, formats=["markdown"], exclude_domains=["x.test"]
            )
        down = await http.post("/v2/search", json={"query": "searx-down"})
        html = await http.post("/api/v1/web-search", json={"query": "searx-html"})
        odd = await http.post("/v2/search", json={"query": "tea", "tbs": "sbd:1"})
        bad_domain = await http.post(
            "/api/v1/web-search", json={"query": "tea", "exclude_domains": ["not a domain"]}
        )
    assert v1.status_code == 200 and len(v1.json()["data"]) == 3
    assert v1.json()["data"][0]["description"] == "About result 0"
    assert news.json()["data"]["news"][0]["date"] == "2026-12-01T00:00:00"
    assert [r.url for r in native.results] == [target.url(f"/title/page-{n}") for n in range(2)]
    assert all(r.job_id for r in native.results)
    assert down.status_code == 502 and down.json()["error"] == "the search engine answered 500"
    assert html.status_code == 502 and "json format enabled" in html.json()["detail"]
    assert odd.status_code == 400 and odd.json()["error"].startswith("tbs:")
    # The native API's 422 has FastAPI's shape, as its schema says, naming the field.
    assert bad_domain.status_code == 422
    [error] = bad_domain.json()["detail"]
    assert error["loc"] == ["body"] and error["msg"].startswith("excludeDomains[0]")


async def test_without_a_model_or_engine_a_400_says_how_to_configure(
    sqlite_url: str, target: TargetServer, searx: tuple[FakeSearxng, str]
) -> None:
    """Also: search results are fetched through the address guard (the fake engine lists the
    local target, which a deployment without private networks must not reach)."""
    await upgrade_database(sqlite_url)
    settings = fast_settings(
        database_url=sqlite_url, allow_private_networks=False, searxng_url=searx[1]
    )
    async with running("embedded", settings) as service:
        http = service.client
        summary = await http.post("/v2/scrape", json={"url": target.url(), "formats": ["summary"]})
        prompt = await http.post(
            "/api/v1/jobs",
            json={"url": target.url(), "formats": ["json"], "options": {"json_prompt": "x"}},
        )
        selectors = await http.post(
            "/api/v1/jobs",
            json={"url": target.url(), "formats": ["json"], "options": {"json_schema": PRODUCTS}},
        )
        found = await http.post(
            "/api/v1/web-search", json={"query": "tea", "limit": 1, "formats": ["markdown"]}
        )
        guarded = await service.wait_for(found.json()["results"][0]["job_id"])
        service.services.web_search.engine = None  # as a deployment without an engine
        search = await http.post("/v2/search", json={"query": "tea"})
        native = await http.post("/api/v1/web-search", json={"query": "tea"})
    assert summary.status_code == 400 and "TASKCRAWLER_LLM_URL" in summary.json()["error"]
    assert prompt.status_code == 400 and "TASKCRAWLER_LLM_URL" in prompt.json()["detail"]
    assert selectors.status_code == 201  # a selector schema needs no model
    assert guarded["status"] == "FAILED" and guarded["error_code"] == "blocked_address"
    assert search.status_code == 400 and "TASKCRAWLER_SEARXNG_URL" in search.json()["error"]
    assert native.status_code == 400 and "TASKCRAWLER_SEARXNG_URL" in native.json()["detail"]
