"""Embedders: the OpenAI-compatible one against a local fake server, failures included; the
bundled WordLlama model offline."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from taskcrawler.embed import EmbedderConfig, EmbeddingFailed, build_embedder
from taskcrawler.embed.openai import vectors_of as openai_vectors
from tests.support.fake_services import FakeEmbeddings, fake_embeddings


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeEmbeddings, str]]:
    async with fake_embeddings() as served:
        yield served


def vars_of(config: EmbedderConfig) -> dict[str, Any]:
    return {name: getattr(config, name) for name in config.__dataclass_fields__}


def _config(url: str, **overrides: Any) -> EmbedderConfig:
    values: dict[str, Any] = {
        "kind": "openai",
        "url": url,
        "model": "tiny",
        "api_key": "sk-test",
        "batch_size": 2,
        "retry_base_seconds": 0.001,
        "max_retries": 2,
        "timeout_seconds": 2.0,
    }
    return EmbedderConfig(**(values | overrides))


async def _embed(url: str, texts: list[str], **overrides: Any) -> list[list[float]]:
    embedder = build_embedder(_config(url, **overrides))
    try:
        return await embedder.embed(texts)
    finally:
        await embedder.close()


async def test_openai_batches_and_returns_unit_vectors_in_order(
    fake: tuple[FakeEmbeddings, str],
) -> None:
    server, url = fake
    vectors = await _embed(url, ["a", "bbb", "cc", "dddd", "e"])
    assert [len(batch["input"]) for batch in server.requests] == [2, 2, 1]
    assert server.authorizations == ["Bearer sk-test"] * 3
    assert {request["model"] for request in server.requests} == {"tiny"}
    for text, vector in zip(["a", "bbb", "cc", "dddd", "e"], vectors, strict=True):
        norm = math.sqrt(len(text) ** 2 + 25)
        assert vector == pytest.approx([len(text) / norm, 3 / norm, 4 / norm])


async def test_openai_puts_each_purposes_prefix_before_its_texts(
    fake: tuple[FakeEmbeddings, str],
) -> None:
    server, url = fake
    config = _config(url, query_prefix="query: ", document_prefix="passage: ")
    embedder = build_embedder(config)
    try:
        await embedder.embed(["tides", "moon"])
        await embedder.embed(["why tides"], purpose="query")
    finally:
        await embedder.close()
    assert [request["input"] for request in server.requests] == [
        ["passage: tides", "passage: moon"],
        ["query: why tides"],
    ]
    # Vectors made with other prefixes are another space: searches never compare them.
    assert embedder.model.startswith("openai/tiny+prefixes-")
    assert embedder.model != build_embedder(_config(url, query_prefix="query:")).model
    assert build_embedder(_config(url)).model == "openai/tiny"


async def test_openai_sends_queries_with_the_query_model(
    fake: tuple[FakeEmbeddings, str],
) -> None:
    server, url = fake
    embedder = build_embedder(_config(url, model="e5-passage", query_model="e5-query"))
    try:
        await embedder.embed(["tides", "moon", "sun"])
        await embedder.embed(["why tides"], purpose="query")
    finally:
        await embedder.close()
    assert [(request["model"], request["input"]) for request in server.requests] == [
        ("e5-passage", ["tides", "moon"]),
        ("e5-passage", ["sun"]),
        ("e5-query", ["why tides"]),
    ]
    # The query model embeds queries into the documents' space: stored chunks stay current.
    assert embedder.model == build_embedder(_config(url, model="e5-passage")).model


async def test_a_query_model_the_server_refuses_fails_the_query_for_good(
    fake: tuple[FakeEmbeddings, str],
) -> None:
    server, url = fake
    embedder = build_embedder(_config(url, model="e5-passage", query_model="e5-typo"))
    server.script = ["ok", "404"]
    try:
        assert len(await embedder.embed(["tides"])) == 1
        with pytest.raises(EmbeddingFailed, match="answered 404") as caught:
            await embedder.embed(["why tides"], purpose="query")
    finally:
        await embedder.close()
    assert not caught.value.transient
    assert [request["model"] for request in server.requests] == ["e5-passage", "e5-typo"]


@pytest.mark.parametrize("failure", ["429", "500", "503"])
async def test_openai_retries_throttling_and_server_errors(
    fake: tuple[FakeEmbeddings, str], failure: str
) -> None:
    server, url = fake
    server.script = [failure, failure]
    assert len(await _embed(url, ["x"])) == 1
    assert len(server.requests) == 3


async def test_openai_gives_up_after_its_retries_as_transient(
    fake: tuple[FakeEmbeddings, str],
) -> None:
    server, url = fake
    server.script = ["500"] * 10
    with pytest.raises(EmbeddingFailed, match="answered 500") as caught:
        await _embed(url, ["x"])
    assert caught.value.transient
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    ("answer", "message"),
    [("400", "answered 400"), ("short", "asked for 2"), ("empty", "empty or non-finite")],
)
async def test_openai_refuses_bad_requests_and_bad_answers_for_good(
    fake: tuple[FakeEmbeddings, str], answer: str, message: str
) -> None:
    server, url = fake
    server.script = [answer]
    with pytest.raises(EmbeddingFailed, match=message) as caught:
        await _embed(url, ["x", "y"])
    assert not caught.value.transient
    assert len(server.requests) == 1


async def test_openai_times_out(fake: tuple[FakeEmbeddings, str]) -> None:
    server, url = fake
    server.script = ["slow", "slow"]
    with pytest.raises(EmbeddingFailed, match="TimeoutError") as caught:
        await _embed(url, ["x"], timeout_seconds=0.2, max_retries=1)
    assert caught.value.transient


async def test_openai_unreachable_server_is_transient() -> None:
    with pytest.raises(EmbeddingFailed) as caught:
        await _embed("http://127.0.0.1:9/v1", ["x"], max_retries=0)
    assert caught.value.transient


async def test_a_failure_names_no_credentials_or_error_text_of_the_server() -> None:
    # The message is the failed job's error, which the API shows to whoever submitted it.
    with pytest.raises(EmbeddingFailed) as caught:
        await _embed("http://operator:s3cret@127.0.0.1:9/v1", ["x"], max_retries=0, api_key=None)
    said = str(caught.value)
    assert "s3cret" not in said and "Connect call failed" not in said
    assert said.startswith("http://127.0.0.1:9/v1/embeddings: ClientConnectorError")


@pytest.mark.parametrize("missing", [{"url": None}, {"model": None}, {"kind": "nope"}])
def test_an_embedder_without_what_it_needs_is_refused(missing: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"EMBEDDER|unknown"):
        build_embedder(
            _config("http://x/v1")
            if not missing
            else EmbedderConfig(**(vars_of(_config("http://x/v1")) | missing))
        )


async def test_wordllama_loads_offline_and_ranks_by_meaning() -> None:
    embedder = build_embedder(EmbedderConfig())
    try:
        query, near, far = await embedder.embed(
            ["how do I bake bread", "baking a loaf of bread at home", "stock market interest rates"]
        )
    finally:
        await embedder.close()
    assert embedder.model == "wordllama/l2_supercat-256"
    assert len(query) == 256
    assert sum(x * x for x in query) == pytest.approx(1.0, abs=1e-4)

    def dot(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert dot(query, near) > dot(query, far)


async def test_embedding_in_its_thread_leaves_the_event_loop_free() -> None:
    """While a big batch embeds, the loop keeps running other tasks (ticks counted, not timed)."""
    embedder = build_embedder(EmbedderConfig())
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    try:
        await embedder.embed(["warm up"])
        task = asyncio.create_task(ticker())
        await embedder.embed([f"sentence {n} about things " * 50 for n in range(400)])
        stop.set()
        await task
    finally:
        await embedder.close()
    assert ticks > 10


Factory = Callable[[], None]


@pytest.mark.parametrize(
    "data",
    [
        # Two answers for the first text, none for the second: the vectors would be stored
        # against the wrong chunks.
        [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 0, "embedding": [0.0, 1.0]}],
        [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 7, "embedding": [0.0, 1.0]}],
        [{"index": 0, "embedding": [1.0, 0.0]}, {"index": True, "embedding": [0.0, 1.0]}],
        # A string is iterable: its digits would pass for a vector's numbers.
        [{"index": 0, "embedding": "12"}, {"index": 1, "embedding": [0.0, 1.0]}],
        [{"index": 0, "embedding": [True, False]}, {"index": 1, "embedding": [0.0, 1.0]}],
        [{"index": 0, "embedding": {"1": 2}}, {"index": 1, "embedding": [0.0, 1.0]}],
        # Finite, yet nothing to compare by: a zero vector, or one whose norm overflows.
        [{"index": 0, "embedding": [0.0, 0.0]}, {"index": 1, "embedding": [0.0, 1.0]}],
    ],
)
def test_openai_refuses_answers_that_do_not_give_each_text_one_vector(
    data: list[dict[str, Any]],
) -> None:
    with pytest.raises(EmbeddingFailed) as caught:
        openai_vectors({"data": data}, 2)
    assert not caught.value.transient


def test_openai_keeps_the_direction_of_vectors_too_large_to_square() -> None:
    [vector] = openai_vectors({"data": [{"index": 0, "embedding": [3e200, 4e200]}]}, 1)
    assert vector == pytest.approx([0.6, 0.8])
