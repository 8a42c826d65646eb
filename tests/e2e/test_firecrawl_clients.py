"""Firecrawl's own clients, as their users run them, against TaskCrawler in both modes:
firecrawl-py 4.54.0 and 4.55.0 (the v2 client, with its defaults and with the options users
send, page actions rendered by Debian's chromium, extract through a local fake model),
``@mendable/firecrawl-js`` 4.42.0 on Node, and Firecrawl's MCP server ``firecrawl-mcp``
3.26.0 driven by the ``mcp`` Python client, and the RAG loaders that wrap firecrawl-py:
LangChain's ``FireCrawlLoader`` and LlamaIndex's ``FireCrawlWebReader``. A local site serves
the pages, PDFs included; a local receiver gets the webhooks; a local fake SearXNG answers
searches. Keys are not required, so the SDKs' placeholder key is the anonymous tenant, as a
self-hoster's first try would have it.

One served TaskCrawler per mode for the whole module; what each client did is asserted from
what it printed, from what the site saw, and from what the receiver got."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from taskcrawler.browser.renderer import png_size
from taskcrawler.domain.change_tracking import changed_lines
from tests.e2e.harness import fast_settings
from tests.support.fake_services import FakeLLM, FakeSearxng, fake_llm, fake_searxng
from tests.support.firecrawl_clients import (
    NODE_MODULES,
    ServedApp,
    js_sdk,
    node_binary,
    python_sdk,
    rag_loader,
    require_installed,
    served_app,
)
from tests.support.firecrawl_site import PDF_TITLE, FirecrawlSite
from tests.support.services import DatabasePool, backing_store
from tests.support.webhook_receiver import Receiver, webhook_receiver

WEBHOOK_SECRET = "whsec-firecrawl-clients"
SECRET_HEADER_VALUE = "s3cret-value"
pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirecrawlSite]:
    require_installed()
    served = FirecrawlSite(tmp_path_factory.mktemp("firecrawl-site")).start()
    yield served
    served.close()


@pytest.fixture(scope="module")
async def receiver() -> AsyncIterator[Receiver]:
    async with webhook_receiver() as running:
        yield running


#: A render's deadline here. The three clients' scrapes with actions (a full-page screenshot and a
#: PDF each) render at once, and on a loaded machine that took longer than the default 30 s. The
#: scenarios ask for a longer wait than this (``ACTIONS_TIMEOUT_MS``) so the render's own
#: deadline, not the request's, is what bounds them.
RENDER_SECONDS = 90.0


@pytest.fixture(scope="module")
async def model() -> AsyncIterator[tuple[FakeLLM, str]]:
    async with fake_llm() as running_model:
        yield running_model


@pytest.fixture(scope="module")
async def searx(site: FirecrawlSite) -> AsyncIterator[tuple[FakeSearxng, str]]:
    async with fake_searxng(site.url("/")) as running_engine:
        yield running_engine


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
    directory = tmp_path_factory.mktemp("firecrawl-clients")
    async with backing_store(mode, directory, pg_pool, redis_url) as store:
        settings = fast_settings(
            **store,
            max_retries=0,
            fetch_timeout_seconds=10.0,
            render_timeout_seconds=RENDER_SECONDS,
            webhook_secret=WEBHOOK_SECRET,
            max_body_bytes=2 * 1024 * 1024,
            webhook_retry_base_seconds=0.05,
            webhook_retry_max_seconds=0.2,
            llm_url=model[1],
            llm_model="fake",
            llm_max_retries=0,
            searxng_url=searx[1],
        )
        async with served_app(mode, settings) as app:
            yield app


def _config(served: ServedApp, site: FirecrawlSite, receiver: Receiver) -> dict[str, str]:
    return {
        "mode": served.mode,
        "api_url": served.base_url,
        "site": site.url(""),
        "tls": site.tls_url(""),
        "hook": receiver.url("x").rsplit("/", 1)[0],
    }


@pytest.fixture(scope="module")
async def client_runs(served: ServedApp, site: FirecrawlSite, receiver: Receiver) -> dict[str, Any]:
    """What each SDK printed, their scenarios run at once (each in a process of its own), so
    the module costs the slowest of them, not their sum."""
    config = _config(served, site, receiver)
    old, new, js = await asyncio.gather(
        python_sdk("4.54.0", config), python_sdk("4.55.0", config), js_sdk(config)
    )
    return {"4.54.0": old, "4.55.0": new, "js": js}


#: What the fake model reads from the site's article (no ``llm-`` word in it: untitled).
EXTRACTED = {"title": "untitled", "words": 2}


async def _check_actions(scraped: dict[str, Any], served: ServedApp) -> None:
    """A scrape whose actions ran a script, took a full-page screenshot and a PDF, and read
    the DOM: Firecrawl's actions object, its files at URLs the jobs API serves."""
    assert "River bridge repairs" in scraped["markdown"], scraped
    acted = scraped["actions"]
    assert acted["javascriptReturns"] == [{"type": "string", "value": "changed"}], acted
    assert "River bridge repairs" in acted["scrapes"][0]["html"]
    [shot], [pdf] = acted["screenshots"], acted["pdfs"]
    assert shot.startswith(f"{served.base_url}/api/v1/jobs/") and pdf.startswith(served.base_url)
    async with httpx.AsyncClient(timeout=30) as http:
        picture, printed = await http.get(shot), await http.get(pdf)
    assert picture.status_code == 200 and png_size(picture.content)[0] == 1280
    assert printed.headers["content-type"] == "application/pdf"
    assert printed.content.startswith(b"%PDF-")


