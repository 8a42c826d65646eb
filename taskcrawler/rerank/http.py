"""Any ``/rerank`` endpoint: Text Embeddings Inference, Jina, Cohere, vLLM.

Two request shapes cover them: with a model configured, ``{"model", "query", "documents",
"top_n"}`` (Jina, Cohere, vLLM), answered ``{"results": [{"index", "relevance_score"}, …]}``;
without one, TEI's ``{"query", "texts", "truncate": true}``, answered ``[{"index", "score"},
…]``. Either answer is read. One request per search, under a deadline and without retries (a
search is waited for; the fused order is a good answer too); an answer that is too big, not
JSON, or does not score every passage exactly once with a finite number is refused.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

import aiohttp
import orjson

from taskcrawler.common.http_json import AnswerNotJSON, AnswerTooLarge, read_json
from taskcrawler.rerank.base import RerankerConfig, RerankFailed

#: An answer bigger than this is refused: 100 scores with their passages echoed fit easily.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024


class HttpReranker:
    def __init__(self, config: RerankerConfig) -> None:
        self._config = config
        self._session: aiohttp.ClientSession | None = None

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

    def _body(self, query: str, passages: Sequence[str]) -> bytes:
        if self._config.model:
            return orjson.dumps(
                {
                    "model": self._config.model,
                    "query": query,
                    "documents": list(passages),
                    "top_n": len(passages),
                }
            )
        return orjson.dumps({"query": query, "texts": list(passages), "truncate": True})

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        url = self._config.url
        try:
            async with asyncio.timeout(self._config.timeout_seconds):
                async with self._client().post(url, data=self._body(query, passages)) as answer:
                    if answer.status != 200:
                        raise RerankFailed(f"{url} answered {answer.status}")
                    payload = await read_json(answer, MAX_RESPONSE_BYTES)
        except AnswerTooLarge:
            raise RerankFailed("the rerank answer is too large") from None
        except AnswerNotJSON:
            raise RerankFailed("the rerank answer is not JSON") from None
        except TimeoutError:
            raise RerankFailed(f"{url} did not answer within its deadline") from None
        except aiohttp.ClientError as exc:
            raise RerankFailed(f"{url}: {type(exc).__name__}") from None
        return scores_of(payload, len(passages))

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def scores_of(payload: Any, count: int) -> list[float]:
    """The score of each of ``count`` passages from a rerank answer of either shape: every
    passage scored exactly once, by its index, with a finite number."""
    items = payload.get("results") if isinstance(payload, dict) else payload
    if not isinstance(items, list) or len(items) != count:
        raise RerankFailed(f"the rerank answer does not score the {count} passages")
    scores: list[float | None] = [None] * count
    for item in items:
        if not isinstance(item, dict):
            raise RerankFailed("a rerank result is not an object")
        index, score = item.get("index"), item.get("relevance_score", item.get("score"))
        if type(index) is not int or not 0 <= index < count or scores[index] is not None:
            raise RerankFailed("the rerank answer names a passage it was not given, or twice")
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise RerankFailed("a rerank score is not a number")
        if not math.isfinite(score):
            raise RerankFailed("a rerank score is not a finite number")
        scores[index] = float(score)
    return [score for score in scores if score is not None]
