"""Any OpenAI-compatible embeddings server: OpenAI, Ollama, TEI, vLLM, LiteLLM.

``POST {url}/embeddings`` with ``{"model", "input": [...]}``, in batches; 429 and 5xx answers
and dropped connections are tried again with exponential backoff (``Retry-After`` honoured), up
to ``max_retries`` times, each request under ``timeout_seconds``. The server is the operator's
own choice, so no address guard: but its answers are checked (count, dimensions, finite numbers)
and bounded in size.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Sequence
from typing import Any

import aiohttp
import orjson
from yarl import URL

from taskcrawler.common.http_json import (
    AnswerNotJSON,
    AnswerTooLarge,
    read_json,
    retry_after_seconds,
)
from taskcrawler.domain.backoff import backoff_delay
from taskcrawler.embed.base import EmbedderConfig, EmbeddingFailed, Purpose, Vector, normalized

#: An answer bigger than this is refused (64 MiB: 2,000 inputs of 3,072 floats as JSON fit).
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
_RETRIED_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class OpenAIEmbedder:
    def __init__(self, config: EmbedderConfig, *, rng: random.Random | None = None) -> None:
        if not config.url:
            raise ValueError("the openai embedder needs TASKCRAWLER_EMBEDDER_URL")
        if not config.model:
            raise ValueError("the openai embedder needs TASKCRAWLER_EMBEDDER_MODEL")
        self._config = config
        self._endpoint = config.url.rstrip("/") + "/embeddings"
        #: The endpoint as failures name it: without the credentials a URL may hold.
        self._shown = str(URL(self._endpoint).with_user(None).with_query(None))
        self._model = config.model
        # The vectors' space is the documents' model: a query model only says how the same
        # server embeds a query for that space.
        self._query_model = config.query_model or config.model
        self._rng = rng or random.Random()
        self._session: aiohttp.ClientSession | None = None

    @property
    def model(self) -> str:
        return self._config.space(f"openai/{self._model}")

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            headers = {"Content-Type": "application/json"}
            if self._config.api_key:
                headers["Authorization"] = f"Bearer {self._config.api_key}"
            self._session = aiohttp.ClientSession(
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=self._config.timeout_seconds),
            )
        return self._session

    async def embed(self, texts: Sequence[str], *, purpose: Purpose = "document") -> list[Vector]:
        inputs = self._config.prefixed(texts, purpose)
        model = self._query_model if purpose == "query" else self._model
        vectors: list[Vector] = []
        size = max(1, self._config.batch_size)
        for start in range(0, len(inputs), size):
            vectors.extend(await self._batch(model, inputs[start : start + size]))
        if vectors and len({len(v) for v in vectors}) != 1:
            raise EmbeddingFailed("the server answered vectors of different sizes", transient=False)
        return vectors

    async def _batch(self, model: str, texts: list[str]) -> list[Vector]:
        body = orjson.dumps({"model": model, "input": texts})
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                async with self._client().post(self._endpoint, data=body) as response:
                    if response.status == 200:
                        return vectors_of(await _read_json(response), len(texts))
                    problem = f"{self._shown} answered {response.status}"
                    if response.status not in _RETRIED_STATUSES:
                        raise EmbeddingFailed(problem, transient=False)
                    retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            except (aiohttp.ClientError, TimeoutError) as exc:
                # The kind of failure, not its text: the message is a failed job's error, shown
                # to its submitter, and the error's text may quote the URL with its credentials.
                problem = f"{self._shown}: {type(exc).__name__}"
            attempt += 1
            if attempt > self._config.max_retries:
                raise EmbeddingFailed(
                    f"{problem} (gave up after {attempt} attempts)", transient=True
                )
            delay = backoff_delay(
                attempt, base=self._config.retry_base_seconds, cap=30.0, rng=self._rng
            )
            await asyncio.sleep(max(delay, min(retry_after or 0.0, 60.0)))

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def _read_json(response: aiohttp.ClientResponse) -> Any:
    try:
        return await read_json(response, MAX_RESPONSE_BYTES)
    except AnswerTooLarge:
        raise EmbeddingFailed("the embeddings answer is too large", transient=False) from None
    except AnswerNotJSON:
        raise EmbeddingFailed("the embeddings answer is not JSON", transient=True) from None


def vectors_of(payload: Any, expected: int) -> list[Vector]:
    """The answer's vectors, in the order of the inputs (``index`` says which is which): one
    per input, each a non-empty list of finite numbers that is not all zeros."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list) or len(data) != expected:
        got = len(data) if isinstance(data, list) else "none"
        raise EmbeddingFailed(f"asked for {expected} embeddings, got {got}", transient=False)
    vectors: list[Vector | None] = [None] * expected
    for item in data:
        index = item.get("index") if isinstance(item, dict) else None
        # Each input once: a repeated or unknown index would store vectors against other texts.
        if type(index) is not int or not 0 <= index < expected or vectors[index] is not None:
            raise EmbeddingFailed(
                "the embeddings answer does not index each input once", transient=False
            )
        vectors[index] = _vector(item.get("embedding"))
    return [vector for vector in vectors if vector is not None]


def _vector(embedding: Any) -> Vector:
    """``embedding`` as a unit vector: a list of numbers (not a string's digits, not bools),
    finite, not all zeros (which nothing is near)."""
    if not isinstance(embedding, list) or not embedding:
        raise EmbeddingFailed("the server answered an empty or non-finite vector", transient=False)
    if any(isinstance(x, bool) or not isinstance(x, int | float) for x in embedding):
        raise EmbeddingFailed("the server answered a vector that is not numbers", transient=False)
    values = [float(x) for x in embedding]
    if not all(math.isfinite(x) for x in values):
        raise EmbeddingFailed("the server answered an empty or non-finite vector", transient=False)
    # Scaled by its largest first: squaring 1e200 overflows, and would make it a zero vector.
    largest = max(abs(x) for x in values)
    if largest == 0:
        raise EmbeddingFailed("the server answered a zero vector", transient=False)
    return normalized([x / largest for x in values])