def _signed_by_firecrawl(received: Any) -> bool:
    expected = hmac.new(WEBHOOK_SECRET.encode(), received.body, hashlib.sha256).hexdigest()
    return received.headers.get("X-Firecrawl-Signature") == f"sha256={expected}"


@pytest.mark.parametrize("version", ["4.54.0", "4.55.0"])
async def test_firecrawl_py_with_its_defaults_and_its_options(
    version: str,
    client_runs: dict[str, Any],
    served: ServedApp,
    site: FirecrawlSite,
    receiver: Receiver,
) -> None:
    out = client_runs[version]
    assert out["version"] == version
    raised = {
        name: call for name, call in out.items() if isinstance(call, dict) and "raised" in call
    }
    assert set(raised) <= {"scrape_tls_defaults"}, raised

    defaults = out["scrape_defaults"]
    assert "River bridge repairs" in defaults["markdown"], defaults
    assert "Footer words" not in defaults["markdown"] and "About us" not in defaults["markdown"]

    whole = out["scrape_whole_page"]
    assert "Footer words" in whole["markdown"] and "About us" in whole["markdown"], whole
    assert "data:image/png;base64," in whole["markdown"]  # removeBase64Images: false
    assert "<script" not in whole["html"] and "River bridge repairs" in whole["html"]
    assert "<script>" in whole["raw_html"]  # rawHtml stays the page as fetched
    assert site.url("/img/bridge.jpg") in whole["images"]
    assert site.url("/about") in whole["links"]

    tags = out["scrape_tags"]
    assert "River bridge repairs" in tags["markdown"] and "Buy our widgets" not in tags["markdown"]
    assert "Footer words" not in tags["markdown"] and "<figure" not in tags["html"]

    # Headers reach the page's host, Accept-Language follows location.languages.
    asked = [seen for seen in site.requests_to("/headers") if seen.host == "127.0.0.1"]
    mine = [seen for seen in asked if seen.headers.get("X-Secret") == SECRET_HEADER_VALUE]
    assert mine and mine[-1].headers.get("Cookie") == "session=abc123", asked
    assert mine[-1].headers.get("Accept-Language") == "de-DE,en;q=0.9"
    # … and never the host a redirect leads to.
    away = [seen for seen in site.requests_to("/headers") if seen.host == "localhost"]
    assert away and all("X-Secret" not in seen.headers for seen in away)
    assert "Headers" in (out["scrape_redirect"].get("markdown") or ""), out["scrape_redirect"]

    # 4.54.0 sends skipTlsVerification: true by default; 4.55.0 verifies unless told not to.
    tls_defaults = out["scrape_tls_defaults"]
    if version == "4.54.0":
        assert "River bridge repairs" in (tls_defaults.get("markdown") or ""), tls_defaults
    else:
        assert "raised" in tls_defaults and "tls" in tls_defaults["raised"].lower(), tls_defaults
    assert "River bridge repairs" in out["scrape_tls_skipped"]["markdown"]

    pdf = out["scrape_pdf"]
    assert pdf["markdown"].startswith(f"# {PDF_TITLE}"), pdf
    assert "third page lists the risks" in pdf["markdown"]
    one_page = out["scrape_pdf_one_page"]
    assert "Revenue grew" in one_page["markdown"] and "third page" not in one_page["markdown"]

    assert "River bridge repairs" in out["scrape_block_ads"]["markdown"]
    await _check_actions(out["scrape_actions"], served)
    extracted = out["extract"]
    assert extracted["status"] == "completed" and extracted["data"] == EXTRACTED, extracted

    # changeTracking: this key's previous scrape of the page, from the run history.
    for page, second in [("tick", "changed"), ("static", "same"), ("once", "removed")]:
        first_seen = out[f"track_{page}_1"]["change_tracking"]
        assert first_seen["changeStatus"] == "new" and first_seen["previousScrapeAt"] is None
        again = out[f"track_{page}_2"]["change_tracking"]
        assert again["changeStatus"] == second and again["previousScrapeAt"], (page, again)
    tracked = out["track_tick_2"]["change_tracking"]
    removed, added = changed_lines(tracked)  # the site counts its versions across the modes
    assert removed.startswith("-This page is at version") and added.startswith("+This page")
    assert removed in tracked["diff"]["text"] and added in tracked["diff"]["text"]

    crawl = out["crawl"]
    assert crawl["status"] == "completed" and crawl["completed"] == 5, crawl
    assert all("crawled page number" in doc["markdown"] for doc in crawl["documents"])
    batch = out["batch"]
    assert batch["status"] == "completed" and batch["completed"] == 2, batch
    run_name = f"{served.mode}-{version}"
    # delay: 1 s between the starts of the crawl's requests, as the service schedules them. The
    # site sees each start a little after it was made, later when the machine is busy, so one
    # gap seen there may be shorter than the delay by that lateness; on average they are not.
    # maxConcurrency: 1 page at a time, though the site answers slowly and the deployment allows
    # 8 per host.
    starts = [seen.at for seen in site.runs(f"delay-{run_name}")]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(starts) == 5 and min(gaps) >= 0.75 and sum(gaps) / len(gaps) >= 0.95, gaps
    one = out["crawl_one_at_a_time"]
    assert one["status"] == "completed" and one["completed"] == 5, one
    assert site.most_in_flight[f"one-{run_name}"] == 1

    assert out["concurrency"]["max_concurrency"] >= 1
    assert out["credit_usage"]["remaining_credits"] > 0
    assert out["token_usage"]["remaining_tokens"] > 0
    assert out["queue_status"]["jobs_in_queue"] >= 0
    # The other clients run at once with the same anonymous caller: only this run's crawls,
    # all finished, are known to be inactive.
    active = out["active_crawls"]["crawls"]
    ours = (run_name, f"c=py-{version}")
    assert not [crawl for crawl in active if any(mark in crawl["url"] for mark in ours)], active
    assert out["crawl_errors"]["errors"] == []

    crawl_hooks = await receiver.wait_for(f"crawl-{run_name}", 7, within=30)
    types = [json.loads(hook.body)["type"] for hook in crawl_hooks]
    assert types[0] == "crawl.started" and types[-1] == "crawl.completed", types
    assert types.count("crawl.page") == 5
    for hook in crawl_hooks:
        body = json.loads(hook.body)
        assert body["metadata"] == {"run": run_name} and body["id"] == crawl["id"]
        assert hook.headers.get("X-Receiver-Token") == "rt-1" and _signed_by_firecrawl(hook)
    pages = [json.loads(hook.body) for hook in crawl_hooks if b"crawl.page" in hook.body]
    assert all("crawled page number" in page["data"][0]["markdown"] for page in pages)
    batch_hooks = await receiver.wait_for(f"batch-{run_name}", 3, within=30)
    types = [json.loads(hook.body)["type"] for hook in batch_hooks]
    assert types == ["batch_scrape.page", "batch_scrape.page", "batch_scrape.completed"]


