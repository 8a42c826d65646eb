"""Rerankers: a query and candidate passages in, a relevance score per passage out.

The one kind is any ``/rerank`` endpoint the operator runs or subscribes to (Text Embeddings
Inference, Jina, Cohere, vLLM): a cross-encoder reads the query and each passage together,
which ranks better than comparing their embeddings, at the price of a model call per search.
Search treats it as optional: when it fails, overruns its deadline or answers nonsense, the
results keep the order they had.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class RerankFailed(Exception):
    """The reranker gave no usable answer: search keeps its own order."""


class Reranker(Protocol):
    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """A relevance score per passage, in the passages' order (higher is more relevant).
        Raises :class:`RerankFailed`."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class RerankerConfig:
    url: str  # the endpoint itself, e.g. http://localhost:8080/rerank
    model: str | None = None  # sent when set (Jina, Cohere, vLLM); TEI serves one model
    api_key: str | None = None
    timeout_seconds: float = 2.0


def build_reranker(config: RerankerConfig) -> Reranker:
    from taskcrawler.rerank.http import HttpReranker

    return HttpReranker(config)


__all__ = ["RerankFailed", "Reranker", "RerankerConfig", "build_reranker"]
