"""What a reranker is and takes: the port its adapter implements. A module of its own, so
that the adapter and the package that picks it (``build_reranker``) need not import each other."""

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
