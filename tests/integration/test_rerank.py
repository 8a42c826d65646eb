"""The rerank stage against a local fake ``/rerank`` server that answers in TEI's shape or in
Jina's and Cohere's, and misbehaves: slow, 5xx, not JSON, wrong indices, odd scores. A search
re-scored by it is in the reranker's order; one it failed keeps its own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

import orjson
import pytest
from aiohttp import web

from taskcrawler.domain.chunks import Chunk, EmbeddedChunk, PageChunks, SearchMode, SearchQuery
from taskcrawler.domain.jobs import NewJob
from taskcrawler.rerank import RerankerConfig, RerankFailed, build_reranker
from taskcrawler.service.search import SearchService
from taskcrawler.storage import Storage, open_storage

TEXTS = ["bread and yeast", "bread knife", "yeast bread loaf", "a sourdough bread"]


class FakeReranker:
    """A ``/rerank`` server: by default it prefers shorter passages; ``behaviour`` makes it
    misbehave. It records what it was asked."""

    def __init__(self) -> None:
        self.behaviour = "ok"
        self.requests: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body | {"authorization": request.headers.get("Authorization")})
        passages = body.get("documents") or body.get("texts") or []
        scores = [1.0 / (1 + len(p)) for p in passages]
        if self.behaviour == "slow":
            await asyncio.sleep(2)
        if self.behaviour == "5xx":
            return web.Response(status=503, text="overloaded")
        if self.behaviour == "not json":
            return web.Response(text="<html>oops</html>", content_type="text/html")
        if self.behaviour == "index out of range":
            return web.json_response([{"index": len(passages), "score": 1.0}])
        if self.behaviour == "index twice":
            return web.json_response([{"index": 0, "score": s} for s in scores])
        if self.behaviour == "score not a number":
            return web.json_response([{"index": i, "score": "high"} for i in range(len(scores))])
        if self.behaviour == "huge":
            return web.Response(body=b"[" + b" " * (5 * 1024 * 1024) + b"]")
        if "documents" in body:  # Jina, Cohere, vLLM
            results = [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]
            return web.json_response({"results": sorted(results, key=lambda r: -r["index"])})
        return web.json_response([{"index": i, "score": s} for i, s in enumerate(scores)])


@pytest.fixture(scope="module")
async def fake() -> AsyncIterator[tuple[FakeReranker, str]]:
    server = FakeReranker()
    app = web.Application()
    app.router.add_post("/rerank", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield server, f"http://127.0.0.1:{port}/rerank"
    await runner.cleanup()


@pytest.fixture
async def storage(sqlite_url: str) -> AsyncIterator[Storage]:
    storage = open_storage(sqlite_url)
    [created] = await storage.jobs.create_jobs([NewJob("http://a.test/")], redispatch_after=30)
    chunks = [EmbeddedChunk(Chunk(i, text, (), 3), [1.0, 0.0]) for i, text in enumerate(TEXTS)]
    await storage.chunks.replace(PageChunks(created.job.id, "", None, "m", 2, chunks), "h")
    yield storage
    await storage.close()


def _search(storage: Storage, url: str | None, **config: Any) -> SearchService:
    reranker = None if url is None else build_reranker(RerankerConfig(url, **config))
    return SearchService(cast(Any, None), storage.chunks, cast(Any, None), reranker)


async def _texts(search: SearchService, **query: Any) -> list[str]:
    hits = await search.search(SearchQuery("", "bread", mode=SearchMode.KEYWORD, **query))
    return [hit.text for hit in hits]


async def test_results_come_in_the_rerankers_order_in_either_shape(
    storage: Storage, fake: tuple[FakeReranker, str]
) -> None:
    server, url = fake
    server.behaviour = "ok"
    plain = await _texts(_search(storage, None))
    shortest_first = sorted(TEXTS, key=len)
    tei = _search(storage, url)
    assert await _texts(tei) == shortest_first
    assert await _texts(tei, k=2) == shortest_first[:2]
    assert await _texts(tei, rerank=False) == plain
    asked = server.requests[-2]  # the reranked k=2 search asked about every candidate
    assert sorted(asked["texts"]) == sorted(TEXTS)
    assert "model" not in asked and asked["authorization"] is None
    jina = _search(storage, url, model="jina-reranker-v2", api_key="secret")
    assert await _texts(jina) == shortest_first
    asked = server.requests[-1]
    assert asked["model"] == "jina-reranker-v2" and asked["top_n"] == len(TEXTS)
    assert asked["authorization"] == "Bearer secret"
    await cast(Any, tei.reranker).close()
    await cast(Any, jina.reranker).close()


@pytest.mark.parametrize(
    "behaviour",
    [
        "slow",
        "5xx",
        "not json",
        "index out of range",
        "index twice",
        "score not a number",
        "huge",
    ],
)
async def test_a_reranker_that_misbehaves_leaves_the_order_as_it_was(
    storage: Storage, fake: tuple[FakeReranker, str], behaviour: str
) -> None:
    server, url = fake
    server.behaviour = behaviour
    plain = await _texts(_search(storage, None))
    search = _search(storage, url, timeout_seconds=0.5)
    with pytest.raises(RerankFailed):
        await cast(Any, search.reranker).rerank("bread", TEXTS)
    assert await _texts(search) == plain
    await cast(Any, search.reranker).close()


async def test_an_unreachable_reranker_leaves_the_order_as_it_was(storage: Storage) -> None:
    plain = await _texts(_search(storage, None))
    search = _search(storage, "http://127.0.0.1:9/rerank", timeout_seconds=0.5)
    assert await _texts(search) == plain
    await cast(Any, search.reranker).close()


def test_scores_are_read_by_index_from_either_answer() -> None:
    from taskcrawler.rerank.http import scores_of

    tei = [{"index": 1, "score": 0.2}, {"index": 0, "score": 0.9}]
    cohere = {"results": [{"index": 1, "relevance_score": 0.2}, {"index": 0, "relevance_score": 1}]}
    assert scores_of(tei, 2) == [0.9, 0.2]
    assert scores_of(cohere, 2) == [1.0, 0.2]
    for bad in ([], {"results": None}, [1, 2], [{"index": True, "score": 1}] * 2, "x"):
        with pytest.raises(RerankFailed):
            scores_of(orjson.loads(orjson.dumps(bad)), 2)