async def test_firecrawl_js_with_its_defaults_and_its_options(
    client_runs: dict[str, Any], served: ServedApp, site: FirecrawlSite, receiver: Receiver
) -> None:
    out = client_runs["js"]
    assert out["version"] == "4.42.0"
    assert "River bridge repairs" in out["scrape_defaults"]["markdown"], out
    whole = out["scrape_whole_page"]
    assert "Footer words" in whole["markdown"] and "<script>" in whole["rawHtml"], whole
    assert site.url("/img/bridge.jpg") in whole["images"]
    assert "Buy our widgets" not in out["scrape_tags"]["markdown"]
    assert out["scrape_pdf"]["markdown"].startswith(f"# {PDF_TITLE}")
    assert "River bridge repairs" in out["scrape_tls_skipped"]["markdown"]
    await _check_actions(out["scrape_actions"], served)
    extracted = out["extract"]
    assert extracted["status"] == "completed" and extracted["data"] == EXTRACTED, extracted
    assert out["crawl"]["status"] == "completed" and out["crawl"]["completed"] == 3, out["crawl"]
    assert out["batch"]["status"] == "completed", out["batch"]
    assert out["activeCrawls"]["success"] is True
    assert out["concurrency"]["maxConcurrency"] >= 1
    assert out["creditUsage"]["remainingCredits"] > 0
    assert out["crawlErrors"]["errors"] == []
    assert "https://" not in json.dumps(out["mapped"]) and len(out["mapped"]["links"]) >= 2
    hooks = await receiver.wait_for(f"crawl-js-{served.mode}", 4, within=30)
    types = [json.loads(hook.body)["type"] for hook in hooks]
    assert types == ["crawl.page"] * 3 + ["crawl.completed"], types


@pytest.fixture(scope="module")
async def loader_runs(served: ServedApp, site: FirecrawlSite) -> dict[str, Any]:
    """What each RAG loader returned in each of its modes (scrape, crawl, map, extract through
    the fake model, search through the fake SearXNG), the two run at once."""
    config = {"api_url": served.base_url, "site": site.url("")}
    langchain, llamaindex = await asyncio.gather(
        rag_loader("langchain", config), rag_loader("llamaindex", config)
    )
    return {"langchain": langchain, "llamaindex": llamaindex}


@pytest.mark.parametrize("loader", ["langchain", "llamaindex"])
async def test_rag_loaders_with_their_defaults(
    loader: str, loader_runs: dict[str, Any], site: FirecrawlSite
) -> None:
    out = loader_runs[loader]
    raised = {mode: docs for mode, docs in out.items() if isinstance(docs, dict)}
    assert not raised, raised

    [scraped] = out["scrape"]
    assert "River bridge repairs" in scraped["text"], scraped
    assert "Footer words" not in scraped["text"]  # onlyMainContent, Firecrawl's default
    assert scraped["metadata"]["title"] == "The Article", scraped["metadata"]
    assert scraped["metadata"]["source_url"] == site.url(f"/article?{loader}")

    crawled = {doc["metadata"]["source_url"]: doc for doc in out["crawl"]}
    # The pages link back to the first one without its query: a page of its own.
    pages = [site.url(f"/crawl/{n}") for n in range(site.crawl_pages + 1)]
    assert set(crawled) == {site.url(f"/crawl/0?{loader}"), *pages}, crawled
    for url, doc in crawled.items():
        n = url.rsplit("/", 1)[-1].split("?")[0]
        assert f"This is crawled page number {n}," in doc["text"], doc
        assert doc["metadata"]["title"] == f"Crawl {n}", doc["metadata"]

    # A map's Document is a link found on the page: its URL as the text (LlamaIndex's text is a
    # link's title first, and map's links have none), and in LlamaIndex's metadata.
    start = site.url(f"/crawl/0?map-{loader}")
    assert {doc["text"] for doc in out["map"]} == {start, *pages[1:]}, out["map"]
    if loader == "llamaindex":
        assert all(doc["metadata"]["url"] == doc["text"] for doc in out["map"]), out["map"]

    # Extract's Document is the SDK's answer as text: the fake model's reading of the article.
    [extracted] = out["extract"]
    assert "status='completed'" in extracted["text"], extracted
    assert f"data={EXTRACTED}" in extracted["text"], extracted

    # Search's Documents are the results (Firecrawl's default limit, 5), not scraped: LangChain
    # reads a result's description, LlamaIndex its title.
    found = out["search"]
    assert [doc["metadata"]["url"] for doc in found] == [
        site.url(f"/title/page-{n}") for n in range(5)
    ], found
    assert [doc["metadata"]["title"] for doc in found] == [f"Result {n}" for n in range(5)]
    shown = "About result" if loader == "langchain" else "Result"
    assert [doc["text"] for doc in found] == [f"{shown} {n}" for n in range(5)], found

    if loader == "llamaindex":  # and the crawl its README shows: formats and a limit
        readme = out["crawl_readme"]
        assert len(readme) == 3 and all("crawled page number" in d["text"] for d in readme), readme


async def test_firecrawl_mcp_server_scrapes_through_taskcrawler(
    served: ServedApp, site: FirecrawlSite
) -> None:
    # Imported here: the MCP SDK costs about 0.7 s of CPU to import, and every test process
    # imports this module to collect it.
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    server = StdioServerParameters(
        command=str(node_binary()),
        args=[str(NODE_MODULES / "firecrawl-mcp" / "dist" / "index.js")],
        env={
            "FIRECRAWL_API_URL": served.base_url,
            "FIRECRAWL_API_KEY": "fc-YOUR-API-KEY",
            "PATH": "/usr/bin:/bin",
        },
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert {"firecrawl_scrape", "firecrawl_map", "firecrawl_crawl"} <= tools, tools
        scraped = await session.call_tool(
            "firecrawl_scrape", {"url": site.url("/article"), "formats": ["markdown"]}
        )
        text = " ".join(getattr(item, "text", "") for item in scraped.content)
        assert not scraped.is_error and "River bridge repairs" in text, text
        pdf = await session.call_tool("firecrawl_scrape", {"url": site.url("/doc.pdf")})
        assert PDF_TITLE in " ".join(getattr(item, "text", "") for item in pdf.content)
        mapped = await session.call_tool("firecrawl_map", {"url": site.url("/crawl/0")})
        assert site.url("/crawl/1") in " ".join(getattr(i, "text", "") for i in mapped.content)


async def test_bad_options_are_400s_naming_them_and_reach_no_page(
    served: ServedApp, site: FirecrawlSite
) -> None:
    url = site.url("/article?bad-input")
    bad: list[tuple[dict[str, Any], str]] = [
        ({"includeTags": ["p:nth-child(2)"]}, "includeTags[0]"),
        ({"excludeTags": ["div ~ p"]}, "excludeTags[0]"),
        ({"headers": {"Host": "evil.test"}}, "headers['Host']"),
        ({"headers": {"Content-Length": "5"}}, "headers['Content-Length']"),
        ({"headers": {"X-Evil": "a\r\nInjected: yes"}}, "headers['X-Evil']"),
        ({"headers": {"Bad Name": "x"}}, "headers['Bad Name']"),
        ({"headers": {f"X-H{n}": "v" for n in range(21)}}, "headers"),
        ({"location": {"country": "Germany"}}, "location.country"),
        ({"location": {"languages": ["en_US!"]}}, "location.languages[0]"),
        ({"parsers": ["docx"]}, "parsers[0]"),
        ({"parsers": [{"type": "pdf", "maxPages": 5000}]}, "maxPages"),
        ({"parsers": [{"type": "pdf", "mode": "ocr"}]}, "parsers[0].mode"),
        ({"formats": [{"type": "changeTracking", "modes": ["word-diff"]}]}, "modes"),
    ]
    before = len(site.seen)
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        for body, named in bad:
            refused = await http.post("/v2/scrape", json={"url": url, **body})
            assert refused.status_code == 400, (body, refused.text)
            assert named in refused.json()["error"], (body, refused.json())
        for crawl, named in [
            ({"delay": -1}, "delay"),
            ({"webhook": {"url": "ftp://example.com/"}}, "webhook"),
            ({"webhook": {"url": "http://example.com/", "headers": {"Host": "x"}}}, "Host"),
        ]:
            refused = await http.post("/v2/crawl", json={"url": url, **crawl})
            assert refused.status_code == 400 and named in refused.json()["error"], refused.text
    await asyncio.sleep(0.2)
    assert len(site.seen) == before  # nothing of it reached the site

    # A document past the limits (the body limit, one PDFium cannot open) is a 400 too.
    async with httpx.AsyncClient(base_url=served.base_url, timeout=60) as http:
        for path, named in [("/huge.pdf", "too_large"), ("/broken.pdf", "unreadable_document")]:
            refused = await http.post("/v2/scrape", json={"url": site.url(path)})
            assert refused.status_code == 400 and named in refused.json()["error"], refused.text


async def test_request_headers_are_never_shown_back(served: ServedApp, site: FirecrawlSite) -> None:
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        scraped = await http.post(
            "/v2/scrape",
            json={
                "url": site.url("/crawl/3?never-shown"),
                "headers": {"Authorization": "Bearer page-token-42"},
            },
        )
        assert scraped.status_code == 200, scraped.text
        job_id = scraped.json()["data"]["metadata"]["scrapeId"]
        job = await http.get(f"/api/v1/jobs/{job_id}")
        listed = await http.get("/api/v1/jobs", params={"limit": 200})
        exported = await http.get("/api/v1/export", params={"format": "jsonl"})
    for answer in (scraped, job, listed, exported):
        assert answer.status_code == 200 and "page-token-42" not in answer.text
    seen = site.requests_to("/crawl/3")
    assert any(s.headers.get("Authorization") == "Bearer page-token-42" for s in seen)


async def test_the_native_api_takes_the_same_options(
    served: ServedApp, site: FirecrawlSite
) -> None:
    url = site.url("/article?native")
    asked = {
        "url": url,
        "formats": ["markdown", "clean_html", "images"],
        "options": {"exclude_tags": [".advert"], "only_main_content": False, "delay": 0.5},
    }
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        created = await http.post("/api/v1/jobs", json=asked)
        assert created.status_code == 201, created.text
        job = await _finished(http, created.json()["id"])
        markdown = (await http.get(f"/api/v1/jobs/{job['id']}/content?format=markdown")).text
        assert "Footer words" in markdown and "Buy our widgets" not in markdown
        cleaned = await http.get(f"/api/v1/jobs/{job['id']}/content?format=clean_html")
        assert "<footer" in cleaned.text and "<script" not in cleaned.text
        images = await http.get(f"/api/v1/jobs/{job['id']}/content?format=images")
        assert images.text.split() == [site.url("/img/bridge.jpg")]
        # Without options: the job as it is; with others: the same job, a new run.
        again = await http.post("/api/v1/jobs", json={"url": url})
        assert again.status_code == 200 and again.json()["run_count"] == job["run_count"]
        other = await http.post("/api/v1/jobs", json={**asked, "options": {"include_tags": ["h1"]}})
        assert other.json()["id"] == job["id"] and other.json()["run_count"] == job["run_count"] + 1
        refused = await http.post(
            "/api/v1/jobs", json={"url": url, "options": {"headers": {"Host": "x"}}}
        )
        assert refused.status_code == 422 and "headers['Host']" in refused.text


async def _finished(http: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    for _ in range(300):
        job: dict[str, Any] = (await http.get(f"/api/v1/jobs/{job_id}")).json()
        if job["status"] in ("COMPLETED", "FAILED"):
            return job
        await asyncio.sleep(0.05)
    raise AssertionError(f"job {job_id} not finished")
